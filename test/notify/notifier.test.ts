import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/index.js';
import { DEFAULT_NOTIFY, targetKey, type NotifyConfig, type NotifyTarget } from '../../src/notify/config.js';
import type { Answer } from '../../src/notify/deliver.js';
import type { Rules } from '../../src/notify/detect.js';
import type { NotifyMessage } from '../../src/notify/message.js';
import { Notifier, type NotifyLog } from '../../src/notify/notifier.js';
import { NOTIFY_STATE_FILE } from '../../src/state/notify-state.js';
import { tempDir } from '../support/tmp.js';

const RULES: Rules = {
  min_level: 'warn',
  reminder_ms: 0,
  gateway_down_ms: 0,
  bootstrap_budget_seconds: 30,
  disk_free_warn_bytes: 0,
  disk_free_critical_bytes: 0,
};
const A: NotifyTarget = { type: 'webhook', url: 'http://127.0.0.1:1/hook?token=s3cr3t-token' };
const B: NotifyTarget = { type: 'ntfy', url: 'http://127.0.0.1:2/topic-secret' };

function health(codes: string[]): HealthReport {
  return {
    problems: codes.map((code) => ({ code, level: 'warn', message: `${code} text` })),
    board: { available: false, reason: 'x' },
    filesystem: { available: false, reason: 'x' },
  } as unknown as HealthReport;
}

/** A fake clock and timer queue: nothing waits for wall-clock time. */
class FakeTime {
  now = 1_700_000_000_000;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private id = 0;
  setTimer = (fn: () => void, ms: number) => {
    const t = { at: this.now + ms, fn, id: ++this.id };
    this.timers.push(t);
    return t;
  };
  clearTimer = (t: unknown) => {
    this.timers = this.timers.filter((x) => x !== t);
  };
  get next(): number | null {
    return this.timers.length ? Math.min(...this.timers.map((t) => t.at)) : null;
  }
  /** Run every timer due by now + ms, in order, letting the deliveries they start finish. */
  async advance(ms: number, n: Notifier): Promise<void> {
    const end = this.now + ms;
    await n.idle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.now = due.at;
      due.fn();
      await n.idle();
    }
    this.now = end;
  }
}

interface Call {
  at: number;
  target: string;
  message: NotifyMessage;
}

function setup(o: {
  config?: Partial<NotifyConfig>;
  stateDir?: string | null;
  answer?: (t: NotifyTarget, callNo: number) => Partial<Answer>;
  time?: FakeTime;
}) {
  const time = o.time ?? new FakeTime();
  const calls: Call[] = [];
  const logs: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const log: NotifyLog = {
    info: (obj, msg) => logs.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
    warn: (obj, msg) => logs.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    error: (obj, msg) => logs.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
  };
  const config: NotifyConfig = { ...DEFAULT_NOTIFY, targets: [A], retry_seconds: 10, ...o.config };
  const n = new Notifier({
    config,
    rules: RULES,
    stateDir: o.stateDir === undefined ? tempDir() : o.stateDir,
    log,
    clock: () => time.now,
    setTimer: time.setTimer,
    clearTimer: time.clearTimer,
    deliver: (t, message) => {
      calls.push({ at: time.now, target: targetKey(t), message });
      const a = o.answer?.(t, calls.length) ?? {};
      return Promise.resolve({ ok: true, retry: false, answer: 'HTTP 200', status: 200, duration_seconds: 0, ...a });
    },
  });
  return { n, time, calls, logs };
}

