import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import { formatBytes } from './bytes.js';

/**
 * The one way the guard reads a small file whose path a user (or a neighbour) controls:
 * the guard config, PicoClaw's config.json, the PID file, session metas, the guard's own
 * state notes.
 *
 * A plain readFileSync blocks forever on a FIFO (the daemon then ignores SIGTERM, since
 * its event loop never runs again) and reads `/dev/zero` until memory runs out. So the
 * file is opened with O_NONBLOCK (opening a FIFO returns at once instead of waiting for
 * a writer), checked with fstat on the open descriptor (no race with a rename), refused
 * unless it is a regular file, and read up to a cap that depends on what the file is.
 * O_NOFOLLOW is for callers that must not follow a symlink at the last component
 * (a sessions folder, where PicoClaw itself skips symlinks).
 */
export const SMALL_FILE_CAPS = {
  /** `.picoclaw.pid` is one short JSON object (pid, token, version, port, host). */
  pid: 1024,
  /** The guard config and PicoClaw's config.json: hand-edited JSON, never megabytes. */
  config: 4 * 1024 * 1024,
  /** A session's `.meta.json`: key, counters, times, a summary and a list of aliases. */
  meta: 4 * 1024 * 1024,
  /** The guard's own notes (lock holder, last-run marker, latch). */
  state: 64 * 1024,
  /** The prune history: one line per pass, trimmed by its writer. */
  history: 64 * 1024 * 1024,
  /** systemd unit files. */
  unit: 1024 * 1024,
} as const;

/** A cap as it was set: every cap is a whole number of KiB or MiB ("1 KiB", "4 MiB"). */
const CAP = { decimals: 0 };

export type SmallFileKind = keyof typeof SMALL_FILE_CAPS;

export type SmallFileProblem = 'absent' | 'not_regular' | 'too_large' | 'symlink' | 'unreadable';

/** Why a small file could not be read; `message` names the file and says why, and never quotes its content. */
export class SmallFileError extends Error {
  constructor(
    readonly path: string,
    readonly problem: SmallFileProblem,
    /** The errno code for `absent`/`unreadable`, the file type for `not_regular`. */
    readonly detail: string,
    message: string,
  ) {
    super(message);
    this.name = 'SmallFileError';
  }
  get code(): string {
    return this.problem === 'absent' ? 'ENOENT' : this.detail;
  }
}

export interface SmallFileOptions {
  /** Refuse a symlink at the last component (ELOOP) instead of following it. */
  noFollow?: boolean;
  /** Override the kind's cap (tests). */
  maxBytes?: number;
}

function fileType(mode: number): string {
  switch (mode & constants.S_IFMT) {
    case constants.S_IFDIR:
      return 'a directory';
    case constants.S_IFIFO:
      return 'a FIFO';
    case constants.S_IFCHR:
      return 'a character device';
    case constants.S_IFBLK:
      return 'a block device';
    case constants.S_IFSOCK:
      return 'a socket';
    default:
      return 'not a regular file';
  }
}

/** Read a regular file of at most the kind's cap; throws SmallFileError otherwise. */
export function readSmallFile(path: string, kind: SmallFileKind, opts: SmallFileOptions = {}): Buffer {
  const max = opts.maxBytes ?? SMALL_FILE_CAPS[kind];
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (opts.noFollow ? constants.O_NOFOLLOW : 0));
  } catch (err) {
    const code = errnoCode(err) ?? 'error';
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new SmallFileError(path, 'absent', code, `${path} does not exist`);
    if (code === 'ELOOP' && opts.noFollow)
      throw new SmallFileError(path, 'symlink', code, `${path} is a symlink (not followed)`);
    throw new SmallFileError(path, 'unreadable', code, `cannot read ${path}: ${code}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const type = fileType(st.mode);
      throw new SmallFileError(path, 'not_regular', type, `${path} is ${type}, not a regular file`);
    }
    if (st.size > max)
      throw new SmallFileError(
        path,
        'too_large',
        'EFBIG',
        `${path} is larger than ${formatBytes(max, CAP)} (${st.size} bytes)`,
      );
    // Read until EOF, not to st.size: a file that grows while it is read is still capped.
    const chunks: Buffer[] = [];
    let total = 0;
    // The first read is sized to the file (plus a byte to see EOF): a 300-byte meta must not
    // cost a 64 KiB buffer each, which across 20,000 metas is the process's peak memory.
    let want = Math.min(st.size + 1, 64 * 1024);
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(want, max + 1 - total));
      want = 64 * 1024;
      let n: number;
      try {
        n = readSync(fd, chunk, 0, chunk.length, null);
      } catch (err) {
        const code = errnoCode(err) ?? 'error';
        throw new SmallFileError(path, 'unreadable', code, `cannot read ${path}: ${code}`);
      }
      if (n === 0) break;
      total += n;
      if (total > max)
        throw new SmallFileError(path, 'too_large', 'EFBIG', `${path} is larger than ${formatBytes(max, CAP)}`);
      chunks.push(chunk.subarray(0, n));
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** readSmallFile as UTF-8 text. */
export function readSmallText(path: string, kind: SmallFileKind, opts: SmallFileOptions = {}): string {
  return readSmallFile(path, kind, opts).toString('utf8');
}

/** readSmallText, or null when the file does not exist. */
export function readSmallTextIfExists(path: string, kind: SmallFileKind, opts: SmallFileOptions = {}): string | null {
  try {
    return readSmallText(path, kind, opts);
  } catch (err) {
    if (err instanceof SmallFileError && err.problem === 'absent') return null;
    throw err;
  }
}
