import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS, type HealthThresholds } from '../../src/health/config.js';
import type { PicoClawReading } from '../../src/health/picoclaw.js';
import type { FilesystemReading } from '../../src/health/resources.js';
import { rollup, type RollupInput } from '../../src/health/rollup.js';
import type { ThrottleReading } from '../../src/health/throttle.js';
import { noData } from '../../src/health/types.js';

const NONE = { under_voltage: false, arm_freq_capped: false, throttled: false, soft_temp_limit: false };
const GiB = 1024 ** 3;

function throttle(
  over: Partial<ThrottleReading> = {},
  uv: Partial<ThrottleReading['under_voltage']> = {},
): RollupInput['throttle'] {
  return {
    available: true,
    source: 'vcgencmd',
    get_throttled: '0x0',
    now: { ...NONE },
    since_boot: { ...NONE },
    vcgencmd: { state: 'ok', error: null },
    pi5_power: null,
    ...over,
    under_voltage: {
      detectable: true,
      not_detectable_reason: null,
      now: false,
      since_boot: false,
      hwmon_alarm: false,
      latch: { seen: false, first_seen_at: null, this_boot: null, boot_seen_at: null, written: false, error: null },
      ...uv,
    },
  };
}

function fs(over: Partial<FilesystemReading> = {}): RollupInput['filesystem'] {
  return {
    available: true,
    path: '/h',
    mount_point: '/',
    fs_type: 'ext4',
    read_only: false,
    free_bytes: 10 * GiB,
    size_bytes: 30 * GiB,
    free_inodes: 900,
    total_inodes: 1000,
    ...over,
  };
}

function pc(state: PicoClawReading['gateway']['state'], dbBytes = 0): RollupInput['picoclaw'] {
  return {
    available: true,
    home: '/h',
    context_manager: 'seahorse',
    gateway: {
      state,
      reason: 'r',
      pid_file: 'present',
      pid: 1,
      version: null,
      host: '127.0.0.1',
      port: 1,
      pid_file_written_at: null,
      alive: true,
      ready: null,
      health: null,
      health_pid_matches: null,
    },
    sessions: { count: 0, jsonl_bytes: 0, stores: [] },
    seahorse: { path: '/h/s.db', present: true, db_bytes: dbBytes, wal_bytes: 0, total_bytes: dbBytes },
    last_prune: null,
    last_bootstrap_gap_seconds: null,
  };
}

function input(over: Partial<RollupInput> = {}): RollupInput {
  return {
    temperature: { available: true, cpu_celsius: 50, cpu_source: 'x', zones: [], hwmon: [] },
    throttle: throttle(),
    filesystem: fs(),
    picoclaw: pc('ready'),
    picoclawRequested: true,
    ...over,
  };
}

function run(over: Partial<RollupInput>, t: Partial<HealthThresholds> = {}) {
  return rollup(input(over), { ...DEFAULT_THRESHOLDS, ...t });
}

const temp = (c: number): RollupInput['temperature'] => ({
  available: true,
  cpu_celsius: c,
  cpu_source: 'x',
  zones: [],
  hwmon: [],
});

