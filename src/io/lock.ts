import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, unlinkSync } from 'node:fs';
import { ExitCode, GuardError, diskFault, errnoCode, errorMessage } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { sqliteFilesProblem } from './regular-file.js';
import { sqlite, type Database } from './sqlite.js';
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
  let db = openLock(path);
  let held = begin(db);
  if (held === 'not_a_lock') {
    db.close();
    resetGarbageLock(path);
    db = openLock(path);
    held = begin(db);
    if (held === 'not_a_lock') {
      db.close();
      throw lockError(path, 'is still not a lock after it was emptied', 'delete it (it holds no data) and run again');
    }
  }
  if (held === 'busy') {
    db.close();
    return { ok: false, holder: readHolder(path) };
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
        try {
          unlinkSync(holderPath);
        } catch {
          /* gone */
        }
        try {
          db.exec('ROLLBACK');
        } catch {
          /* already ended */
        }
        db.close();
      },
    },
  };
}

function lockError(path: string, why: string, hint: string, cause?: unknown): GuardError {
  // A full disk is not a broken lock: its own exit code, and the hint that helps.
  if (cause !== undefined && diskFault(cause) === 'no_space')
    return new GuardError(`the lock file ${path} ${why}: the disk is full; nothing was deleted`, {
      exitCode: ExitCode.NO_SPACE,
      path,
      hint: 'free some space on that file system and run again',
    });
  return new GuardError(`the lock file ${path} ${why}`, { exitCode: ExitCode.FAILURE, path, hint });
}

function openLock(path: string): Database {
  const Database = sqlite();
  // SQLite's open(2) of the lock (and of a -journal or -wal beside it) blocks on a FIFO: checked non-blocking first.
  const notRegular = sqliteFilesProblem(path, { dbOptional: true });
  if (notRegular)
    throw lockError(
      path,
      `cannot be used: ${notRegular}`,
      'delete whatever is there (a lock holds no data) and run again',
    );
  try {
    return new Database(path, { timeout: 0 });
  } catch (err) {
    throw lockError(
      path,
      `cannot be opened (${errnoCode(err) ?? errorMessage(err)})`,
      'it must be a file this user can write; delete whatever is there (a lock holds no data)',
      err,
    );
  }
}

function begin(db: Database): 'held' | 'busy' | 'not_a_lock' {
  try {
    db.exec('BEGIN EXCLUSIVE');
    return 'held';
  } catch (err) {
    const code = errnoCode(err) ?? '';
    if (code === 'SQLITE_BUSY' || /locked|busy/i.test(String(err))) return 'busy';
    if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT') || /not a database|malformed/i.test(String(err)))
      return 'not_a_lock';
    db.close();
    throw lockError(
      db.name,
      `cannot be locked (${code || errorMessage(err)})`,
      'check the folder it is in; delete the file if it is in the way (a lock holds no data)',
      err,
    );
  }
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * A lock file that is not a database (garbage written by someone, a torn copy) holds
 * no data: it is emptied in place, and an empty file is a valid empty database.
 * In place, not unlinked and recreated: two passes that both met the garbage then
 * still lock the same inode, so they cannot both hold "the" lock. A symlink or
 * anything but a regular file is left alone and named in the error.
 */
function resetGarbageLock(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw lockError(
      path,
      `is not a lock and cannot be replaced (${errnoCode(err) ?? errorMessage(err)})`,
      'delete it (a lock holds no data) and run again',
    );
  }
  try {
    if (!fstatSync(fd).isFile())
      throw lockError(path, 'is not a regular file', 'delete it (a lock holds no data) and run again');
    const head = Buffer.alloc(SQLITE_MAGIC.length);
    const n = readSync(fd, head, 0, head.length, 0);
    // A real SQLite database that will not lock is someone's data: never emptied.
    if (n === head.length && head.equals(SQLITE_MAGIC))
      throw lockError(
        path,
        'is a damaged SQLite database',
        "it is not the guard's lock if it holds data; move it away and run again",
      );
    ftruncateSync(fd, 0);
  } finally {
    closeSync(fd);
  }
}

function readHolder(path: string): LockHolder | null {
  try {
    const h = JSON.parse(readSmallText(`${path}.holder`, 'state')) as LockHolder;
    return typeof h.pid === 'number' ? h : null;
  } catch {
    return null;
  }
}
