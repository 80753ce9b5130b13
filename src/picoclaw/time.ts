/**
 * PicoClaw's timestamps, parsed exactly.
 *
 * - JSONL lines and .meta.json: Go RFC3339Nano (`time.Time` JSON): 0 to 9 fraction
 *   digits with trailing zeros trimmed (the dot dropped when the fraction is zero),
 *   `Z` or a `±hh:mm` offset; the Go zero time `0001-01-01T00:00:00Z` for unset times.
 * - seahorse.db: `YYYY-MM-DD HH:MM:SS`, UTC, whole seconds (formatSQLiteTime).
 * - gateway.log: zerolog's RFC3339 `time`, and journald's short-iso prefix, which writes the
 *   offset without its colon (`+0200`) on older systemd (docs/picoclaw.md#line-format).
 *
 * Date.parse is not used: it only specifies 3 fraction digits and maps years 0-99
 * to the 1900s. Results are epoch milliseconds (the fraction is truncated to ms).
 * Every format goes through one check of the calendar (`build`): a day its month does
 * not have (2026-02-30) is not a time.
 */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$/;
/** RFC3339 as logs write it: also `±hhmm` (journald short-iso) and ISO 8601's `,` before the fraction. */
const RFC3339_LOG = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|z|[+-]\d{2}:?\d{2})$/;
const SQLITE_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;

/** Timestamps before this are not usable (a board without an RTC boots in 1970 or at its build date). */
export const USABLE_SINCE_MS = Date.UTC(2024, 0, 1);

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days in month `mo` (1-12) of year `y`, Gregorian leap years. */
function daysInMonth(y: number, mo: number): number {
  if (mo === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) return 29;
  return MONTH_DAYS[mo - 1]!;
}

function build(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  frac: string | undefined,
  offsetMin: number,
): number | null {
  // Second 60 (a leap second) reads as the next minute's first.
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 60) return null;
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, ms);
  return date.getTime() - offsetMin * 60_000;
}

/** An instant as a log line states it: epoch ms, the writer's UTC offset, and the stamp's resolution. */
export interface LoggedInstant {
  ms: number;
  offsetMin: number;
  /** 1 when the stamp has a fraction, else 1000 (whole seconds). */
  precisionMs: number;
}

function parseRfc3339(re: RegExp, text: string): LoggedInstant | null {
  const m = re.exec(text);
  if (!m) return null;
  let offsetMin = 0;
  const z = m[8]!;
  if (z !== 'Z' && z !== 'z') {
    const sign = z[0] === '-' ? -1 : 1;
    offsetMin = sign * (Number(z.slice(1, 3)) * 60 + Number(z.slice(-2)));
  }
  const ms = build(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!, m[7], offsetMin);
  return ms === null ? null : { ms, offsetMin, precisionMs: m[7] ? 1 : 1000 };
}

/** Parse Go RFC3339 / RFC3339Nano. Returns epoch ms, or null when the text is not such a time. */
export function parseGoTime(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  return parseRfc3339(RFC3339, text)?.ms ?? null;
}

/**
 * An ISO 8601 / RFC3339 instant the guard stored (its own state files, archives, reports) as epoch
 * ms, NaN when it is not one: the calendar-checked replacement for Date.parse, which accepts
 * 2026-02-30 and reads years 0-99 as 19xx.
 */
export function instantMs(text: unknown): number {
  return parseGoTime(text) ?? NaN;
}

/**
 * Parse a gateway.log stamp: zerolog's RFC3339 `time` or journald's short-iso(-precise)
 * prefix. Null when the text is not such a time.
 */
export function parseLogTime(text: string): LoggedInstant | null {
  return parseRfc3339(RFC3339_LOG, text);
}

/** Parse seahorse's `YYYY-MM-DD HH:MM:SS` (UTC). */
export function parseSqliteTime(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const m = SQLITE_TIME.exec(text);
  if (!m) return null;
  return build(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!, m[7], 0);
}

/** A parsed time if it is usable (on or after 2024-01-01T00:00:00Z), else null. */
export function usable(ms: number | null): number | null {
  return ms !== null && ms >= USABLE_SINCE_MS ? ms : null;
}

/** Format epoch ms as seahorse stores times (`YYYY-MM-DD HH:MM:SS`, UTC). */
export function formatSqliteTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * Format epoch ms (plus optional extra nanoseconds) the way Go marshals a time.Time
 * in UTC: RFC3339Nano with trailing zeros trimmed. Used by the sample-home builder.
 */
export function formatGoTime(ms: number, extraNanos = 0, offsetMin = 0): string {
  const local = new Date(ms + offsetMin * 60_000);
  const base = local.toISOString().slice(0, 19);
  const nanos = (((ms % 1000) + 1000) % 1000) * 1_000_000 + extraNanos;
  let frac = nanos === 0 ? '' : '.' + String(nanos).padStart(9, '0').replace(/0+$/, '');
  let zone = 'Z';
  if (offsetMin !== 0) {
    const sign = offsetMin < 0 ? '-' : '+';
    const a = Math.abs(offsetMin);
    zone = `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
  }
  if (frac === '.') frac = '';
  return base + frac + zone;
}
