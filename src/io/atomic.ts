import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Write a file so that readers see either the old content or the new one, never
 * a torn file: write a temp file beside it, fsync, rename over the target, fsync
 * the directory (as PicoClaw's own fileutil.WriteFileAtomic does).
 * The temp name is `.<name>.tmp-<pid>`, never a `*.json`, so that it is never
 * taken for a PicoClaw session (and this is never called on a sessions folder).
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}`);
  const fd = openSync(tmp, 'w', mode);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw err;
  }
  fsyncDir(dir);
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
