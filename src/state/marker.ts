import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../io/atomic.js';
import { readHistory } from './history.js';
import { readSmallText } from '../io/smallfile.js';
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

export function readMarker(stateDir: string, home: string): LastRunMarker | null {
  try {
    const m = JSON.parse(readSmallText(markerPath(stateDir, home), 'state')) as Partial<LastRunMarker>;
    if (m.home === home && typeof m.finished_at === 'string' && Number.isFinite(instantMs(m.finished_at)))
      return m as LastRunMarker;
  } catch {
    // missing or torn: as if no pass ran
  }
  return null;
}

export function writeMarker(stateDir: string, m: LastRunMarker): void {
  mkdirSync(stateDir, { recursive: true });
  writeFileAtomic(markerPath(stateDir, m.home), JSON.stringify(m) + '\n');
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
