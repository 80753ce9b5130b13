import { statSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import { SMALL_FILE_CAPS } from '../io/smallfile.js';
import { isRecord, jsonState, refusal } from './store.js';

/**
 * Pins: sessions the operator keeps whatever the policy says (`picoclaw-guard pin KEY`). Unlike a
 * restore hold a pin never ends by itself; `unpin` ends it. One small JSON file in the guard's
 * state folder, shared by every home (each pin names its home by real path), written atomically
 * (temp + fsync + rename), so the daemon's passes and the pre-start unit read either the old list
 * or the new one, never a torn file. A pin names one session (agent + key); the planner keeps the
 * whole alias group the session is in.
 */
export interface Pin {
  /** Real path of the PicoClaw home. */
  home: string;
  agent: string;
  key: string;
  pinned_at: string;
  /** Why, as the operator typed it (`--note`), or null. */
  note: string | null;
}

export const PINS_FILE = 'pins.json';
/** A note is a reminder, not a document: longer ones are refused at `pin`. */
export const MAX_NOTE_CHARS = 200;

export function pinsPath(stateDir: string): string {
  return join(stateDir, PINS_FILE);
}

function isPin(p: unknown): p is Pin {
  if (typeof p !== 'object' || p === null) return false;
  const r = p as Record<string, unknown>;
  return (
    ['home', 'agent', 'key', 'pinned_at'].every((k) => typeof r[k] === 'string') &&
    (r.note === null || typeof r.note === 'string')
  );
}

const HINT = 'fix or move that file away (pinned sessions lose their pins)';

/** `{ "pins": [...] }`; an entry of the wrong shape is dropped (no pass could honour it anyway). */
export const pinsFile = jsonState<Pin[]>(PINS_FILE, {
  what: 'a list of pins ({"pins": [...]})',
  validate: (v) => (isRecord(v) && Array.isArray(v.pins) ? v.pins.filter(isPin) : null),
  empty: () => [],
  serialize: (pins) => JSON.stringify({ pins }, null, 1) + '\n',
  maxBytes: SMALL_FILE_CAPS.config,
  mode: 0o600,
  dirMode: 0o700,
  remedy: HINT,
});

const refuse = (stateDir: string) => (problem: string) => refusal(problem, pinsPath(stateDir), HINT);

/**
 * Every pin in the file; a missing file is none. A file that cannot be read, or is not a pins file,
 * throws (exit 3): a pass that cannot read its pins must not act as if there were none.
 */
export function readPins(stateDir: string): Pin[] {
  const r = pinsFile.read(stateDir);
  if (r.problem) throw refuse(stateDir)(r.problem);
  return r.value;
}

/** The pins of one home. */
export function homePins(stateDir: string, homeReal: string): Pin[] {
  return readPins(stateDir).filter((p) => p.home === homeReal);
}

const same = (a: Pin, b: Pick<Pin, 'home' | 'agent' | 'key'>) =>
  a.home === b.home && a.agent === b.agent && a.key === b.key;

/** Add a pin, or renew its note and time; returns the pin as written. Throws as readPins does, or StateWriteError. */
export function addPin(stateDir: string, pin: Pin): Pin {
  pinsFile.update(stateDir, (all) => [...all.filter((p) => !same(p, pin)), pin], { refuse: refuse(stateDir) });
  return pin;
}

/** End the pins of one home's session; returns what was removed (none: nothing is written). */
export function removePins(stateDir: string, which: Pick<Pin, 'home' | 'agent' | 'key'>): Pin[] {
  let gone: Pin[] = [];
  pinsFile.update(
    stateDir,
    (all) => {
      gone = all.filter((p) => same(p, which));
      return gone.length > 0 ? all.filter((p) => !gone.includes(p)) : null;
    },
    { refuse: refuse(stateDir) },
  );
  return gone;
}

/**
 * The pins of one home as they are now, for a pass that is already deleting: the file is read again only
 * when it changed (one stat a call), so a pin made at a shell while a long pass runs still keeps its session.
 * Returns the pin that names agent + key, null when none, or a message when the file cannot be read (the
 * caller keeps the session: when in doubt the data is kept).
 */
export function pinWatch(
  stateDir: string,
  homeReal: string,
  planned: Pin[],
): (agent: string, key: string | null) => Pin | string | null {
  const path = pinsPath(stateDir);
  const stamp = () => {
    try {
      const st = statSync(path);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'none';
    }
  };
  // Read again at the first call: a pin made between planning and the first deletion counts too.
  let seen = '';
  let byKey = new Map(planned.map((p) => [`${p.agent}\0${p.key}`, p]));
  let problem: string | null = null;
  return (agent, key) => {
    const now = stamp();
    if (now !== seen) {
      seen = now;
      try {
        byKey = new Map(homePins(stateDir, homeReal).map((p) => [`${p.agent}\0${p.key}`, p]));
        problem = null;
      } catch (err) {
        problem = `the pins in ${path} cannot be read now (${errorMessage(err)})`;
      }
    }
    if (problem) return problem;
    return key === null ? null : (byKey.get(`${agent}\0${key}`) ?? null);
  };
}

/** For the deleter: why a group must be kept now (a member pinned, or the pins unreadable, since planning). */
export function keptByPinSince(
  stateDir: string,
  homeReal: string,
  planned: Pin[],
): (g: { members: { agent: string; key: string | null }[] }) => string | null {
  const watch = pinWatch(stateDir, homeReal, planned);
  return (g) => {
    for (const m of g.members) {
      const p = watch(m.agent, m.key);
      if (typeof p === 'string') return `kept: ${p}`;
      if (p) return `kept: ${p.key} was ${pinDetail(p)}, after this pass planned`;
    }
    return null;
  };
}

/** One line for a report: "pinned on 2026-11-30: the note". */
export function pinDetail(p: { pinned_at: string; note: string | null }): string {
  return `pinned on ${p.pinned_at.slice(0, 10)}${p.note ? `: ${p.note}` : ''}`;
}
