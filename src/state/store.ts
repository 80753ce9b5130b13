import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errnoCode, errorMessage, ExitCode, GuardError } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../io/atomic.js';
import { fileType, SMALL_FILE_CAPS, SmallFileError, withSmallFile } from '../io/smallfile.js';

/**
 * The one store for the guard's own files in its state folder (src/io/statedir.ts): typed JSON
 * documents (`jsonState`, `jsonFile`) and one append-only JSON-lines file (`jsonLines`, the prune
 * history). Every state module in this folder reads and writes through it.
 *
 * The error convention, the same for every state file:
 *
 * Reading never throws and never blocks. `read` returns `{ value, status, problem }`:
 * - `ok`: the file is there and is the document; `problem` is null.
 * - `missing`: no file (or no state folder); `value` is the empty value and `problem` is null: a
 *   state file that was never written is not a fault.
 * - `damaged`: a regular file that is not the document (not JSON, torn, a foreign shape);
 * - `unreadable`: not a regular file (a FIFO, a directory, a device, a symlink: the state folder is the
 *   guard's own, and a symlink in it is not followed), larger than its cap, or not readable
 *   (EACCES, EIO). For both, `value` is the empty value (never a last good value remembered in
 *   memory: a shell command and the daemon reading the same damaged file must see the same thing) and
 *   `problem` is one line naming the file, what is wrong and what to do.
 * The file is opened with O_NONBLOCK and O_NOFOLLOW and checked with fstat before a byte is read
 * (src/io/smallfile.ts): a FIFO or a device at a state path is refused at once.
 *
 * What a problem means is the module's decision, and each says it beside its read: a file whose
 * empty value is safe (a cache, a note, a marker: the guard only does more work, never deletes
 * more) takes the empty value and passes the problem on where it can be shown; a file whose empty
 * value could delete a session (pins, restore holds, the deletion journal) turns the problem into
 * a GuardError (exit 3) with `refusal`, so that a pass that cannot read it deletes nothing.
 *
 * Writing is atomic and throws one type. `write` writes a temp file `.<name>.tmp-<pid>` in the same
 * folder (never a `*.json`, opened without following a symlink or blocking), fsyncs it, renames it
 * over the file and fsyncs the folder: after a kill or a power cut the file is the old document or
 * the new one, never a mix. A failure throws a StateWriteError whose `code` is the errno (ENOSPC,
 * EDQUOT, EROFS, EACCES, EPERM, EIO, ENXIO, ENOTREG ...), so `errnoCode` and `diskFault` read it like
 * the system error it wraps; the old file is left as it was and the temp file is removed. A temp
 * file left by a killed writer is never read, and is replaced by the next write of the same
 * process id; temp files of other process ids are not touched (one may be another writer's, now).
 */

/** An object (not null, not an array): what most state documents are. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export type ReadStatus = 'ok' | 'missing' | 'damaged' | 'unreadable';

export interface StateRead<T> {
  value: T;
  status: ReadStatus;
  /** One line naming the file, what is wrong and what to do; null for `ok` and `missing`. */
  problem: string | null;
}

/** A state file that could not be written; `code` is the errno of the step that failed. */
export class StateWriteError extends Error {
  readonly code: string;
  constructor(
    readonly path: string,
    code: string | undefined,
    cause: unknown,
  ) {
    const c = code ?? 'EIO';
    super(`cannot write ${path}: ${c}${WRITE_HINTS[c] ? ` (${WRITE_HINTS[c]})` : ''}`, { cause });
    this.name = 'StateWriteError';
    this.code = c;
  }
}

const WRITE_HINTS: Record<string, string> = {
  ENOSPC: 'the disk is full: free some space',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the state folder is on a read-only file system: pass a writable --state-dir',
  EACCES: 'no permission: run as the user that owns the state folder, or pass --state-dir',
  EPERM: 'no permission: run as the user that owns the state folder, or pass --state-dir',
  ENOTDIR: 'the state folder is not a folder: pass a folder as --state-dir',
  ENOTREG: 'something that is not a regular file is in its place: move it away',
  ENXIO: 'a FIFO is in its place: move it away',
  EISDIR: 'a folder is in its place: move it away',
  ELOOP: 'a symlink is in its place: move it away',
};

export interface JsonSpec<T> {
  /** What the file holds, for messages: "the restore holds". */
  what: string;
  /** The document from the parsed file, or null when it is not one. */
  validate(raw: unknown): T | null;
  /** The value of a missing or unusable file (a fresh one each call: callers may change it). */
  empty(): T;
  /** The file's bytes; JSON.stringify(value) + "\n" when not given. */
  serialize?(value: T): string;
  /** The file's text to what `validate` takes; JSON.parse when not given. */
  parse?(text: string): unknown;
  /** Read cap (bytes); the state cap (src/io/smallfile.ts) when not given. */
  maxBytes?: number;
  /** The file's mode (0o644 when not given) and the folder's, when the write creates it. */
  mode?: number;
  dirMode?: number;
  /**
   * A cache: written without fsyncs (src/io/atomic.ts, `unsynced`). Only for a file whose loss, or an empty
   * or torn one after a power cut (which `validate` refuses), costs work and never a wrong answer.
   */
  cache?: boolean;
  /** What to do about a damaged or unreadable file, for the problem line: "move it away: ..." */
  remedy: string;
}

