import { createRequire } from 'node:module';

/**
 * The two schedule values of the prune section (prune.schedule, prune.schedule_timezone), checked
 * where every policy value is (src/prune/policy.ts), so that a bad one stops every command before
 * anything is read. croner is loaded only when a schedule is set: most commands never need it.
 *
 * A refused value is quoted only when it looks like what it should be (cron fields, an IANA
 * name): a secret pasted into the wrong key is never echoed (test/config/section.test.ts).
 */
type CronCtor = new (pattern: string, options?: { paused?: boolean; timezone?: string }) => {
  nextRun(d?: Date): Date | null;
};
let CronClass: CronCtor | null = null;
function cronClass(): CronCtor {
  CronClass ??= (createRequire(import.meta.url)('croner') as { Cron: CronCtor }).Cron;
  return CronClass;
}

const NAMES = '(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)';
const FIELD = new RegExp(`^(?:[\\d*?/,#LW+-]|${NAMES})+$`, 'i');
const NICKNAME = /^@(?:yearly|annually|monthly|weekly|daily|midnight|hourly|reboot)$/i;

/** Five to seven cron fields, or a nickname, short: safe to quote back (a lone number could be a PIN). */
function looksLikeCron(v: string): boolean {
  if (v.length > 80) return false;
  const parts = v.trim().split(/\s+/);
  return NICKNAME.test(v.trim()) || (parts.length >= 5 && parts.length <= 7 && parts.every((p) => FIELD.test(p)));
}

const CRON_HELP =
  'five fields, minute hour day-of-month month day-of-week, e.g. "30 3 * * *" (03:30 every day) or ' +
  '"0 */6 * * 1-5" (every 6 hours on weekdays), or @daily';

/** Why `v` is not a cron expression croner accepts, or null when it is one. */
export function cronProblem(v: string): string | null {
  let error: string | null = null;
  try {
    new (cronClass())(v, { paused: true });
  } catch (err) {
    error = (err instanceof Error ? err.message : String(err)).replace(/^CronPattern: /, '');
  }
  if (error === null) return null;
  return looksLikeCron(v)
    ? `"${v}" is not a cron expression (${error}): ${CRON_HELP}`
    : `is not a cron expression (not quoted: it does not look like one): ${CRON_HELP}`;
}

/** Why `v` is not an IANA time zone, or null when it is one. */
export function timezoneProblem(v: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: v });
    return null;
  } catch {
    const quotable = v.length <= 64 && /^[A-Za-z_]+(?:\/[A-Za-z_+-]+){0,2}$/.test(v);
    return (
      `${quotable ? `"${v}" ` : ''}is not a time zone: give an IANA name such as "Europe/Berlin" or ` +
      '"America/New_York" (timedatectl list-timezones), or null for the system time zone'
    );
  }
}
