import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/index.js';
import type { Problem } from '../../src/health/types.js';
import { detect, OWN_RULE_CODES, type DetectMemory, type Observation, type Rules } from '../../src/notify/detect.js';
import type { ActiveCondition } from '../../src/state/notify-state.js';

const MIB = 1024 * 1024;
const RULES: Rules = {
  min_level: 'warn',
  reminder_ms: 0,
  gateway_down_ms: 5 * 60_000,
  bootstrap_budget_seconds: 30,
  disk_free_warn_bytes: 1024 * MIB,
  disk_free_critical_bytes: 200 * MIB,
};

/** Just what the detector reads of a report. */
function health(problems: Problem[], freeMb = 10_000): HealthReport {
  return {
    problems,
    board: { available: false, reason: 'x' },
    filesystem: {
      available: true,
      path: '/',
      mount_point: '/',
      fs_type: 'ext4',
      read_only: false,
      free_bytes: freeMb * MIB,
      size_bytes: 32_000 * MIB,
      free_inodes: null,
      total_inodes: null,
    },
  } as unknown as HealthReport;
}
const p = (code: string, level: 'warn' | 'critical' = 'warn'): Problem => ({ code, level, message: `${code} text` });

/** Run observations through the detector, as the notifier does, with a fake clock. */
function runAll(obs: Observation[], rules = RULES, start: Record<string, ActiveCondition> = {}) {
  let active = start;
  const mem: DetectMemory = { gatewayBadSinceMs: null };
  const sent: { at: number; event: string; code: string; level: string }[] = [];
  for (const o of obs) {
    const d = detect(active, o, rules, mem);
    for (const m of d.messages) sent.push({ at: o.nowMs, event: m.event, code: m.code, level: m.level });
    active = d.active;
  }
  return { sent, active };
}

describe('which transitions are announced', () => {
  it('a problem raised once, nothing while it lasts, cleared once', () => {
    const obs = [0, 1, 2, 3, 4].map((i) => ({
      nowMs: i * 30_000,
      health: health(i >= 1 && i <= 3 ? [p('under_voltage_now', 'critical')] : []),
    }));
    expect(runAll(obs).sent).toEqual([
      { at: 30_000, event: 'raised', code: 'under_voltage_now', level: 'critical' },
      { at: 120_000, event: 'cleared', code: 'under_voltage_now', level: 'ok' },
    ]);
  });

  it('no reading is no news: a missing health report neither raises nor clears', () => {
    const { sent } = runAll([
      { nowMs: 0, health: health([p('temperature')]) },
      { nowMs: 1, health: null },
      { nowMs: 2, health: health([p('temperature')]) },
    ]);
    expect(sent.map((s) => s.event)).toEqual(['raised']);
  });

  it('the gateway counts after gateway_down_minutes in a row (fake clock), and a recovery resets the clock', () => {
    const down = health([p('gateway_down', 'critical')]);
    const up = health([]);
    const at = (min: number, h: HealthReport) => ({ nowMs: min * 60_000, health: h });
    const { sent } = runAll([
      at(0, down),
      at(4, down),
      at(4.5, up),
      at(5, down),
      at(9.9, down),
      at(10, down),
      at(11, up),
    ]);
    expect(sent).toEqual([
      { at: 10 * 60_000, event: 'raised', code: 'gateway_down', level: 'critical' },
      { at: 11 * 60_000, event: 'cleared', code: 'gateway_down', level: 'ok' },
    ]);
  });

  it('down turning into hung is the same condition: no second message', () => {
    const { sent } = runAll(
      [
        { nowMs: 0, health: health([p('gateway_down', 'critical')]) },
        { nowMs: 1, health: health([p('gateway_hung', 'critical')]) },
      ],
      { ...RULES, gateway_down_ms: 0 },
    );
    expect(sent.map((s) => `${s.event} ${s.code}`)).toEqual(['raised gateway_down']);
  });

  it('a rise from warn to critical is a transition; a fall is remembered quietly', () => {
    const { sent } = runAll([
      { nowMs: 0, health: health([], 900) },
      { nowMs: 1, health: health([], 100) },
      { nowMs: 2, health: health([], 900) },
      { nowMs: 3, health: health([], 5000) },
    ]);
    expect(sent.map((s) => `${s.event} ${s.level}`)).toEqual(['raised warn', 'raised critical', 'cleared ok']);
  });

  it('prune: failed and stopped part-way are announced, an ok pass clears, a skipped one is no news', () => {
    const { sent } = runAll([
      { nowMs: 0, health: null, pass: { outcome: 'failed', error: 'disk I/O error' } },
      { nowMs: 1, health: null, pass: { outcome: 'failed', error: 'disk I/O error' } },
      { nowMs: 2, health: null, pass: { outcome: 'locked', error: null } },
      { nowMs: 3, health: null, pass: { outcome: 'ok', error: null } },
      { nowMs: 4, health: null, pass: { outcome: 'partial', error: null } },
    ]);
    expect(sent.map((s) => `${s.event} ${s.code}`)).toEqual([
      'raised prune_failed',
      'cleared prune_failed',
      'raised prune_partial',
    ]);
  });

  it('bootstrap: a finished gap over the budget; budget 0 never', () => {
    const obs = [
      { nowMs: 0, health: null, bootstrap: { seconds: 12, started_at: 'a' } },
      { nowMs: 1, health: null, bootstrap: { seconds: 41, started_at: 'b' } },
      { nowMs: 2, health: null },
      { nowMs: 3, health: null, bootstrap: { seconds: 44, started_at: 'c' } },
      { nowMs: 4, health: null, bootstrap: { seconds: 20, started_at: 'd' } },
    ];
    expect(runAll(obs).sent.map((s) => `${s.event} ${s.code}`)).toEqual([
      'raised bootstrap_gap',
      'cleared bootstrap_gap',
    ]);
    expect(runAll(obs, { ...RULES, bootstrap_budget_seconds: 0 }).sent).toEqual([]);
  });

  it('min_level critical leaves warnings out', () => {
    const { sent } = runAll(
      [{ nowMs: 0, health: health([p('temperature', 'warn'), p('under_voltage_now', 'critical')], 900) }],
      { ...RULES, min_level: 'critical' },
    );
    expect(sent.map((s) => s.code)).toEqual(['under_voltage_now']);
  });

  it('reminders, when set, at the interval while the condition lasts (fake clock)', () => {
    const obs = Array.from({ length: 13 }, (_, i) => ({ nowMs: i * 10 * 60_000, health: health([p('temperature')]) }));
    const { sent } = runAll(obs, { ...RULES, reminder_ms: 60 * 60_000 });
    expect(sent.map((s) => `${s.event}@${s.at / 60_000}`)).toEqual(['raised@0', 'reminder@60', 'reminder@120']);
  });

  it('the remembered state from before a restart: nothing is announced again', () => {
    const first = runAll([{ nowMs: 0, health: health([p('under_voltage_now', 'critical')], 100) }]);
    expect(first.sent).toHaveLength(2);
    const again = runAll(
      [{ nowMs: 60_000, health: health([p('under_voltage_now', 'critical')], 100) }],
      RULES,
      first.active,
    );
    expect(again.sent).toEqual([]);
  });
});

