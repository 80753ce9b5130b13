import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS } from '../../src/health/config.js';
import { rollup } from '../../src/health/rollup.js';
import {
  diskOf,
  lifeUsedPercent,
  parseDiskstats,
  parseHexByte,
  parseLifeTime,
  readEmmcWear,
  readStorage,
  type Storage,
} from '../../src/health/storage.js';
import { noData } from '../../src/health/types.js';
import { tempDir } from '../support/tmp.js';

const FIX = join(import.meta.dirname, '../fixtures/emmc');
const read = (variant: string, extra: Partial<Parameters<typeof readStorage>[0]> = {}) =>
  readStorage({
    path: '/home/pi/.picoclaw',
    sysRoot: join(FIX, variant, 'sys'),
    procRoot: join(FIX, variant, 'proc'),
    uptimeSeconds: 172800,
    ...extra,
  });

function problemsOf(storage: Storage, t = DEFAULT_THRESHOLDS) {
  return rollup(
    {
      temperature: noData('x'),
      throttle: noData('x'),
      filesystem: noData('x'),
      picoclaw: noData('x'),
      picoclawRequested: false,
      storage,
    },
    t,
  ).problems;
}

describe('eMMC wear: every format the kernels print (test/fixtures/emmc)', () => {
  it('mainline: life_time "0x01 0x02", pre_eol_info "01"', () => {
    const s = read('mainline-plain-pre-eol');
    expect(s).toEqual({
      available: true,
      device: 'mmcblk0',
      partition: 'mmcblk0p2',
      card_type: 'MMC',
      emmc: {
        reported: true,
        source: 'life_time',
        life_time_est_typ_a: 1,
        life_time_est_typ_b: 2,
        life_used_percent_a: 10,
        life_used_percent_b: 20,
        life_exceeded: false,
        pre_eol_info: 1,
        pre_eol: 'normal',
      },
      written_bytes: 2_000_000 * 512,
      written_bytes_per_day: 2_000_000 * 256,
    });
    expect(problemsOf(s)).toEqual([]);
  });

  it('"0x" pre_eol_info, past the rated life and urgent: two CRITICAL problems', () => {
    const s = read('mainline-0x-worn');
    expect(s.available && s.emmc.reported && s.emmc).toMatchObject({
      life_time_est_typ_a: 10,
      life_time_est_typ_b: 11,
      life_used_percent_b: 100,
      life_exceeded: true,
      pre_eol: 'urgent',
    });
    expect(problemsOf(s).map((p) => [p.code, p.level])).toEqual([
      ['emmc_life', 'critical'],
      ['emmc_pre_eol', 'critical'],
    ]);
  });

  it('the split vendor files (life_time_est_typ_a/b, "0x%02X"): WARN at 80 % and at pre-EOL warning', () => {
    const s = read('vendor-split');
    expect(s.available && s.emmc).toMatchObject({ source: 'life_time_est_typ', life_used_percent_a: 90 });
    expect(problemsOf(s).map((p) => [p.code, p.level])).toEqual([
      ['emmc_life', 'warn'],
      ['emmc_pre_eol', 'warn'],
    ]);
    expect(problemsOf(s, { ...DEFAULT_THRESHOLDS, emmc_life_warn_percent: 0, emmc_pre_eol_warning: 'ok' })).toEqual([]);
  });

  it('an SD card and an eMMC before 5.0 report no wear: "not reported by this card", no problem', () => {
    for (const v of ['sd-card', 'emmc-before-5']) {
      const s = read(v);
      expect(s.available && s.emmc.reported === false && s.emmc.reason).toMatch(/^not reported by this card/);
      expect(s.available && s.written_bytes).toBe(1_024_000_000);
      expect(problemsOf(s)).toEqual([]);
    }
  });

  it('no mount names a block device: the st_dev lookup by major:minor finds it', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'proc'));
    writeFileSync(join(dir, 'proc', 'mounts'), '/dev/root / ext4 rw 0 0\n');
    writeFileSync(
      join(dir, 'proc', 'diskstats'),
      '   8  0 sda 1 2 3 4 5 6 4096 8 9 10 11\n   8  1 sda1 1 2 3 4 5 6 7 8 9 10 11\n',
    );
    mkdirSync(join(dir, 'sys', 'block', 'sda', 'sda1'), { recursive: true });
    const s = readStorage({
      path: '/',
      sysRoot: join(dir, 'sys'),
      procRoot: join(dir, 'proc'),
      uptimeSeconds: 60,
      deviceNumber: () => ({ major: 8, minor: 1 }),
    });
    expect(s).toMatchObject({ device: 'sda', partition: 'sda1', card_type: null, written_bytes: 4096 * 512 });
    expect(s.available && s.written_bytes_per_day).toBeNull(); // a minute of uptime does not scale to a day
    expect(s.available && s.emmc).toEqual({ reported: false, reason: 'not an MMC device' });
    // With a fixture root and no injected st_dev, the real machine's device is never looked up.
    expect(
      readStorage({ path: '/', sysRoot: join(dir, 'sys'), procRoot: join(dir, 'proc'), uptimeSeconds: 1 }),
    ).toEqual(noData('the mount /dev/root is no block device the kernel lists'));
  });
});

