import { describe, expect, it } from 'vitest';
import { buildRegistry, renderMetrics } from '../../src/metrics/guard-metrics.js';
import { BOARDS } from '../health/boards.js';
import { metric, PROMTOOL, promtoolCheckMetrics } from '../daemon/support.js';
import { families, snapshot } from './snapshot.js';

describe('picoclaw-guard metrics', () => {
  it.each(BOARDS)('%s: promtool check metrics passes on the real output', async (name) => {
    const text = renderMetrics(await snapshot(name));
    expect(text.endsWith('\n')).toBe(true);
    expect(text).not.toMatch(/\r/);
    if (PROMTOOL) expect(promtoolCheckMetrics(text)).toEqual({ code: 0, output: '' });
  });

  it('uses base units and the picoclaw_guard_ prefix; counters end in _total, nothing else does', async () => {
    const reg = buildRegistry(await snapshot('pi5'));
    const text = reg.render();
    for (const f of families(text)) {
      expect(f).toMatch(/^picoclaw_guard_[a-z0-9_]+$/);
      const type = new RegExp(`^# TYPE ${f} (\\w+)$`, 'm').exec(text)![1];
      expect(f.endsWith('_total')).toBe(type === 'counter');
      expect(f).not.toMatch(/_(milli|kilo|mega)|_ms$|_kb$|_mb$|_minutes$|_fahrenheit$/);
    }
    expect(text).toContain('# HELP picoclaw_guard_cpu_frequency_hertz ');
    // Hz from kHz: 2.4 GHz on the Pi 5.
    expect(metric(text, 'picoclaw_guard_cpu_frequency_max_hertz', { cpu: '0' })).toBe(2_400_000_000);
  });

  it('under-voltage on a Pi 4: now, since boot and the latch', async () => {
    const text = renderMetrics(await snapshot('pi4-undervoltage'));
    expect(metric(text, 'picoclaw_guard_under_voltage', { period: 'now' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_under_voltage', { period: 'since_boot' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_under_voltage', { period: 'latched' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_throttle_word')).toBe(0x50005);
    expect(metric(text, 'picoclaw_guard_health_status', { status: 'CRITICAL' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_health_problem', { code: 'under_voltage_now', level: 'critical' })).toBe(1);
  });

  it(
    'missing hardware is no data, not 0: no throttle word on RISC-V or x86,' +
      ' no cpufreq on a Milk-V Duo, no "clear" under-voltage on a Zero',
    async () => {
      for (const name of ['visionfive2', 'x86-vm'] as const) {
        const f = families(renderMetrics(await snapshot(name)));
        expect(f.has('picoclaw_guard_throttle_flag')).toBe(false);
        expect(f.has('picoclaw_guard_under_voltage')).toBe(false);
      }
      const duo = families(renderMetrics(await snapshot('milkv-duo')));
      expect(duo.has('picoclaw_guard_cpu_frequency_hertz')).toBe(false);
      const zero = renderMetrics(await snapshot('zero2w'));
      expect(metric(zero, 'picoclaw_guard_under_voltage_detectable')).toBe(0);
      expect(metric(zero, 'picoclaw_guard_under_voltage', { period: 'now' })).toBeNull();
      expect(metric(zero, 'picoclaw_guard_throttle_flag', { condition: 'under_voltage', period: 'now' })).toBeNull();
    },
  );

  it('the gateway, sessions per agent, seahorse.db, pruning and the bootstrap gap', async () => {
    const s = await snapshot('pi4');
    const text = renderMetrics(s);
    expect(metric(text, 'picoclaw_guard_gateway_ready')).toBe(1);
    expect(metric(text, 'picoclaw_guard_gateway_up')).toBe(1);
    expect(metric(text, 'picoclaw_guard_gateway_state', { state: 'ready' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_gateway_probe_duration_seconds', { endpoint: 'ready' })).toBeGreaterThanOrEqual(
      0,
    );
    const pc = s.health!.picoclaw;
    if (!pc.available) throw new Error('no picoclaw');
    for (const st of pc.sessions.stores)
      expect(metric(text, 'picoclaw_guard_sessions', { agent: st.agents.join(',') })).toBe(st.sessions);
    expect(metric(text, 'picoclaw_guard_seahorse_db_bytes')).toBe(pc.seahorse.db_bytes);
    expect(metric(text, 'picoclaw_guard_seahorse_limit_bytes')).toBe(134217728);
    expect(metric(text, 'picoclaw_guard_prune_passes_total', { outcome: 'ok' })).toBe(3);
    expect(metric(text, 'picoclaw_guard_prune_passes_total', { outcome: 'failed' })).toBe(0);
    expect(metric(text, 'picoclaw_guard_prune_freed_bytes_total')).toBe(345678);
    expect(metric(text, 'picoclaw_guard_prune_last_outcome', { outcome: 'ok' })).toBe(1);
    expect(metric(text, 'picoclaw_guard_bootstrap_gap_seconds')).toBe(s.startup!.summary.latest_gap!.seconds);
    expect(metric(text, 'picoclaw_guard_startup_restarts_logged')).toBe(4);
  });

  it(
    "the last prune's undated sessions, the dated ones they push out, an unmet " + 'size limit and an owed VACUUM',
    async () => {
      const s = await snapshot('pi4');
      const pc = s.health!.picoclaw;
      if (!pc.available) throw new Error('no picoclaw');
      const base = {
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
      pc.last_prune = {
        ...base,
        undated_sessions: 105,
        displaced_by_undated: 9,
        size_limit_unmet: 'the limit cannot be met: x (newest)',
        vacuum_owed_since: '2026-11-30T11:00:00Z',
      };
      const text = renderMetrics(s);
      expect(metric(text, 'picoclaw_guard_prune_undated_sessions')).toBe(105);
      expect(metric(text, 'picoclaw_guard_prune_displaced_by_undated_sessions')).toBe(9);
      expect(metric(text, 'picoclaw_guard_seahorse_limit_unmet')).toBe(1);
      expect(metric(text, 'picoclaw_guard_vacuum_owed')).toBe(1);
      if (PROMTOOL) expect(promtoolCheckMetrics(text)).toEqual({ code: 0, output: '' });
    },
  );
});
