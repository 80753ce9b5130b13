import { statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../io/atomic.js';

/**
 * The operator's confirmation of the clock (`prune --apply --trust-clock`): a file in the state folder
 * whose modification time is when the clock was last confirmed. The daemon's clock watch clears a
 * jump it saw before that time (src/daemon/clock-watch.ts).
 */
export const CLOCK_CONFIRMED = 'clock-confirmed';

export function recordClockConfirmed(stateDir: string, nowMs: number): void {
  writeFileAtomic(join(stateDir, CLOCK_CONFIRMED), new Date(nowMs).toISOString() + '\n');
}

/** When the clock was last confirmed (epoch ms), or null. */
export function clockConfirmedAt(stateDir: string | null): number | null {
  if (!stateDir) return null;
  try {
    const st = statSync(join(stateDir, CLOCK_CONFIRMED));
    return st.isFile() ? st.mtimeMs : null;
  } catch {
    return null;
  }
}