describe('eMMC parsing properties', () => {
  const byte = fc.integer({ min: 0, max: 255 });
  const spell = (v: number, prefix: boolean, upper: boolean, pad: boolean) => {
    const h = v.toString(16);
    const digits = pad ? h.padStart(2, '0') : h;
    return `${prefix ? '0x' : ''}${upper ? digits.toUpperCase() : digits}`;
  };

  it('a hex byte reads the same however it is spelled (0x or not, case, padding, trailing newline)', () => {
    fc.assert(
      fc.property(byte, fc.boolean(), fc.boolean(), fc.boolean(), (v, p, u, pad) => {
        expect(parseHexByte(spell(v, p, u, pad) + '\n')).toBe(v);
      }),
    );
  });

  it('life_time reads both estimates in any spelling and white space; anything else is null, never a guess', () => {
    fc.assert(
      fc.property(byte, byte, fc.boolean(), fc.constantFrom(' ', '  ', '\t'), (a, b, p, ws) => {
        expect(parseLifeTime(`${spell(a, p, false, true)}${ws}${spell(b, p, true, true)}\n`)).toEqual({ a, b });
      }),
    );
    fc.assert(
      fc.property(fc.string(), (s) => {
        const r = parseLifeTime(s);
        if (r !== null) expect(s.trim().split(/\s+/)).toHaveLength(2);
      }),
    );
    expect(parseHexByte('0x100')).toBeNull();
    expect(parseHexByte('zz')).toBeNull();
  });

  it('used percent: monotonic, 10 % a step, 100 past the rated life, null outside 1..11', () => {
    fc.assert(
      fc.property(byte, byte, (a, b) => {
        const pa = lifeUsedPercent(a);
        const pb = lifeUsedPercent(b);
        if (a >= 1 && a <= 10) expect(pa).toBe(a * 10);
        if (a === 0 || a > 11) expect(pa).toBeNull();
        if (pa !== null && pb !== null && a < b) expect(pa).toBeLessThanOrEqual(pb);
      }),
    );
  });

  it('any wear files: WARN or CRITICAL exactly as the thresholds say; a card reporting nothing is no problem', () => {
    fc.assert(
      fc.property(
        fc.option(byte, { nil: undefined }),
        fc.option(byte, { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
        fc.boolean(),
        fc.integer({ min: 0, max: 100 }),
        (a, b, pre, split, warnAt) => {
          const dir = tempDir();
          const put = (f: string, v: string) => writeFileSync(join(dir, f), v);
          if (split) {
            if (a !== undefined) put('life_time_est_typ_a', `0x${a.toString(16).toUpperCase().padStart(2, '0')}\n`);
            if (b !== undefined) put('life_time_est_typ_b', `0x${b.toString(16).toUpperCase().padStart(2, '0')}\n`);
          } else if (a !== undefined && b !== undefined) put('life_time', `0x${a.toString(16)} 0x${b.toString(16)}\n`);
          if (pre !== undefined) put('pre_eol_info', `0${pre}\n`);
          const w = readEmmcWear(dir, 'MMC');
          const t = { ...DEFAULT_THRESHOLDS, emmc_life_warn_percent: warnAt };
          const s: Storage = {
            available: true,
            device: 'mmcblk0',
            partition: null,
            card_type: 'MMC',
            emmc: w,
            written_bytes: 0,
            written_bytes_per_day: null,
          };
          const codes = problemsOf(s, t);
          if (!w.reported) {
            expect(codes).toEqual([]);
            return;
          }
          const used = Math.max(w.life_used_percent_a ?? 0, w.life_used_percent_b ?? 0);
          const life = codes.find((p) => p.code === 'emmc_life');
          if (w.life_exceeded) expect(life?.level).toBe('critical');
          else if (warnAt > 0 && used >= warnAt) expect(life?.level).toBe('warn');
          else expect(life).toBeUndefined();
          const eol = codes.find((p) => p.code === 'emmc_pre_eol');
          expect(eol?.level).toBe(pre === 3 ? 'critical' : pre === 2 ? 'warn' : undefined);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('diskstats: garbage lines are skipped, a row needs whole numbers in major, minor and field 10', () => {
    expect(parseDiskstats('x\n 1 2 a 1 2 3 4 5 6 -1\n 1 2 b 1 2 3 4 5 6 7\n')).toEqual([
      { major: 1, minor: 2, name: 'b', sectors_written: 7 },
    ]);
    expect(diskOf(join(FIX, 'sd-card', 'sys'), 'mmcblk0p1')).toBe('mmcblk0');
    expect(diskOf(join(FIX, 'sd-card', 'sys'), 'nvme0n1')).toBeNull();
  });
});

describe('storage metrics (node_exporter style: base units, _total for the counter)', () => {
  it('bytes written: a counter per device; eMMC estimates: gauges, raw value and ratio', async () => {
    const { Registry } = await import('../../src/metrics/exposition.js');
    const { boardMetrics } = await import('../../src/metrics/health-metrics.js');
    const { metric } = await import('../daemon/support.js');
    const report = (storage: Storage) =>
      ({
        temperature: noData('x'),
        throttle: noData('x'),
        cpufreq: noData('x'),
        resources: noData('x'),
        filesystem: noData('x'),
        storage,
      }) as unknown as Parameters<typeof boardMetrics>[1];
    const r = new Registry();
    boardMetrics(r, report(read('mainline-0x-worn')));
    const text = r.render();
    expect(text).toContain('# TYPE picoclaw_guard_disk_written_bytes_total counter');
    expect(metric(text, 'picoclaw_guard_disk_written_bytes_total', { device: 'mmcblk0' })).toBe(1_024_000_000);
    expect(metric(text, 'picoclaw_guard_emmc_life_time_estimate', { device: 'mmcblk0', type: 'b' })).toBe(11);
    expect(metric(text, 'picoclaw_guard_emmc_life_used_ratio', { device: 'mmcblk0', type: 'a' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_emmc_pre_eol_info', { device: 'mmcblk0' })).toBe(3);
    // An SD card: the writes, and no eMMC family at all ("no data", not 0).
    const sd = new Registry();
    boardMetrics(sd, report(read('sd-card')));
    expect(sd.render()).toContain('picoclaw_guard_disk_written_bytes_total{device="mmcblk0"} 1024000000');
    expect(sd.render()).not.toContain('emmc');
  });
});
