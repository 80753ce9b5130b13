import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { writeFileAtomic } from '../io/atomic.js';
import { readSmallTextIfExists, SmallFileError } from '../io/smallfile.js';

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

/**
 * Every pin in the file; a missing file is none. A file that cannot be read, or whose list is not
 * a list, throws (exit 3): a pass that cannot read its pins must not act as if there were none.
 * An entry of the wrong shape is dropped (no pass could honour it anyway).
 */
export function readPins(stateDir: string): Pin[] {
  const path = pinsPath(stateDir);
  let text: string | null;
  try {
    text = readSmallTextIfExists(path, 'config', { noFollow: true });
  } catch (err) {
    throw new GuardError(
      err instanceof SmallFileError
        ? `cannot read the pins: ${err.message}`
        : `cannot read the pins ${path}: ${errnoCode(err) ?? errorMessage(err)}`,
      { exitCode: ExitCode.DATA, path, hint: 'fix or move that file away (pinned sessions lose their pins)' },
    );
  }
  if (text === null) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new GuardError(`${path} is not valid JSON`, {
      exitCode: ExitCode.DATA,
      path,
      hint: 'fix or move that file away (pinned sessions lose their pins)',
    });
  }
  const list = (doc as { pins?: unknown } | null)?.pins;
  if (!Array.isArray(list)) throw new GuardError(`${path}: pins must be a list`, { exitCode: ExitCode.DATA, path });
  return list.filter(isPin);
}

/** The pins of one home. */
export function homePins(stateDir: string, homeReal: string): Pin[] {
  return readPins(stateDir).filter((p) => p.home === homeReal);
}

function writePins(stateDir: string, pins: Pin[]): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileAtomic(pinsPath(stateDir), JSON.stringify({ pins }, null, 1) + '\n', { mode: 0o600 });
}

const same = (a: Pin, b: Pick<Pin, 'home' | 'agent' | 'key'>) =>
  a.home === b.home && a.agent === b.agent && a.key === b.key;

/** Add a pin, or renew its note and time; returns the pin as written. */
export function addPin(stateDir: string, pin: Pin): Pin {
  const all = readPins(stateDir);
  writePins(stateDir, [...all.filter((p) => !same(p, pin)), pin]);
  return pin;
}

/** End the pins of one home's session; returns what was removed (none: nothing is written). */
export function removePins(stateDir: string, which: Pick<Pin, 'home' | 'agent' | 'key'>): Pin[] {
  const all = readPins(stateDir);
  const gone = all.filter((p) => same(p, which));
  if (gone.length > 0)
    writePins(
      stateDir,
      all.filter((p) => !gone.includes(p)),
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
