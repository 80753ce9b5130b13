/**
 * gateway.log's times: dated stamps (zerolog's `time`, journald's prefix) parsed by
 * time.ts, and the console clock that turns the console's bare times of day into instants.
 */

import { parseLogTime, type LoggedInstant } from '../time.js';

let lastInstantText = '';
let lastInstant: LoggedInstant | null = null;

/** RFC3339 (zerolog's `time`, journald's short-iso with or without the colon) → instant and offset. */
export function parseInstant(text: string): LoggedInstant | null {
  // Consecutive lines mostly share their second: reuse the last answer.
  if (text === lastInstantText) return lastInstant === null ? null : { ...lastInstant };
  lastInstantText = text;
  lastInstant = parseLogTime(text);
  return lastInstant === null ? null : { ...lastInstant };
}

/**
 * Turns console times of day into instants. zerolog's console time is the local time of
 * day only (docs/picoclaw.md#line-format), so dates come from elsewhere: journald's prefix, a
 * dated (JSON) line seen earlier, or, failing both, a running day count that follows midnight
 * rollovers.
 * Time only moves forward: a line may step back a little (events of concurrent goroutines
 * are written out of order, and the console stamps whole seconds), but a step back of
 * more than MAX_STEP_BACK_MS is the next day. A silence of more than a day cannot be seen.
 * Floating times (no date known) are wall-clock ms counted from day 0 = 1970-01-01.
 */
export const MAX_STEP_BACK_MS = 10 * 60_000;

export class ConsoleClock {
  /** Last dated instant and its offset: dates console lines that have none. */
  private lastInstant: { ms: number; offsetMin: number } | null = null;
  /** Last floating wall-clock time (ms since day 0). */
  private lastFloating: number | null = null;

  noteInstant(ms: number, offsetMin: number): void {
    this.lastInstant = { ms, offsetMin };
  }

  /** An instant for `secondOfDay` near the last known time, or a floating wall-clock time. */
  resolve(secondOfDay: number): { ms: number; offsetMin: number | null; floating: boolean } {
    const DAY = 86_400_000;
    const nearest = (refWall: number) => {
      const day = Math.floor(refWall / DAY) * DAY;
      let cand = day + secondOfDay * 1000;
      if (cand < refWall - MAX_STEP_BACK_MS) cand += DAY;
      return cand;
    };
    if (this.lastInstant) {
      const off = this.lastInstant.offsetMin;
      const wallMs = nearest(this.lastInstant.ms + off * 60_000);
      const ms = wallMs - off * 60_000;
      this.lastInstant = { ms, offsetMin: off };
      return { ms, offsetMin: off, floating: false };
    }
    const wallMs = this.lastFloating === null ? secondOfDay * 1000 : nearest(this.lastFloating);
    this.lastFloating = wallMs;
    return { ms: wallMs, offsetMin: null, floating: true };
  }

  /** journald's date with the console's time of day: the day that puts them nearest. */
  static withDate(secondOfDay: number, journald: { ms: number; offsetMin: number }): number {
    const DAY = 86_400_000;
    const refWall = journald.ms + journald.offsetMin * 60_000;
    const day = Math.floor(refWall / DAY) * DAY;
    let cand = day + secondOfDay * 1000;
    if (cand < refWall - DAY / 2) cand += DAY;
    else if (cand > refWall + DAY / 2) cand -= DAY;
    return cand - journald.offsetMin * 60_000;
  }
}

/** `2026-06-13T18:19:35+02:00` for an instant at a given offset (whole seconds unless ms ≠ 0). */
export function formatInstant(ms: number, offsetMin: number): string {
  const d = new Date(ms + offsetMin * 60_000);
  const iso = d.toISOString();
  const frac = d.getUTCMilliseconds() !== 0 ? iso.slice(19, 23) : '';
  if (offsetMin === 0) return iso.slice(0, 19) + frac + 'Z';
  const a = Math.abs(offsetMin);
  const zone = `${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
  return `${iso.slice(0, 19)}${frac}${offsetMin < 0 ? '-' : '+'}${zone}`;
}
