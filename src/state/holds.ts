import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { writeFileAtomic } from '../io/atomic.js';
import { instantMs } from '../picoclaw/time.js';

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

/** Every hold in the file (expired ones included); a missing file is none. */
export function readHolds(stateDir: string): Hold[] {
  const path = holdsPath(stateDir);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw new GuardError(`cannot read the restore holds ${path}: ${errnoCode(err) ?? errorMessage(err)}`, {
      exitCode: ExitCode.DATA,
      path,
    });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_BYTES)
      throw new GuardError(`${path} is not a regular file under 4 MiB`, {
        exitCode: ExitCode.DATA,
        path,
        hint: 'move it away; restored sessions lose their holds',
      });
    const b = Buffer.alloc(st.size);
    let off = 0;
    while (off < b.length) {
      const n = readSync(fd, b, off, b.length - off, off);
      if (n === 0) break;
      off += n;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(b.subarray(0, off).toString('utf8'));
    } catch {
      throw new GuardError(`${path} is not valid JSON`, {
        exitCode: ExitCode.DATA,
        path,
        hint: 'move it away; restored sessions lose their holds',
      });
    }
    const list = (doc as { holds?: unknown })?.holds;
    if (!Array.isArray(list)) throw new GuardError(`${path}: holds must be a list`, { exitCode: ExitCode.DATA, path });
    return list.filter(
      (h): h is Hold =>
        typeof h === 'object' &&
        h !== null &&
        ['home', 'agent', 'key', 'restored_at', 'until'].every(
          (k) => typeof (h as Record<string, unknown>)[k] === 'string',
        ) &&
        Number.isFinite(instantMs((h as Hold).until)),
    );
  } finally {
    closeSync(fd);
  }
}

/** The holds of one home that have not ended at nowMs. */
export function activeHolds(stateDir: string, homeReal: string, nowMs: number): Hold[] {
  return readHolds(stateDir).filter((h) => h.home === homeReal && instantMs(h.until) > nowMs);
}

function writeHolds(stateDir: string, holds: Hold[]): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileAtomic(holdsPath(stateDir), JSON.stringify({ holds }, null, 1) + '\n', { mode: 0o600 });
}

/** Add (or renew) holds; drops every expired one. */
export function addHolds(stateDir: string, add: Hold[], nowMs: number): void {
  const same = (a: Hold, b: Hold) => a.home === b.home && a.agent === b.agent && a.key === b.key;
  const kept = readHolds(stateDir).filter((h) => instantMs(h.until) > nowMs && !add.some((x) => same(x, h)));
  writeHolds(stateDir, [...kept, ...add]);
}

/** End the holds of one home whose key is `key`; returns what was released. */
export function releaseHolds(
  stateDir: string,
  homeReal: string,
  match: (key: string) => boolean,
  nowMs: number,
): Hold[] {
  const all = readHolds(stateDir);
  const gone = all.filter((h) => h.home === homeReal && match(h.key));
  if (gone.length > 0)
    writeHolds(
      stateDir,
      all.filter((h) => !gone.includes(h) && instantMs(h.until) > nowMs),
    );
  return gone;
}

export function holdDetail(h: { restored_at: string; until: string }): string {
  return `restored on ${h.restored_at.slice(0, 10)}, held until ${h.until.replace(/:\d\d\.\d{3}Z$/, 'Z').replace('T', ' ')}`;
}
