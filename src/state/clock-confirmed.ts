import { join } from 'node:path';
import { readJsonFile, writeJsonFile, type JsonSpec } from './store.js';

/**
 * The operator's confirmation of the clock (`prune --apply --trust-clock`): a file in the state folder
 * holding the time the clock was last confirmed, one ISO line (its modification time is the same moment).
 * The daemon's clock watch clears a jump it saw before that time (src/daemon/clock-watch.ts).
 */
export const CLOCK_CONFIRMED = 'clock-confirmed';

export const clockSpec: JsonSpec<number | null> = {
  what: 'a confirmation time (one ISO line)',
  parse: (text) => text.trim(),
  validate: (v) => {
    const ms = typeof v === 'string' && /^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(v) ? Date.parse(v) : NaN;
    return Number.isFinite(ms) ? ms : null;
  },
  empty: () => null,
  serialize: (ms) => new Date(ms ?? 0).toISOString() + '\n',
  remedy: 'run `picoclaw-guard prune --apply --trust-clock` again to confirm the clock',
};

/** Throws StateWriteError (src/state/store.ts). */
export function recordClockConfirmed(stateDir: string, nowMs: number): void {
  writeJsonFile(join(stateDir, CLOCK_CONFIRMED), nowMs, clockSpec);
}

/**
 * When the clock was last confirmed (epoch ms), or null; a damaged or unreadable file is no confirmation
 * (the daemon's passes keep skipping the age check: the safe side).
 */
export function clockConfirmedAt(stateDir: string | null): number | null {
  return stateDir ? readJsonFile(join(stateDir, CLOCK_CONFIRMED), clockSpec).value : null;
}
