import { execFile } from 'node:child_process';
import { closeSync, openSync, statSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, errorMessage } from '../errors.js';

/**
 * Removing the head of a file in place: fallocate(2) with FALLOC_FL_COLLAPSE_RANGE, through
 * util-linux's `fallocate --collapse-range` (Node has no binding for fallocate). The kernel
 * removes the byte range [0, length) and shifts the rest down while holding the inode lock,
 * so a writer that opened the file O_APPEND (PicoClaw does, docs/logs.md) has its next write
 * land at the new end of file: nothing it writes before, during or after is lost.
 *
 * Only some file systems do it (ext4 on extent-mapped files, xfs, f2fs), and only in whole
 * blocks, never reaching the end of the file (fallocate(2), "Collapsing file space").
 * Elsewhere it fails with EOPNOTSUPP; `probeCollapse` finds out once per folder with a
 * scratch file of our own, before the real log is touched.
 */
export class CollapseError extends Error {
  constructor(
    message: string,
    /** The file system (or the missing tool) cannot do it at all: not worth trying again. */
    readonly unsupported: boolean,
  ) {
    super(message);
  }
}

/** Remove [0, length) of `path`. */
export type Collapser = (path: string, length: number) => Promise<void>;

export const fallocateCollapse: Collapser = (path, length) =>
  new Promise((resolve, reject) => {
    execFile(
      'fallocate',
      ['--collapse-range', '--offset', '0', '--length', String(length), '--', path],
      { timeout: 60_000, windowsHide: true },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return reject(new CollapseError('fallocate (util-linux) is not installed', true));
        const text = String(stderr).trim().split('\n').pop() ?? '';
        const unsupported = /not supported/i.test(text);
        reject(new CollapseError(text.replace(/^fallocate: /, '') || err.message, unsupported));
      },
    );
  });

/**
 * File systems (statfs f_type, linux/magic.h) known to refuse FALLOC_FL_COLLAPSE_RANGE, so the
 * probe is not even written there. Any other is probed.
 */
const NO_COLLAPSE: ReadonlyMap<number, string> = new Map([
  [0x01021994, 'tmpfs'],
  [0x858458f6, 'ramfs'],
  [0x9123683e, 'btrfs'],
  [0x4d44, 'vfat'],
  [0x2011bab0, 'exfat'],
  [0x5346544e, 'ntfs'],
  [0x6969, 'nfs'],
  [0xff534d42, 'cifs'],
  [0x65735546, 'fuse'],
  [0x2fc12fc1, 'zfs'],
  [0x73717368, 'squashfs'],
]);

/** The block size the collapse must be a multiple of: the file system's and the file's. */
export function collapseBlock(path: string): number {
  const fsBlock = statfsSync(path).bsize;
  const fileBlock = statSync(path).blksize;
  return Math.max(4096, fsBlock, fileBlock);
}

/** `transient`: the probe itself failed (no space, no permission): asked again next time, not remembered. */
export type Support = { ok: true; block: number } | { ok: false; reason: string; transient?: true };

const probed = new Map<string, Support>();

/**
 * Whether collapsing works in `dir` (the folder of the log): known file systems answer from
 * their type; any other by collapsing one block of a two-block scratch file of our own
 * (`.picoclaw-guard-collapse-probe.<pid>`, removed at once). Cached per folder for the life of
 * the process, except a probe that could not be written (it is tried again next time).
 */
export async function probeCollapse(dir: string, collapse: Collapser = fallocateCollapse): Promise<Support> {
  const cached = probed.get(dir);
  if (cached && collapse === fallocateCollapse) return cached;
  const r = await probeOnce(dir, collapse);
  if (collapse === fallocateCollapse && !(r.ok === false && r.transient)) probed.set(dir, r);
  return r;
}

/** What the file system's type alone says (no write: dry-runs): a refusal, or the block size to probe with. */
export function collapseByType(dir: string): Support {
  try {
    const s = statfsSync(dir);
    const known = NO_COLLAPSE.get(s.type);
    if (known) return { ok: false, reason: `${known} cannot collapse a range of a file (fallocate(2))` };
    return { ok: true, block: Math.max(4096, s.bsize) };
  } catch (err) {
    return { ok: false, reason: `cannot statfs ${dir}: ${(err as Error).message}` };
  }
}

/** What the probe found in this folder earlier in this process, if it ran. */
export function probedBefore(dir: string): Support | undefined {
  return probed.get(dir);
}

function transient(reason: string): Support {
  return { ok: false, reason, transient: true };
}

async function probeOnce(dir: string, collapse: Collapser): Promise<Support> {
  const byType = collapseByType(dir);
  if (!byType.ok) return byType;
  const block = byType.block;
  const probe = join(dir, `.picoclaw-guard-collapse-probe.${process.pid}`);
  try {
    const fd = openSync(probe, 'wx', 0o600);
    try {
      const buf = Buffer.alloc(block, 0x0a);
      writeSync(fd, buf);
      writeSync(fd, buf);
    } finally {
      closeSync(fd);
    }
    await collapse(probe, block);
    const after = statSync(probe).size;
    if (after !== block) return { ok: false, reason: `collapsing a scratch file left ${after} bytes, not ${block}` };
    return { ok: true, block };
  } catch (err) {
    if (err instanceof CollapseError)
      return err.unsupported ? { ok: false, reason: err.message } : transient(err.message);
    // Writing the scratch file failed (a full card: exactly when a cut is wanted): try again next time.
    return transient(`cannot write the probe: ${errnoCode(err) ?? errorMessage(err)}`);
  } finally {
    try {
      unlinkSync(probe);
    } catch {
      /* never created */
    }
  }
}