function readProblem(path: string, err: unknown, remedy: string): { status: ReadStatus; problem: string | null } {
  if (err instanceof SmallFileError) {
    if (err.problem === 'absent') return { status: 'missing', problem: null };
    if (err.problem === 'symlink') return { status: 'unreadable', problem: `${path} is a symlink: ${remedy}` };
    return { status: 'unreadable', problem: `${err.message}: ${remedy}` };
  }
  return { status: 'unreadable', problem: `cannot read ${path}: ${errnoCode(err) ?? errorMessage(err)}: ${remedy}` };
}

/** Read one JSON document at `path`; never throws, never blocks (the convention above). */
export function readJsonFile<T>(path: string, spec: JsonSpec<T>): StateRead<T> {
  let raw: unknown;
  try {
    raw = withSmallFile(path, 'state', { noFollow: true, maxBytes: spec.maxBytes ?? SMALL_FILE_CAPS.state }, (b) => {
      const text = b.toString('utf8');
      try {
        return { text: spec.parse ? spec.parse(text) : (JSON.parse(text) as unknown) };
      } catch {
        return null;
      }
    });
  } catch (err) {
    return { value: spec.empty(), ...readProblem(path, err, spec.remedy) };
  }
  if (raw === null)
    return {
      value: spec.empty(),
      status: 'damaged',
      problem: `${path} is not valid JSON (torn or foreign): ${spec.remedy}`,
    };
  const value = spec.validate((raw as { text: unknown }).text);
  if (value === null)
    return { value: spec.empty(), status: 'damaged', problem: `${path} is not ${spec.what}: ${spec.remedy}` };
  return { value, status: 'ok', problem: null };
}

function stateWrite(path: string, step: () => void): void {
  try {
    step();
  } catch (err) {
    if (err instanceof StateWriteError) throw err;
    throw new StateWriteError(path, errnoCode(err), err);
  }
}

/** Write one JSON document at `path`, atomically; throws StateWriteError (the convention above). */
export function writeJsonFile<T>(path: string, value: T, spec: JsonSpec<T>): void {
  const text = spec.serialize ? spec.serialize(value) : JSON.stringify(value) + '\n';
  stateWrite(path, () => {
    mkdirSync(dirname(path), { recursive: true, mode: spec.dirMode });
    writeFileAtomic(path, text, { mode: spec.mode ?? 0o644, unsynced: spec.cache === true });
  });
}

