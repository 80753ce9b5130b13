import { stat } from 'node:fs/promises';
import { ConsoleClock, formatInstant, LineFormat, type ParsedLine } from '../picoclaw/gatewaylog/gatewaylog.js';
import type { AnalyzeOptions, StartupReport } from './types.js';

/**
 * The times of the lines: an instant (JSON `time`, journald's prefix, a console time of day
 * dated by the nearest dated line) or a floating wall-clock time when no date is known, and
 * at the end the anchoring of floating times on a date (docs/picoclaw.md#line-format).
 */

/** An instant (or a floating wall-clock time when the date is unknown) and its precision. */
export interface LineTime {
  ms: number;
  floating: boolean;
  offsetMin: number | null;
  precisionMs: number;
}

type DateSource = 'file' | 'journald' | 'borrowed' | 'floating';
const DAY = 86_400_000;

/** Turns parsed lines into times, in log order (console times are dated from the lines before). */
export class LineTimes {
  private readonly clock = new ConsoleClock();
  /** Where the dates came from, over every line timed. */
  readonly sources = new Set<DateSource>();
  /** The finest precision of any line timed. */
  finestPrecisionMs = Infinity;

  of(p: ParsedLine): LineTime | null {
    const t = this.resolve(p);
    if (t && t.precisionMs < this.finestPrecisionMs) this.finestPrecisionMs = t.precisionMs;
    return t;
  }

  private resolve(p: ParsedLine): LineTime | null {
    const tm = p.time;
    if (tm === null) return null;
    if (tm.kind === 'instant') {
      this.clock.noteInstant(tm.ms, tm.offsetMin);
      this.sources.add(p.format === LineFormat.JSON ? 'file' : 'journald');
      return { ms: tm.ms, floating: false, offsetMin: tm.offsetMin, precisionMs: tm.precisionMs };
    }
    if (p.journald) {
      this.sources.add('journald');
      // short-iso-precise: journald's receive time has microseconds; stdout is unbuffered, so it is the write time.
      const precise = p.journald.precisionMs < 1000;
      const ms = precise ? p.journald.ms : ConsoleClock.withDate(tm.secondOfDay, p.journald);
      this.clock.noteInstant(ms, p.journald.offsetMin);
      const precisionMs = precise ? p.journald.precisionMs : 1000;
      return { ms, floating: false, offsetMin: p.journald.offsetMin, precisionMs };
    }
    const r = this.clock.resolve(tm.secondOfDay);
    this.sources.add(r.floating ? 'floating' : 'borrowed');
    return { ms: r.ms, floating: r.floating, offsetMin: r.offsetMin, precisionMs: 1000 };
  }

  /** Only console times without any date were seen: they need an anchor to be placed on a date. */
  get onlyFloating(): boolean {
    return this.sources.has('floating') && !this.sources.has('file') && !this.sources.has('journald');
  }
}

/** How far floating times move to land on the anchor's date, and in which UTC offset. */
export interface AnchorShift {
  dayShiftMs: number;
  offsetMin: number;
}

/**
 * Console times without any date: put the last one on the anchor's date (the file's mtime by
 * default), the day before when its time of day is later than the anchor's.
 */
export async function anchorShift(
  anchorOpt: AnalyzeOptions['dateAnchor'],
  path: string | null,
  lastFloating: LineTime | undefined,
): Promise<AnchorShift | null> {
  let anchor = anchorOpt === undefined ? 'mtime' : anchorOpt;
  if (anchor === 'mtime') {
    anchor = null;
    if (path !== null) {
      try {
        const st = await stat(path);
        anchor = { ms: st.mtimeMs, offsetMin: -new Date(st.mtimeMs).getTimezoneOffset() };
      } catch {
        anchor = null;
      }
    }
  }
  if (!anchor || !lastFloating) return null;
  const anchorWall = anchor.ms + anchor.offsetMin * 60_000;
  let shift = Math.floor(anchorWall / DAY) * DAY - Math.floor(lastFloating.ms / DAY) * DAY;
  if (lastFloating.ms + shift > anchorWall) shift -= DAY; // written before the file's mtime
  return { dayShiftMs: shift, offsetMin: anchor.offsetMin };
}

/** A time with the anchor applied (floating times become instants); others as they are. */
export function anchored(shift: AnchorShift | null): (t: LineTime | null) => LineTime | null {
  return (t) => {
    if (t === null || !t.floating || shift === null) return t;
    const ms = t.ms + shift.dayShiftMs - shift.offsetMin * 60_000;
    return { ms, floating: false, offsetMin: shift.offsetMin, precisionMs: t.precisionMs };
  };
}

/** Display text of a time: `2026-06-13 18:19:35 +02:00`, or `day 2 18:19:35` without a date. */
export function timeText(t: LineTime | null): { iso: string | null; text: string } {
  if (t === null) return { iso: null, text: '-' };
  if (t.floating) {
    const day = Math.floor(t.ms / DAY);
    return { iso: null, text: `day ${day + 1} ${new Date(t.ms).toISOString().slice(11, 19)}` };
  }
  const iso = formatInstant(t.ms, t.offsetMin ?? 0);
  const zone = (_m: string, frac: string | undefined, z: string) => `${frac ?? ''} ${z === 'Z' ? 'UTC' : z}`;
  const text = iso.replace('T', ' ').replace(/(\.\d+)?(Z|[+-]\d\d:\d\d)$/, zone);
  return { iso, text };
}

/** The report's `timestamps`: where the dates came from, the finest precision, and a note. */
export function timestampsOf(
  times: LineTimes,
  shift: AnchorShift | null,
  spanPrecisions: Iterable<number>,
): StartupReport['timestamps'] {
  let dates: StartupReport['timestamps']['dates'] = 'none';
  const ds = [...times.sources];
  if (ds.length === 1) dates = ds[0] === 'floating' ? (shift ? 'anchored' : 'none') : ds[0]!;
  else if (ds.length > 1) dates = 'mixed';
  let note: string | null = null;
  if (times.sources.has('floating')) {
    note = shift
      ? 'console lines carry no date: days were counted across midnights and the last line placed on the date ' +
        "of the file's modification time"
      : 'console lines carry no date: days are counted from the first line (day 1); a silence of more than a day ' +
        'cannot be seen';
  } else if (times.sources.has('file')) {
    note = 'gateway.log has whole-second timestamps: spans between two lines are ±1 s';
  }
  let finest = times.finestPrecisionMs;
  for (const s of spanPrecisions) if (s * 1000 < finest) finest = s * 1000;
  return { dates, precision_seconds: Number.isFinite(finest) ? finest / 1000 : 1, note };
}
