import { Cron } from 'croner';
import { cronProblem, timezoneProblem } from '../config/schedule-values.js';
import { ExitCode, GuardError } from '../errors.js';
import type { ResolvedPolicy, ResolvedValue } from '../prune/policy.js';

/**
 * The daemon's passes on a cron schedule (`prune.schedule`, e.g. "30 3 * * *" or
 * "0 *\/6 * * 1-5"), read in `prune.schedule_timezone` (an IANA name; null: the system's time
 * zone), instead of one pass every check_interval_minutes.
 *
 * croner (npm croner 11) only computes the times here: its own timer and its `protect` are not
 * used, because the daemon keeps what they would give in one place (scheduler.ts): passes start on
 * the wall clock checked at least every 30 s (wall-timer.ts: a clock step is noticed, as croner's
 * 30 s maxDelay does), one pass at a time (a slot that comes while a pass runs is skipped and
 * logged, as croner's `protect` drops it), and a last-run marker in the state folder, which croner
 * does not keep, so that a restart or a suspend resumes without a burst (one catch-up pass at
 * most, and only when the last pass is older than one period).
 *
 * Daylight saving time, as croner 11.0.1 computes it (test/daemon/schedule.test.ts): a time in the
 * spring-forward gap runs once, at the first minute after the gap (02:30 in Europe/Berlin on
 * 2026-03-29 runs at 03:00 CEST); a time in the autumn overlap runs once, at its first occurrence.
 */
export interface PassSchedule {
  pattern: string;
  /** IANA time zone, or null: the system's (TZ). */
  timezone: string | null;
  /** The first slot strictly after `ms`, or null when the pattern has none left. */
  next(ms: number): number | null;
  /** The last slot at or before `ms`, or null. */
  prev(ms: number): number | null;
  /** The next n slots after `ms`. */
  nextRuns(n: number, ms: number): number[];
}

const naming = (v: ResolvedValue<unknown>, key: string): string =>
  v.source === 'guard-config'
    ? `${v.from} (prune): ${key}`
    : v.source === 'env'
      ? `environment ${v.from}: ${key}`
      : v.source === 'flag'
        ? `${v.from}: ${key}`
        : `prune.${key}`;

const usage = (v: ResolvedValue<unknown>, message: string, hint?: string): GuardError =>
  new GuardError(message, {
    exitCode: ExitCode.USAGE,
    path: v.source === 'guard-config' ? (v.from ?? undefined) : undefined,
    hint: hint ?? 'nothing was read or deleted; fix that value',
  });

/**
 * The schedule of a cron expression in a time zone. resolvePolicy has checked both
 * (src/config/schedule-values.ts); a value that comes another way is checked here the same way.
 */
export function parseSchedule(
  pattern: ResolvedValue<string | null> & { value: string },
  timezone: ResolvedValue<string | null>,
): PassSchedule {
  const tz = timezone.value;
  const tzWhy = tz === null ? null : timezoneProblem(tz);
  if (tzWhy) throw usage(timezone, `${naming(timezone, 'schedule_timezone')} ${tzWhy}`);
  const why = cronProblem(pattern.value);
  if (why) throw usage(pattern, `${naming(pattern, 'schedule')} ${why}`);
  const cron = new Cron(pattern.value, { timezone: tz ?? undefined, paused: true });
  if (cron.nextRun(new Date()) === null)
    throw usage(pattern, `${naming(pattern, 'schedule')} "${pattern.value}" has no run left (a date in the past?)`);
  return {
    pattern: pattern.value,
    timezone: tz,
    next: (ms) => cron.nextRun(new Date(ms))?.getTime() ?? null,
    prev: (ms) => {
      // Slots are whole seconds; a slot exactly at ms counts as "at or before" it.
      for (const p of cron.previousRuns(2, new Date(ms + 1000))) if (p.getTime() <= ms) return p.getTime();
      return null;
    },
    nextRuns: (n, ms) => cron.nextRuns(n, new Date(ms)).map((d) => d.getTime()),
  };
}

/**
 * The schedule the policy asks for, or null for check_interval_minutes. Both set where the owner
 * sets the guard's values (flags, environment, the guard config) is an error naming both; a
 * check_interval_minutes from PicoClaw's own config.json (its key, for its own pruner) gives way.
 */
export function scheduleOf(p: ResolvedPolicy): PassSchedule | null {
  const pattern = p.schedule;
  if (pattern.value === null) return null;
  const ci = p.check_interval_minutes;
  if (ci.source === 'flag' || ci.source === 'env' || ci.source === 'guard-config') {
    throw usage(
      pattern,
      `${naming(pattern, 'schedule')} "${pattern.value}" and ${naming(ci, 'check_interval_minutes')} ${ci.value} ` +
        'are both set: passes run either on the schedule or every check_interval_minutes',
      'remove one of them; nothing was read or deleted',
    );
  }
  return parseSchedule(pattern as ResolvedValue<string | null> & { value: string }, p.schedule_timezone);
}

/**
 * Whether a pass should catch up now, at start or on re-arming: only when a slot was missed since
 * the last pass and that pass is older than one period (the gap between the last two slots). No
 * last pass: nothing was missed, the first pass is the next slot.
 */
export function catchUpDue(s: PassSchedule, lastMs: number | null, nowMs: number): boolean {
  if (lastMs === null || lastMs > nowMs) return false;
  const prev = s.prev(nowMs);
  if (prev === null || lastMs >= prev) return false;
  const before = s.prev(prev - 1000);
  const after = s.next(prev);
  const period = before !== null ? prev - before : after !== null ? after - prev : Infinity;
  return nowMs - lastMs >= period;
}

/** "30 3 * * *" (Europe/Berlin): for logs and pages. */
export function describeSchedule(s: PassSchedule): string {
  return `"${s.pattern}" (${s.timezone ?? 'system time zone'})`;
}
