import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import { fileType } from './smallfile.js';

/**
 * Files the guard hands to another reader (SQLite opens seahorse.db, its -wal, -shm and
 * -journal, and the lock database itself, with a blocking open(2)), or opens for a stream:
 * checked first, so that none of them can block the guard.
 *
 * A FIFO opened without O_NONBLOCK waits for a writer for ever; a character device such as
 * /dev/zero reads without end. So the path is opened here with O_NONBLOCK (a FIFO returns at
 * once), the open descriptor is checked with fstat (the same file, whatever renames happen),
 * and anything but a regular file is refused with a message naming it. The check and the
 * other reader's open are two opens: a file swapped in between is a race this narrows to
 * microseconds, not one it closes; the readers that can take a descriptor use openRegular.
 */

/** Why path is not a regular file the guard may open (`P is a FIFO, not a regular file`), or null. */
export function notRegularFile(
  path: string,
  o: { optional?: boolean; noFollow?: boolean } = {},
): { problem: string; code: string } | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (o.noFollow ? constants.O_NOFOLLOW : 0));
  } catch (err) {
    const code = errnoCode(err) ?? 'error';
    if (code === 'ENOENT' && o.optional) return null;
    if (code === 'ELOOP' && o.noFollow) return { problem: `${path} is a symlink, not a regular file`, code };
    // No permission to read is for the real reader to report; here only the type matters.
    if (code === 'EACCES' || code === 'EPERM') return null;
    return { problem: `${path} cannot be opened (${code})`, code };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { problem: `${path} is ${fileType(st.mode)}, not a regular file`, code: 'ENOTREG' };
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A SQLite database and the files SQLite opens beside it, each absent or regular; the first problem, or null. */
export function sqliteFilesProblem(path: string, o: { dbOptional?: boolean } = {}): string | null {
  const db = notRegularFile(path, { optional: o.dbOptional });
  if (db) return db.problem;
  for (const suffix of ['-wal', '-shm', '-journal']) {
    const side = notRegularFile(`${path}${suffix}`, { optional: true });
    if (side) return side.problem;
  }
  return null;
}

/**
 * open(2) with O_NONBLOCK added, refused (the descriptor closed, a NotRegular thrown) unless it is a
 * regular file. O_NONBLOCK changes nothing for a regular file's reads and writes.
 */
export function openRegular(path: string, flags: number, mode?: number): number {
  const fd = openSync(path, flags | constants.O_NONBLOCK, mode);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegular(path, fileType(st.mode));
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

export class NotRegular extends Error {
  readonly code = 'ENOTREG';
  constructor(
    readonly path: string,
    readonly type: string,
  ) {
    super(`${path} is ${type}, not a regular file`);
    this.name = 'NotRegular';
  }
}
