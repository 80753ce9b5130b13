import { join } from 'node:path';
import { instantMs } from '../picoclaw/time.js';
import { isRecord, jsonState, refusal } from './store.js';

/**
 * Restore holds: a session put back by `restore` is kept by every pass until its hold
 * ends (it is usually older than max_age_days, so the next pass, maybe the pre-start
 * one, would delete it again). Kept in the guard's state folder, one small JSON file
 * shared by every home (each hold names its home); expired holds are dropped whenever the
 * file is written.
 */
export interface Hold {
  /** Real path of the PicoClaw home. */
  home: string;
  agent: string;
  key: string;
  restored_at: string;
  until: string;
}

export const HOLDS_FILE = 'restore-holds.json';
const MAX_BYTES = 4 << 20;

export function holdsPath(stateDir: string): string {
  return join(stateDir, HOLDS_FILE);
}

const HINT = 'move it away; restored sessions lose their holds';

const isHold = (h: unknown): h is Hold =>
  isRecord(h) &&
  ['home', 'agent', 'key', 'restored_at', 'until'].every((k) => typeof h[k] === 'string') &&
  Number.isFinite(instantMs(h.until));

/** `{ "holds": [...] }`; an entry of the wrong shape is dropped (no pass could honour it anyway). */
export const holdsFile = jsonState<Hold[]>(HOLDS_FILE, {
  what: 'a list of restore holds ({"holds": [...]})',
  validate: (v) => (isRecord(v) && Array.isArray(v.holds) ? v.holds.filter(isHold) : null),
  empty: () => [],
  serialize: (holds) => JSON.stringify({ holds }, null, 1) + '\n',
  maxBytes: MAX_BYTES,
  mode: 0o600,
  dirMode: 0o700,
  remedy: HINT,
});

const refuse = (stateDir: string) => (problem: string) => refusal(problem, holdsPath(stateDir), HINT);

/**
 * Every hold in the file (expired ones included); a missing file is none. A file that cannot be read
 * or is not a holds file throws (exit 3): a hidden hold could let a pass delete a restored session.
 */
export function readHolds(stateDir: string): Hold[] {
  const r = holdsFile.read(stateDir);
  if (r.problem) throw refuse(stateDir)(r.problem);
  return r.value;
}

/** The holds of one home that have not ended at nowMs. */
export function activeHolds(stateDir: string, homeReal: string, nowMs: number): Hold[] {
  return readHolds(stateDir).filter((h) => h.home === homeReal && instantMs(h.until) > nowMs);
}

/** Add (or renew) holds; drops every expired one. Throws as readHolds does, or StateWriteError. */
export function addHolds(stateDir: string, add: Hold[], nowMs: number): void {
  const same = (a: Hold, b: Hold) => a.home === b.home && a.agent === b.agent && a.key === b.key;
  holdsFile.update(
    stateDir,
    (all) => [...all.filter((h) => instantMs(h.until) > nowMs && !add.some((x) => same(x, h))), ...add],
    { refuse: refuse(stateDir) },
  );
}

/** End the holds of one home whose key is `key`; returns what was released. */
export function releaseHolds(
  stateDir: string,
  homeReal: string,
  match: (key: string) => boolean,
  nowMs: number,
): Hold[] {
  let gone: Hold[] = [];
  holdsFile.update(
    stateDir,
    (all) => {
      gone = all.filter((h) => h.home === homeReal && match(h.key));
      return gone.length > 0 ? all.filter((h) => !gone.includes(h) && instantMs(h.until) > nowMs) : null;
    },
    { refuse: refuse(stateDir) },
  );
  return gone;
}

export function holdDetail(h: { restored_at: string; until: string }): string {
  return `restored on ${h.restored_at.slice(0, 10)}, held until ${h.until.replace(/:\d\d\.\d{3}Z$/, 'Z').replace('T', ' ')}`;
}
