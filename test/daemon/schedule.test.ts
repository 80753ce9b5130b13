import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/daemon/log.js';
import type { PassOutput } from '../../src/daemon/prune-child.js';
import type { PassSummary } from '../../src/daemon/pass-summary.js';
import { catchUpDue, parseSchedule, scheduleOf, type PassSchedule } from '../../src/daemon/schedule.js';
import { Scheduler, type Runner } from '../../src/daemon/scheduler.js';
import type { DaemonSettings } from '../../src/daemon/settings.js';
import { GuardError } from '../../src/errors.js';
import { resolvePolicy } from '../../src/prune/policy.js';
import { writeMarker } from '../../src/state/marker.js';
import { tempDir } from '../support/tmp.js';

/**
 * Cron schedules (prune.schedule, croner): the expression's errors, the slots across daylight
 * saving time in named time zones, and the daemon's scheduler on a fake clock with a fake pass
 * runner (it deletes nothing: no pass child is forked): overruns, suspends and restarts.
 */
const HOME = '/nonexistent/picoclaw-home';
const tz = (pattern: string, timezone: string | null): PassSchedule =>
  parseSchedule(
    { value: pattern, source: 'guard-config', from: '/etc/g.json' },
    { value: timezone, source: timezone ? 'guard-config' : 'default', from: timezone ? '/etc/g.json' : null },
  );

/** Local wall time of an instant in a time zone: "2026-03-29 03:00". */
function local(ms: number, zone: string): string {
  const f = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(ms));
  const g = (t: string) => f.find((p) => p.type === t)!.value;
  return `${g('year')}-${g('month')}-${g('day')} ${g('hour')}:${g('minute')}`;
}