describe('transition invariants, over random histories', () => {
  const codes = ['temperature', 'under_voltage_now', 'throttled_now', 'gateway_down', 'emmc_life'];
  const step = fc.record({
    dtMs: fc.integer({ min: 0, max: 20 * 60_000 }),
    seen: fc.boolean(),
    problems: fc.subarray(codes),
    critical: fc.subarray(codes),
    freeMb: fc.constantFrom(100, 900, 5000),
  });

  it('per condition: raised/cleared alternate (a rise may repeat raised); active matches the last message', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.boolean(), (steps, reminders) => {
        let t = 0;
        const obs: Observation[] = steps.map((s) => {
          t += s.dtMs;
          const probs = s.problems.map((c) => p(c, s.critical.includes(c) ? 'critical' : 'warn'));
          return { nowMs: t, health: s.seen ? health(probs, s.freeMb) : null };
        });
        const rules = { ...RULES, reminder_ms: reminders ? 30 * 60_000 : 0 };
        const { sent, active } = runAll(obs, rules);
        const byCode = new Map<string, string[]>();
        for (const m of sent) byCode.set(m.code, [...(byCode.get(m.code) ?? []), m.event]);
        for (const [code, events] of byCode) {
          let on = false;
          for (const e of events) {
            if (e === 'cleared') expect(on, `${code}: cleared while not raised`).toBe(true);
            if (e === 'reminder') expect(on, `${code}: reminder while not raised`).toBe(true);
            on = e !== 'cleared';
          }
          const key = code === 'disk_free' ? 'disk' : OWN_RULE_CODES.has(code) ? 'gateway' : `health:${code}`;
          expect(key in active, `${code} active`).toBe(on);
        }
        // No reminders configured: a condition that stays at its level is announced exactly once.
        if (!reminders) expect(sent.filter((m) => m.event === 'reminder')).toEqual([]);
        // The same observation twice in a row never sends anything the second time (without reminders).
        if (!reminders && obs.length > 0) {
          const last = obs[obs.length - 1]!;
          const mem: DetectMemory = { gatewayBadSinceMs: 0 };
          const d = detect(active, last, { ...rules, gateway_down_ms: 0 }, mem);
          const d2 = detect(d.active, last, { ...rules, gateway_down_ms: 0 }, mem);
          expect(d2.messages).toEqual([]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