/** Remove a state file (a missing one is fine) and fsync its folder; throws StateWriteError. */
export function removeStateFile(path: string): void {
  stateWrite(path, () => {
    try {
      unlinkSync(path);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    fsyncDir(dirname(path));
  });
}

/** A JSON document of a fixed name in the state folder. */
export interface JsonState<T> {
  readonly name: string;
  path(stateDir: string): string;
  read(stateDir: string): StateRead<T>;
  write(stateDir: string, value: T): void;
  /**
   * Read, change, write: `change` gets the current value (the empty one for a missing file) and
   * returns the new one, or null to write nothing. A damaged or unreadable file is not written over
   * unless `overwriteDamaged` (a cache whose loss only costs work); otherwise the problem is thrown
   * as `refuse(problem)` returns it. Returns what the file holds afterwards.
   */
  update(
    stateDir: string,
    change: (current: T) => T | null,
    o?: { overwriteDamaged?: boolean; refuse?: (problem: string) => Error },
  ): T;
}

export function jsonState<T>(name: string, spec: JsonSpec<T>): JsonState<T> {
  const path = (dir: string) => join(dir, name);
  return {
    name,
    path,
    read: (dir) => readJsonFile(path(dir), spec),
    write: (dir, value) => writeJsonFile(path(dir), value, spec),
    update(dir, change, o = {}) {
      const cur = readJsonFile(path(dir), spec);
      if (cur.problem && !o.overwriteDamaged) throw (o.refuse ?? ((p: string) => new Error(p)))(cur.problem);
      const next = change(cur.value);
      if (next === null) return cur.value;
      writeJsonFile(path(dir), next, spec);
      return next;
    },
  };
}

/**
 * The problem of a state file a pass must not act without (pins, holds, the deletion journal), as the
 * GuardError its reader throws: exit 3, its data cannot be read safely.
 */
export function refusal(problem: string, path: string, hint?: string): GuardError {
  return new GuardError(problem, { exitCode: ExitCode.DATA, path, hint });
}

export interface LinesSpec<T> {
  /** One entry from a parsed line, or null to skip the line. */
  validate(raw: unknown): T | null;
  /** Past this size an append first cuts the file to its newest `keepBytes` (whole lines). */
  maxBytes: number;
  keepBytes: number;
  /** Only the newest `readBytes` are parsed. */
  readBytes: number;
  remedy: string;
}

export interface LinesRead<T> {
  value: T[];
  status: ReadStatus;
  problem: string | null;
  /** Lines that did not parse or validate (a torn last line after a kill is not counted). */
  skipped: number;
}

/**
 * An append-only JSON-lines file of a fixed name in the state folder, bounded by its writer. The read
 * convention is the documents' with one difference: a line that does not parse or validate is skipped
 * (status `damaged`, with the count in the problem) and every other line is still read; the text after the
 * last newline (an append in progress, or torn by a kill) is no entry and no problem.
 */
export interface JsonLines<T> {
  readonly name: string;
  path(stateDir: string): string;
  /** Every readable entry, oldest first; never throws, never blocks. */
  read(stateDir: string): LinesRead<T>;
  /**
   * Append one entry (one write, not fsynced: a power cut may lose the newest line or leave it torn, and a torn
   * line is never read), cutting old lines first past maxBytes (that cut is atomic); throws StateWriteError.
   */
  append(stateDir: string, entry: T): void;
}

function parseLines<T>(text: string, spec: LinesSpec<T>): { value: T[]; skipped: number } {
  const lines = text.split('\n');
  // The text after the last newline is a line still being written, or torn by a kill: never an entry.
  lines.pop();
  const value: T[] = [];
  let skipped = 0;
  for (const line of lines) {
    if (!line.trim()) continue;
    let e: T | null = null;
    try {
      e = spec.validate(JSON.parse(line));
    } catch {
      e = null;
    }
    if (e === null) skipped++;
    else value.push(e);
  }
  return { value, skipped };
}

export function jsonLines<T>(name: string, spec: LinesSpec<T>): JsonLines<T> {
  const path = (dir: string) => join(dir, name);
  // The read cap is the history kind's, far above what the writer keeps: a file that grew past its
  // bound (an older version, another writer) is still read, and cut at the next append.
  const cap = SMALL_FILE_CAPS.history;
  return {
    name,
    path,
    read(dir) {
      const p = path(dir);
      try {
        return withSmallFile(p, 'history', { noFollow: true, maxBytes: cap }, (b): LinesRead<T> => {
          // The newest readBytes, from the first whole line in them.
          let start = Math.max(0, b.length - spec.readBytes);
          if (start > 0) start = b.indexOf(10, start - 1) + 1 || b.length;
          const r = parseLines(b.subarray(start).toString('utf8'), spec);
          return {
            ...r,
            status: r.skipped > 0 ? 'damaged' : 'ok',
            problem: r.skipped > 0 ? `${p}: ${r.skipped} damaged line(s) skipped: ${spec.remedy}` : null,
          };
        });
      } catch (err) {
        return { value: [], skipped: 0, ...readProblem(p, err, spec.remedy) };
      }
    },
    append(dir, entry) {
      const p = path(dir);
      stateWrite(p, () => {
        mkdirSync(dir, { recursive: true });
        const line = Buffer.from(JSON.stringify(entry) + '\n');
        // Non-blocking and regular files only: a FIFO here must not hang the pass (ENXIO, ENOTREG instead).
        let fd = openSync(
          p,
          constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW,
          0o644,
        );
        try {
          let st = fstatSync(fd);
          if (!st.isFile()) throw Object.assign(new Error(`${p} is ${fileType(st.mode)}`), { code: 'ENOTREG' });
          if (st.size > spec.maxBytes) {
            closeSync(fd);
            fd = -1;
            cut(p, spec.keepBytes, cap);
            fd = openSync(p, constants.O_RDWR | constants.O_APPEND | constants.O_NONBLOCK | constants.O_NOFOLLOW);
            st = fstatSync(fd);
            if (!st.isFile()) throw Object.assign(new Error(`${p} is ${fileType(st.mode)}`), { code: 'ENOTREG' });
          }
          // A torn last line (a kill mid-append) is ended first, so it cannot swallow this entry.
          let out = line;
          if (st.size > 0) {
            const b = Buffer.alloc(1);
            if (readSync(fd, b, 0, 1, st.size - 1) === 1 && b[0] !== 10) out = Buffer.concat([Buffer.from('\n'), line]);
          }
          let off = 0;
          while (off < out.length) off += writeSync(fd, out, off, out.length - off);
        } finally {
          if (fd >= 0) closeSync(fd);
        }
      });
    },
  };
}

/** Keep the newest `keep` bytes of a lines file, from its first whole line, atomically. */
function cut(path: string, keep: number, cap: number): void {
  const tail = withSmallFile(path, 'history', { noFollow: true, maxBytes: cap }, (b) => {
    let start = Math.max(0, b.length - keep);
    if (start > 0) start = b.indexOf(10, start - 1) + 1 || b.length;
    return Buffer.from(b.subarray(start));
  });
  writeFileAtomic(path, tail);
}