describe('prune.schedule: errors name the key, where it came from and the expression', () => {
  const resolve = (prune: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
    resolvePolicy({ env, guardConfig: { path: '/etc/picoclaw-guard/config.json', values: prune } });
  const err = (f: () => unknown): GuardError => {
    try {
      f();
    } catch (e) {
      if (e instanceof GuardError) return e;
      throw e;
    }
    throw new Error('no error');
  };

  it('a bad expression, a bad time zone, and both schedule and check_interval_minutes set', () => {
    const e1 = err(() => resolve({ schedule: '61 3 * * *' }));
    expect(e1.message).toBe(
      '/etc/picoclaw-guard/config.json (prune): schedule "61 3 * * *" is not a cron expression (Invalid value for ' +
        'minute: 61): five fields, minute hour day-of-month month day-of-week, e.g. "30 3 * * *" (03:30 every day) ' +
        'or "0 */6 * * 1-5" (every 6 hours on weekdays), or @daily',
    );
    expect(e1.exitCode).toBe(2);
    const e2 = err(() => resolve({}, { PICOCLAW_SESSION_PRUNE_SCHEDULE: '0 3 * * 9' }));
    expect(e2.message).toMatch(
      /^environment PICOCLAW_SESSION_PRUNE_SCHEDULE: schedule "0 3 \* \* 9" is not a cron expression \(Invalid value for dayOfWeek: 9\)/,
    );
    // Three fields are not quoted either: too far from a cron expression to be sure it is not a secret.
    expect(err(() => resolve({ schedule: '* * *' })).message).toMatch(
      /: schedule is not a cron expression \(not quoted/,
    );
    // A value that does not look like a cron expression (a secret in the wrong key) is not quoted.
    const e3 = err(() => resolve({ schedule: 'sk-live-0123456789abcdef' }));
    expect(e3.message).toMatch(/: schedule is not a cron expression \(not quoted: it does not look like one\)/);
    expect(e3.message).not.toContain('0123456789');
    const e4 = err(() => resolve({ schedule: '30 3 * * *', schedule_timezone: 'Mars/Olympus' }));
    expect(e4.message).toMatch(
      /^\/etc\/picoclaw-guard\/config.json \(prune\): schedule_timezone "Mars\/Olympus" is not a time zone: give an IANA name/,
    );
    const e5 = err(() => scheduleOf(resolve({ schedule: '30 3 * * *', check_interval_minutes: 30 })));
    expect(e5.message).toBe(
      '/etc/picoclaw-guard/config.json (prune): schedule "30 3 * * *" and /etc/picoclaw-guard/config.json (prune): ' +
        'check_interval_minutes 30 are both set: passes run either on the schedule or every check_interval_minutes',
    );
    expect(e5.exitCode).toBe(2);
    // PicoClaw's own key in its config.json gives way to the guard's schedule.
    const fromPicoClaw = resolvePolicy({
      guardConfig: { path: '/etc/g.json', values: { schedule: '@daily' } },
      picoclawConfig: { path: '/home/p/.picoclaw/config.json', values: { check_interval_minutes: 15 } },
    });
    expect(scheduleOf(fromPicoClaw)?.pattern).toBe('@daily');
    expect(scheduleOf(resolve({}))).toBeNull();
  });
});

describe('the slots across daylight saving time, in named time zones', () => {
  it('a daily time runs once every local day; in the spring gap at the first minute after it', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'UTC'),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }),
        (zone, h, m, start) => {
          const s = tz(`${m} ${h} * * *`, zone);
          const runs = s.nextRuns(60, start);
          const want = `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
          let prevDay: string | null = null;
          for (const r of runs) {
            const [day, time] = local(r, zone).split(' ') as [string, string];
            // One run per local day, no day left out.
            if (prevDay !== null) {
              const next = new Date(`${prevDay}T12:00:00Z`);
              next.setUTCDate(next.getUTCDate() + 1);
              expect(day, `${zone} ${want}`).toBe(next.toISOString().slice(0, 10));
            }
            prevDay = day;
            // At the time asked for, or (the time does not exist that day) at most an hour after it.
            if (time !== want) {
              const [th, tm] = time.split(':').map(Number) as [number, number];
              const late = th * 60 + tm - (h * 60 + m);
              expect(late, `${zone} ${want} ran ${day} ${time}`).toBeGreaterThan(0);
              expect(late).toBeLessThanOrEqual(60);
            }
          }
        },
      ),
      { numRuns: 60, seed: 3101 },
    );
  });

  it('Europe/Berlin 02:30 around both 2026 changes; New York every 6 hours on weekdays', () => {
    const berlin = tz('30 2 * * *', 'Europe/Berlin');
    expect(berlin.nextRuns(4, Date.parse('2026-03-27T12:00:00Z')).map((ms) => local(ms, 'Europe/Berlin'))).toEqual([
      '2026-03-28 02:30',
      '2026-03-29 03:00',
      '2026-03-30 02:30',
      '2026-03-31 02:30',
    ]);
    // The autumn overlap: 02:30 comes twice on 25 October; it runs once, at the first (CEST).
    const oct = berlin.nextRuns(3, Date.parse('2026-10-24T12:00:00Z'));
    expect(oct.map((ms) => new Date(ms).toISOString())).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
    const ny = tz('0 */6 * * 1-5', 'America/New_York');
    const runs = ny.nextRuns(6, Date.parse('2026-03-06T20:00:00Z')).map((ms) => local(ms, 'America/New_York'));
    // Friday 18:00, then nothing until Monday 00:00 (the clocks went forward on Sunday 8 March).
    expect(runs).toEqual([
      '2026-03-06 18:00',
      '2026-03-09 00:00',
      '2026-03-09 06:00',
      '2026-03-09 12:00',
      '2026-03-09 18:00',
      '2026-03-10 00:00',
    ]);
  });
});

// --- the scheduler on a fake clock --------------------------------------------------------

function logger(): { log: Logger; lines: { level: string; msg: string; obj: unknown }[] } {
  const lines: { level: string; msg: string; obj: unknown }[] = [];
  const at = (level: string) => (a: unknown, b?: string) =>
    lines.push({ level, msg: typeof a === 'string' ? a : b!, obj: typeof a === 'string' ? null : a });
  return { log: { info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger, lines };
}

const REPORT = {
  exit_code: 0,
  skipped: null,
  duration_ms: 5,
  warnings: [],
  gateway: null,
  totals: { sessions: 0, deleted_sessions: 0, freed_bytes: 0, deleted_orphan_conversations: 0 },
  database: { longest_write_ms: null, vacuum: null },
} as unknown as PassSummary;

/** Passes that end when the test says (or at once), recording the wall-clock time each started. */
class FakeRunner implements Runner {
  running = false;
  starts: number[] = [];
  private finish: (() => void) | null = null;
  constructor(private readonly holdMs: number) {}
  run(): Promise<PassOutput> {
    this.running = true;
    this.starts.push(Date.now());
    return new Promise((resolve) => {
      this.finish = () => {
        this.running = false;
        resolve({ ok: true, report: REPORT });
      };
      if (this.holdMs >= 0) setTimeout(() => this.finish?.(), this.holdMs);
    });
  }
  requestStop(): void {}
  terminate(): Promise<void> {
    this.finish?.();
    return Promise.resolve();
  }
}

function scheduler(schedule: PassSchedule, state: string, runner: Runner) {
  const { log, lines } = logger();
  const settings = {
    policy: { enabled: true },
    intervalSeconds: 3600,
    stateDir: state,
    home: { home: HOME },
    schedule,
  } as unknown as DaemonSettings;
  const hooks = { changed: () => undefined, passEnded: () => undefined, deleted: () => undefined };
  return { s: new Scheduler(() => settings, {}, log, hooks, runner), lines };
}

/** Let `ms` of time pass on both clocks (timers run in order, the promises between them settle). */
async function elapse(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the daemon's scheduler on a cron schedule (fake clock)", () => {
  it('across the spring change in Europe/Berlin: one pass a day, 03:00 on the day 02:30 does not exist', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-03-27T12:00:00Z') });
    const runner = new FakeRunner(2000);
    const { s } = scheduler(tz('30 2 * * *', 'Europe/Berlin'), tempDir(), runner);
    s.schedule('start');
    await elapse(4 * 86_400_000);
    expect(runner.starts.map((ms) => local(ms, 'Europe/Berlin'))).toEqual([
      '2026-03-28 02:30',
      '2026-03-29 03:00',
      '2026-03-30 02:30',
      '2026-03-31 02:30',
    ]);
    await s.stop();
  });

  it('an overrun skips the slots it runs into and says so; the next pass is the slot after it ended', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-06-01T09:59:00Z') });
    const runner = new FakeRunner(-1);
    const { s, lines } = scheduler(tz('*/15 * * * *', 'UTC'), tempDir(), runner);
    s.schedule('start');
    await elapse(90_000); // 10:00:30: the 10:00 pass runs and does not end
    expect(runner.starts.map((ms) => new Date(ms).toISOString())).toEqual(['2026-06-01T10:00:00.000Z']);
    await elapse(40 * 60_000); // through 10:15 and 10:30
    const skipped = lines.filter((l) => l.msg.includes('still runs: skipped'));
    expect(skipped.map((l) => (l.obj as { slot: string }).slot)).toEqual([
      '2026-06-01T10:15:00.000Z',
      '2026-06-01T10:30:00.000Z',
    ]);
    expect(s.skippedSlots).toBe(2);
    expect(runner.starts).toHaveLength(1);
    await runner.terminate(); // ends at 10:40:30
    await elapse(1000);
    expect(new Date(s.stats.next_run_at_ms!).toISOString()).toBe('2026-06-01T10:45:00.000Z');
    await elapse(5 * 60_000);
    expect(runner.starts).toHaveLength(2);
    await runner.terminate();
    await s.stop();
  });

  it('after a long suspend: one pass on waking, then the schedule, not a burst of the missed slots', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-06-01T09:59:30Z') });
    const runner = new FakeRunner(1000);
    const { s } = scheduler(tz('0 * * * *', 'UTC'), tempDir(), runner);
    s.schedule('start');
    await elapse(60_000);
    expect(runner.starts).toHaveLength(1); // 10:00
    // Suspended at 10:30 for three days: the wall clock moves, no timer runs meanwhile.
    await elapse(29 * 60_000);
    vi.setSystemTime(Date.parse('2026-06-04T10:30:00Z'));
    await elapse(60_000);
    // On waking (within the wall-clock timer's 30 s look): the 11:00 slot had passed; one pass for all the missed ones.
    expect(runner.starts).toHaveLength(2);
    expect(runner.starts[1]! - Date.parse('2026-06-04T10:30:00Z')).toBeLessThanOrEqual(30_000);
    expect(new Date(s.stats.next_run_at_ms!).toISOString()).toBe('2026-06-04T11:00:00.000Z');
    await elapse(31 * 60_000);
    expect(runner.starts).toHaveLength(3);
    await s.stop();
  });

  it('at start: one catch-up pass only when a slot was missed and the last pass is older than one period', async () => {
    const cases: [string | null, string, boolean][] = [
      // [last pass finished, now, catch-up?] for 03:30 every day (UTC)
      ['2026-06-01T03:30:05Z', '2026-06-02T10:00:00Z', true], // today's 03:30 missed, last is 30 h old
      ['2026-06-01T20:00:00Z', '2026-06-02T10:00:00Z', false], // missed, but a pass ran 14 h ago
      ['2026-06-02T03:30:05Z', '2026-06-02T10:00:00Z', false], // nothing missed
      [null, '2026-06-02T10:00:00Z', false], // nothing known: the next slot
      ['2026-05-20T03:30:00Z', '2026-06-02T10:00:00Z', true], // 12 days down: one pass, not 12
    ];
    for (const [last, now, want] of cases) {
      vi.useFakeTimers({ now: Date.parse(now) });
      const state = tempDir();
      if (last)
        writeMarker(state, { home: HOME, finished_at: last, outcome: 'ok', duration_ms: 1, deleted_sessions: 0 });
      const sch = tz('30 3 * * *', 'UTC');
      expect(catchUpDue(sch, last ? Date.parse(last) : null, Date.parse(now)), `${last} ${now}`).toBe(want);
      const runner = new FakeRunner(1000);
      const { s } = scheduler(sch, state, runner);
      s.schedule('start');
      await elapse(3 * 86_400_000);
      // Each of the 3 days' 03:30 slots, plus the catch-up when due: never more.
      const starts = runner.starts.map((ms) => new Date(ms).toISOString());
      expect(starts.length, JSON.stringify(starts)).toBe(want ? 4 : 3);
      if (want) expect(starts[0]).toBe(new Date(Date.parse(now) + 1000).toISOString());
      await s.stop();
      vi.useRealTimers();
    }
  });
});