describe('roll-up', () => {
  it('all fine: OK, no problems', () => {
    expect(run({})).toEqual({ status: 'OK', problems: [] });
  });

  it.each([
    [74.9, 'OK'],
    [75, 'WARN'],
    [79.9, 'WARN'],
    [80, 'CRITICAL'],
  ])('CPU %d °C → %s', (c, status) => {
    expect(run({ temperature: temp(c) }).status).toBe(status);
  });

  it('thresholds are configurable', () => {
    expect(run({ temperature: temp(60) }, { temp_warn_celsius: 55 }).problems).toEqual([
      { level: 'warn', code: 'temperature', message: 'CPU at 60.0 °C (warn from 55 °C)' },
    ]);
  });

  it('under-voltage now is CRITICAL, since boot WARN, each configurable', () => {
    expect(
      run({ throttle: throttle({}, { now: true, since_boot: true }) }).problems.map((p) => [p.code, p.level]),
    ).toEqual([['under_voltage_now', 'critical']]);
    expect(run({ throttle: throttle({}, { since_boot: true }) }).problems.map((p) => [p.code, p.level])).toEqual([
      ['under_voltage_since_boot', 'warn'],
    ]);
    expect(run({ throttle: throttle({}, { since_boot: true }) }, { under_voltage_since_boot: 'ok' }).status).toBe('OK');
  });

  it('a latch from an earlier boot is reported only when configured', () => {
    const latch = { seen: true, first_seen_at: 'a', this_boot: false, boot_seen_at: 'b', written: false, error: null };
    expect(run({ throttle: throttle({}, { latch }) }).status).toBe('OK');
    expect(run({ throttle: throttle({}, { latch }) }, { under_voltage_previous_boot: 'warn' }).problems[0]!.code).toBe(
      'under_voltage_previous_boot',
    );
  });

  it('"not detectable" (null) is never turned into a problem or an OK claim', () => {
    expect(run({ throttle: throttle({}, { detectable: false, now: null, since_boot: null }) }).status).toBe('OK');
    expect(run({ throttle: noData('not detectable') }).status).toBe('OK');
  });

  it('throttled / capped now WARN; since boot only when configured', () => {
    expect(
      run({
        throttle: throttle({ now: { ...NONE, arm_freq_capped: true }, since_boot: { ...NONE, arm_freq_capped: true } }),
      }).problems[0],
    ).toMatchObject({ code: 'throttled_now', level: 'warn', message: expect.stringContaining('ARM frequency capped') });
    const past = throttle({ since_boot: { ...NONE, throttled: true } });
    expect(run({ throttle: past }).status).toBe('OK');
    expect(run({ throttle: past }, { throttled_since_boot: 'warn' }).problems[0]!.code).toBe('throttled_since_boot');
  });

  it('vcgencmd that exists but fails is a WARN (fix the video group)', () => {
    expect(
      run({ throttle: throttle({ source: 'rpi_volt', vcgencmd: { state: 'no_access', error: 'x' } }) }).problems[0]!
        .code,
    ).toBe('vcgencmd_failed');
    expect(
      run({ throttle: throttle({ source: 'rpi_volt', vcgencmd: { state: 'not_found', error: null } }) }).status,
    ).toBe('OK');
  });

  it('Pi 5 low-power reset on the previous boot: WARN', () => {
    expect(
      run({ throttle: throttle({ pi5_power: { max_current_amperes: 3, low_power_reset: true } }) }).problems[0]!.code,
    ).toBe('low_power_reset');
  });

  it('disk and inodes', () => {
    expect(run({ filesystem: fs({ free_bytes: 0.5 * GiB }) }).problems[0]).toMatchObject({
      level: 'warn',
      code: 'disk_free',
    });
    expect(run({ filesystem: fs({ free_bytes: 0.1 * GiB }) }).problems[0]).toMatchObject({
      level: 'critical',
      code: 'disk_free',
    });
    expect(run({ filesystem: fs({ free_inodes: 40 }) }).problems[0]).toMatchObject({
      level: 'warn',
      code: 'inodes_free',
    });
    expect(run({ filesystem: fs({ free_inodes: 5 }) }).problems[0]).toMatchObject({
      level: 'critical',
      code: 'inodes_free',
    });
    expect(run({ filesystem: fs({ read_only: true }) }).problems[0]).toMatchObject({
      level: 'critical',
      code: 'filesystem_read_only',
    });
  });

  it('gateway: down and hung CRITICAL, starting WARN, all silenced by gateway_not_ready "ok"', () => {
    expect(run({ picoclaw: pc('down') }).problems[0]).toMatchObject({ level: 'critical', code: 'gateway_down' });
    expect(run({ picoclaw: pc('hung') }).problems[0]).toMatchObject({ level: 'critical', code: 'gateway_hung' });
    expect(run({ picoclaw: pc('starting') }).problems[0]).toMatchObject({ level: 'warn', code: 'gateway_starting' });
    expect(run({ picoclaw: pc('down') }, { gateway_not_ready: 'warn' }).status).toBe('WARN');
    expect(run({ picoclaw: pc('starting') }, { gateway_not_ready: 'ok' }).status).toBe('OK');
  });

  it('a missing home is a problem when PicoClaw was looked for, and nothing when it was not', () => {
    expect(run({ picoclaw: noData('no PicoClaw home at /x') }).problems[0]).toMatchObject({
      code: 'picoclaw_missing',
      level: 'critical',
    });
    expect(run({ picoclaw: noData('not checked'), picoclawRequested: false }).status).toBe('OK');
  });

  it('seahorse.db near max_db_size_mb', () => {
    const MiB = 1024 * 1024;
    expect(run({ picoclaw: pc('ready', 89 * MiB) }, { max_db_size_mb: 100 }).status).toBe('OK');
    expect(run({ picoclaw: pc('ready', 90 * MiB) }, { max_db_size_mb: 100 }).problems[0]).toMatchObject({
      code: 'seahorse_db_size',
      level: 'warn',
    });
    expect(run({ picoclaw: pc('ready', 500 * MiB) }, { max_db_size_mb: null }).status).toBe('OK');
    expect(run({ picoclaw: pc('ready', 500 * MiB) }, { max_db_size_mb: 0 }).status).toBe('OK');
  });

  it('the status is the worst level', () => {
    const r = run({ temperature: temp(76), throttle: throttle({}, { now: true }) });
    expect(r.status).toBe('CRITICAL');
    expect(r.problems.map((p) => p.level).sort()).toEqual(['critical', 'warn']);
  });

  it(
    "the last prune's silent pressures: undated sessions pushing dated ones " + 'out, a size limit that cannot be met',
    () => {
      const base = pc('ready');
      const lastPrune = {
        at: '2026-11-30T12:00:00Z',
        outcome: 'ok',
        deleted_sessions: 9,
        deleted_orphans: 0,
        freed_bytes: 1,
        sessions_before: 115,
        sessions_after: 106,
        duration_seconds: 1,
        reason: null,
      };
      const quiet = run({
        picoclaw: {
          ...base,
          last_prune: { ...lastPrune, undated_sessions: 105, displaced_by_undated: 0, size_limit_unmet: null },
        } as RollupInput['picoclaw'],
      });
      expect(quiet.problems).toEqual([]);
      const r = run({
        picoclaw: {
          ...base,
          last_prune: {
            ...lastPrune,
            undated_sessions: 105,
            displaced_by_undated: 9,
            size_limit_unmet: 'the limit cannot be met: sk_v1_x (newest) holds about 800 MiB',
          },
        } as RollupInput['picoclaw'],
      });
      expect(r.status).toBe('WARN');
      expect(r.problems.map((p) => p.code).sort()).toEqual(['seahorse_limit_unmet', 'undated_sessions_displace']);
      expect(r.problems.find((p) => p.code === 'undated_sessions_displace')!.message).toMatch(
        /105 undated session\(s\).*9 dated session\(s\)/,
      );
      expect(r.problems.find((p) => p.code === 'seahorse_limit_unmet')!.message).toMatch(/sk_v1_x \(newest\)/);
    },
  );
});
