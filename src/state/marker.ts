import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readHistory } from './history.js';
import { isRecord, readJsonFile, writeJsonFile, type JsonSpec } from './store.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * The daemon's last-run marker: when its last prune pass for a home ran to its end.
 * The daemon's timer (src/daemon/wall-timer.ts) lives in memory only, so without the marker
 * every restart of the daemon would start with a pass.
 *
 * Written once per completed pass (a few hundred bytes an hour), never on a skipped,
 * failed or interrupted one: a failure must not postpone the retry (logrotate/logrotate#422).
 * The prune history (./history.ts, appended by every apply pass, the pre-start unit's
 * included) counts too, but only its `ok` passes: a `partial` one may have been cut short
 * by a deadline (the pre-start unit's --deadline) and has work left.
 */
export interface LastRunMarker {
  home: string;
  finished_at: string;
  outcome: 'ok' | 'partial';
  duration_ms: number;
  deleted_sessions: number;
}

/** One marker per home (a board may run one guard per PicoClaw home). */
export function markerPath(stateDir: string, home: string): string {
  const tag = createHash('sha256').update(home).digest('hex').slice(0, 12);
  return join(stateDir, `daemon-last-run-${tag}.json`);
}

export const markerSpec = (home: string): JsonSpec<LastRunMarker | null> => ({
  what: 'a last-run marker of this home',
  validate: (m) =>
    isRecord(m) && m.home === home && typeof m.finished_at === 'string' && Number.isFinite(instantMs(m.finished_at))
      ? (m as unknown as LastRunMarker)
      : null,
  empty: () => null,
  remedy: 'move it away (the daemon then runs a pass at start)',
});

/** The marker, null when there is none; a damaged or unreadable one is none too: at worst one pass more. */
export function readMarker(stateDir: string, home: string): LastRunMarker | null {
  return readJsonFile(markerPath(stateDir, home), markerSpec(home)).value;
}

/** Throws StateWriteError (src/state/store.ts). */
export function writeMarker(stateDir: string, m: LastRunMarker): void {
  writeJsonFile(markerPath(stateDir, m.home), m, markerSpec(m.home));
}

/** When a pass last completed for this home: the marker or the prune history, whichever is later. ms, or null. */
export function lastCompletedAt(stateDir: string, home: string): number | null {
  let best: number | null = null;
  const m = readMarker(stateDir, home);
  if (m) best = instantMs(m.finished_at);
  const history = readHistory(stateDir, home);
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i]!;
    if (e.outcome !== 'ok') continue;
    const at = instantMs(e.at);
    if (Number.isFinite(at) && (best === null || at > best)) best = at;
    break;
  }
  return best;
}

/**
 * When the first pass is due: now when nothing completed within the interval, else one
 * interval after the last completion. A marker from the future (the clock stepped back,
 * a Pi without RTC before NTP) does not postpone anything.
 */
export function firstRunAt(lastMs: number | null, intervalMs: number, nowMs: number): number {
  if (lastMs === null || lastMs > nowMs) return nowMs;
  return Math.max(nowMs, lastMs + intervalMs);
}
