import { unlinkSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { sqlite } from './sqlite.js';
import { readSmallText } from './smallfile.js';

/**
 * A lock that a dead holder cannot keep.
 *
 * Node has no flock(2), so the lock is SQLite's own: an empty lock database held in
 * an EXCLUSIVE transaction for the life of the pass. SQLite takes POSIX fcntl locks,
 * which the kernel releases when the holding process dies, SIGKILL included, so a
 * killed pass never blocks the next one and there is no stale-lock takeover race.
 * Nothing is written to the lock file (an empty transaction changes no page); a small
 * `.holder` note beside it names the holder for the "already running" message.
 */
export interface LockHolder {
  pid: number;
  command: string;
  since: string;
}

export interface Lock {
  path: string;
  release(): void;
}

export type LockResult = { ok: true; lock: Lock } | { ok: false; holder: LockHolder | null };



export function tryLock(path: string, command: string): LockResult {
  const Database = sqlite();
  const db = new Database(path, { timeout: 0 });
  try {
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if (errnoCode(err) === 'SQLITE_BUSY' || /locked|busy/i.test(String(err))) {
      return { ok: false, holder: readHolder(path) };
    }
    throw err;
  }
  const holderPath = `${path}.holder`;
  try {
    writeFileAtomic(holderPath, JSON.stringify({ pid: process.pid, command, since: new Date().toISOString() }) + '\n');
  } catch {
    // The note is only for messages; the lock itself is held.
  }
  let released = false;
  return {
    ok: true,
    lock: {
      path,
      release() {
        if (released) return;
        released = true;
        try { unlinkSync(holderPath); } catch { /* gone */ }
        try { db.exec('ROLLBACK'); } catch { /* already ended */ }
        db.close();
      },
    },
  };
}

function readHolder(path: string): LockHolder | null {
  try {
    const h = JSON.parse(readSmallText(`${path}.holder`, 'state')) as LockHolder;
    return typeof h.pid === 'number' ? h : null;
  } catch {
    return null;
  }
}

/** Whether a process exists (EPERM means it exists but belongs to someone else). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}