describe('the notifier', () => {
  it('observe returns before any delivery finishes (a receiver that never answers blocks nothing)', async () => {
    let started = 0;
    const time = new FakeTime();
    const n = new Notifier({
      config: { ...DEFAULT_NOTIFY, targets: [A] },
      rules: RULES,
      stateDir: null,
      log: { info() {}, warn() {}, error() {} },
      clock: () => time.now,
      setTimer: time.setTimer,
      clearTimer: time.clearTimer,
      deliver: () => {
        started++;
        return new Promise<Answer>(() => undefined); // never settles
      },
    });
    const t0 = performance.now();
    n.observe({ health: health(['temperature']) });
    n.observe({ health: health(['temperature', 'throttled_now']) });
    expect(performance.now() - t0).toBeLessThan(200);
    expect(started).toBe(1); // one at a time: the second waits behind the hung one
    expect(n.waiting).toBe(2);
  });

  it('retries with doubling backoff, then gives up and says so; the answer is logged without the URL', async () => {
    const { n, time, calls, logs } = setup({
      config: { retries: 3 },
      answer: () => ({ ok: false, retry: true, answer: 'HTTP 500 Internal Server Error', status: 500 }),
    });
    const t0 = time.now;
    n.observe({ health: health(['temperature']) });
    await time.advance(3600_000, n);
    expect(calls.map((c) => (c.at - t0) / 1000)).toEqual([0, 10, 30, 70]);
    expect(logs.filter((l) => l.msg === 'notification not delivered')).toHaveLength(4);
    expect(logs.filter((l) => l.msg === 'notification given up')).toHaveLength(1);
    expect(JSON.stringify(logs)).not.toContain('s3cr3t');
    expect(JSON.stringify(logs)).not.toContain('/hook');
    expect(n.waiting).toBe(0);
  });

  it('a 4xx answer is not retried; a target that accepted is not sent the message again', async () => {
    const { n, time, calls } = setup({
      config: { targets: [A, B] },
      answer: (t, i) => (t === B && i <= 2 ? { ok: false, retry: true, answer: 'HTTP 503' } : {}),
    });
    n.observe({ health: health(['temperature']) });
    await time.advance(3600_000, n);
    expect(calls.filter((c) => c.target === targetKey(A))).toHaveLength(1);
    expect(calls.filter((c) => c.target === targetKey(B)).length).toBeGreaterThanOrEqual(2);
    const four = setup({ answer: () => ({ ok: false, retry: false, answer: 'HTTP 401', status: 401 }) });
    four.n.observe({ health: health(['temperature']) });
    await four.time.advance(3600_000, four.n);
    expect(four.calls).toHaveLength(1);
  });

  it('rate limit: a burst of transitions is spread out, never sent at once, and nothing is lost', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 15 }), fc.integer({ min: 1, max: 120 }), async (k, perHour) => {
        const { n, time, calls } = setup({ config: { max_per_hour: perHour } });
        const t0 = time.now;
        n.observe({ health: health(Array.from({ length: k }, (_, i) => `code_${i}`)) });
        await time.advance(48 * 3600_000, n);
        expect(calls).toHaveLength(k);
        const at = calls.map((c) => c.at - t0);
        // At most 3 at once, then no more than the rate allows over any window: a token bucket of 3.
        expect(at.filter((x) => x === 0).length).toBe(Math.min(3, k));
        const gap = 3600_000 / perHour;
        for (let i = 0; i < at.length; i++)
          for (let j = i; j < at.length; j++) expect(j - i + 1).toBeLessThanOrEqual(3 + (at[j]! - at[i]!) / gap + 1e-6);
      }),
      { numRuns: 40 },
    );
  });

  it('a restart while a problem lasts: the same transition is not sent again; the clearing is', async () => {
    const stateDir = tempDir();
    const time = new FakeTime();
    const first = setup({ stateDir, time });
    first.n.observe({ health: health(['under_voltage_now']) });
    await time.advance(1000, first.n);
    await first.n.stop();
    expect(first.calls).toHaveLength(1);
    expect(existsSync(join(stateDir, NOTIFY_STATE_FILE))).toBe(true);

    const second = setup({ stateDir, time });
    second.n.observe({ health: health(['under_voltage_now']) });
    await time.advance(1000, second.n);
    expect(second.calls).toEqual([]);
    second.n.observe({ health: health([]) });
    await time.advance(1000, second.n);
    expect(second.calls.map((c) => c.message.event)).toEqual(['cleared']);
  });

  it('killed before the delivery: the next start delivers it from the outbox, once', async () => {
    const stateDir = tempDir();
    const time = new FakeTime();
    const first = setup({ stateDir, time, config: { max_per_hour: 1 } });
    first.n.observe({ health: health(['a', 'b', 'c', 'd', 'e']) });
    // 3 go at once (the bucket), 2 wait for tokens; the process dies now (stop: nothing more is written).
    await first.n.idle();
    await first.n.stop();
    const saved = JSON.parse(readFileSync(join(stateDir, NOTIFY_STATE_FILE), 'utf8')) as { outbox: unknown[] };
    expect(saved.outbox).toHaveLength(2);
    expect(JSON.stringify(saved)).not.toContain('s3cr3t');

    const second = setup({ stateDir, time });
    await time.advance(10, second.n);
    expect(second.calls.map((c) => c.message.code).sort()).toEqual(['d', 'e']);
    const third = setup({ stateDir, time });
    await time.advance(10, third.n);
    expect(third.calls).toEqual([]);
  });

  it('no target: nothing is decided, nothing is written', () => {
    const stateDir = tempDir();
    const { n, calls } = setup({ stateDir, config: { targets: [] } });
    n.observe({ health: health(['temperature']) });
    expect(calls).toEqual([]);
    expect(existsSync(join(stateDir, NOTIFY_STATE_FILE))).toBe(false);
  });
});
