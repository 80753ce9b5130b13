import { closeSync, constants, fstatSync, openSync, statSync, type Stats } from 'node:fs';
import { errnoCode, errorMessage } from '../errors.js';
import { ArchiveInvalid } from './fields.js';

/*
 * Nothing in an archive folder can block a read: an archive is opened non-blocking after a stat,
 * and must be a regular file by fstat of what was opened.
 */

/** What kind of thing a stat describes, for the reason a non-file is skipped. */
export function fileKind(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Open an archive for reading without ever blocking: stat first (a FIFO is not opened at all),
 * then open non-blocking (what was swapped in meanwhile cannot block the open) and check by fstat
 * that what was opened is a regular file. Symlinks to regular files are followed.
 */
export function openArchive(path: string): number {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (err) {
    throw new ArchiveInvalid(path, 'the archive', `cannot be read (${errnoCode(err) ?? errorMessage(err)})`);
  }
  const notFile = (s: Stats) =>
    new ArchiveInvalid(path, 'the archive', `is ${fileKind(s)}, not an archive file: not read`);
  if (!st.isFile()) throw notFile(st);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new ArchiveInvalid(path, 'the archive', `cannot be opened (${errnoCode(err) ?? errorMessage(err)})`);
  }
  const now = fstatSync(fd);
  if (!now.isFile()) {
    closeSync(fd);
    throw notFile(now);
  }
  return fd;
}
