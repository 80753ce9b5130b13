import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Write a file so that readers see either the old content or the new one, never
 * a torn file: write a temp file beside it, fsync, rename over the target, fsync
 * the directory (as PicoClaw's own fileutil.WriteFileAtomic does).
 * The temp name is `.<name>.tmp-<pid>`, never a `*.json`, so that it is never
 * taken for a PicoClaw session (and this is never called on a sessions folder).
 * The temp file is opened without following a symlink and without blocking, and must be a regular
 * file: a FIFO or a symlink put at the temp name is refused (ENXIO, ELOOP, ENOTREG), never waited on
 * or written through.
 */
export interface AtomicOptions {
  mode?: number;
  /**
   * Temp file name; default `.<name>.tmp-<pid>`. In a sessions folder it must start with `.tmp-` (PicoClaw ignores
   * those).
   */
  tmpName?: string;
  /** Refuse (EEXIST) instead of replacing an existing target. */
  noOverwrite?: boolean;
  /**
   * No fsync of the file or its folder: the rename still makes the new content appear whole or not at all,
   * but a power cut may leave the old content, or an empty or unreadable file. For a cache whose loss costs
   * only work, read by a reader that takes such a file as none: two flushes of the card saved per write.
   */
  unsynced?: boolean;
}

export function writeFileAtomic(path: string, data: string | Uint8Array, opts: AtomicOptions | number = {}): void {
  const o: AtomicOptions = typeof opts === 'number' ? { mode: opts } : opts;
  const dir = dirname(path);
  const tmp = join(dir, o.tmpName ?? `.${basename(path)}.tmp-${process.pid}`);
  const fd = openSync(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    o.mode ?? 0o644,
  );
  try {
    if (!fstatSync(fd).isFile())
      throw Object.assign(new Error(`${tmp} is not a regular file`), { code: 'ENOTREG', path: tmp });
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    if (!o.unsynced) fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
  closeSync(fd);
  try {
    if (o.noOverwrite) {
      // link() fails with EEXIST instead of replacing: nothing that appeared meanwhile is overwritten.
      linkSync(tmp, path);
      unlinkSync(tmp);
    } else renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
  if (!o.unsynced) fsyncDir(dir);
}

/** fsync a directory so a rename or unlink in it survives a power cut. Best effort. */
export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some file systems (and platforms) refuse fsync on a directory; the rename stands anyway.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
