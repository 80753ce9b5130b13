import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
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
  /** Told what the open file is (its fstat), before it is checked and read. */
  stat?: (st: Stats) => void;
}

export function fileType(mode: number): string {
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

/**
 * The buffer reads go into: one for the process, lent to one read at a time. A fresh buffer per
 * read (plus one more to see EOF) is external memory V8 frees only at its next collection: across
 * the metas of a store scan that, not the files, was the scan's peak (BENCHMARKS.md section 10d).
 */
const SCRATCH_BYTES = 64 * 1024;
let scratch: Buffer | null = null;
let scratchLent = false;

/** Read up to EOF, at most `max` bytes; the result may be a view of `first`. */
function readToEof(fd: number, path: string, max: number, first: Buffer): Buffer {
  // Read until EOF, not to st.size: a file that grows while it is read is still capped.
  const full: Buffer[] = [];
  let total = 0;
  let buf = first;
  let off = 0;
  for (;;) {
    if (off === buf.length) {
      full.push(buf);
      buf = Buffer.allocUnsafe(SCRATCH_BYTES);
      off = 0;
    }
    let n: number;
    const asked = Math.min(buf.length - off, max + 1 - total);
    try {
      n = readSync(fd, buf, off, asked, null);
    } catch (err) {
      const code = errnoCode(err) ?? 'error';
      throw new SmallFileError(path, 'unreadable', code, `cannot read ${path}: ${code}`);
    }
    if (n === 0) break;
    total += n;
    off += n;
    if (total > max)
      throw new SmallFileError(path, 'too_large', 'EFBIG', `${path} is larger than ${formatBytes(max, CAP)}`);
    // A regular file's read gives less than asked only at its end (read(2)): no read for the 0.
    if (n < asked) break;
  }
  if (full.length === 0) return buf.subarray(0, off);
  full.push(buf.subarray(0, off));
  return Buffer.concat(full, total);
}

/**
 * Read a regular file of at most the kind's cap and hand its bytes to `use`, whose result is
 * returned; throws SmallFileError otherwise. The bytes may live in a buffer that is reused once
 * `use` returns: `use` must not keep them (readSmallFile returns a copy of its own).
 */
export function withSmallFile<T>(
  path: string,
  kind: SmallFileKind,
  opts: SmallFileOptions,
  use: (bytes: Buffer) => T,
): T {
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
  // A `use` that reads another small file gets a buffer of its own.
  const lend = !scratchLent;
  try {
    const st = fstatSync(fd);
    opts.stat?.(st);
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
    let first: Buffer;
    if (lend) {
      scratchLent = true;
      first = scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES);
    } else first = Buffer.allocUnsafe(Math.min(st.size + 1, SCRATCH_BYTES));
    const bytes = readToEof(fd, path, max, first);
    // Closed before `use`, which may read other files; never closed twice.
    const open = fd;
    fd = -1;
    closeSync(open);
    return use(bytes);
  } finally {
    if (fd >= 0) closeSync(fd);
    if (lend) scratchLent = false;
  }
}

/** Read a regular file of at most the kind's cap; throws SmallFileError otherwise. */
export function readSmallFile(path: string, kind: SmallFileKind, opts: SmallFileOptions = {}): Buffer {
  return withSmallFile(path, kind, opts, (bytes) => (bytes.buffer === scratch?.buffer ? Buffer.from(bytes) : bytes));
}

/** readSmallFile as UTF-8 text. */
export function readSmallText(path: string, kind: SmallFileKind, opts: SmallFileOptions = {}): string {
  return readSmallFile(path, kind, opts).toString('utf8');
}
