import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type Stats } from 'node:fs';
import { open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { errnoCode, errorMessage } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import { keptParts, partPath } from '../picoclaw/gatewaylog/parts.js';
import {
  CollapseError,
  collapseBlock,
  collapseByType,
  probedBefore,
  fallocateCollapse,
  probeCollapse,
  type Collapser,
} from './collapse.js';
import { clearJournal, readJournal, writeJournal, type CutJournal } from './journal.js';

/**
 * Bounding one PicoClaw log without losing a line (docs/logs.md).
 *
 * PicoClaw opens gateway.log O_CREATE|O_WRONLY|O_APPEND (pkg/logger/logger.go,
 * EnableFileLogging) and gateway_panic.log O_WRONLY|O_CREATE|O_APPEND|O_SYNC with stderr
 * dup2'd onto it (pkg/logger/panic_unix.go), never reopens either, and writes each record
 * with one write(2). With O_APPEND every write goes to the end of file as it is at that
 * moment. So a cut that removes the head of the file in place is safe, and one that copies
 * and then truncates is not: a line written between the copy and the truncate is in neither.
 *
 * The cut, for a file over the limit:
 * 1. choose `cut`, a block multiple that leaves about half the limit, and `end`, just after
 *    the newline of the line that straddles `cut` (journal: start);
 * 2. gzip bytes [0, end) into `<name>.<seq>.gz` (temp, fsync, rename): whole lines, and the
 *    writer only ever adds bytes after `end` (journal: part);
 * 3. overwrite the straddling line's tail [cut, end - 1) with spaces: it is in the part, and
 *    what stays of it becomes a blank line (journal: padded, with hashes telling before from
 *    after the collapse);
 * 4. collapse [0, cut) out of the file (fallocate FALLOC_FL_COLLAPSE_RANGE): atomic against
 *    the writer's appends; then drop the journal and the oldest parts beyond `keep_parts`.
 * A kill at any step leaves a journal that the next run finishes or undoes (resumeCut). Where
 * the file system cannot collapse, nothing is changed and the outcome says why.
 */

export type CutStep = 'journal' | 'part' | 'journal-part' | 'pad' | 'journal-padded' | 'collapse' | 'done';

export interface CutContext {
  stateDir: string;
  /** Cut a file larger than this; 0: never. */
  limitBytes: number;
  /** Parts kept per file (the oldest beyond it are deleted). */
  keepParts: number;
  dryRun?: boolean;
  collapse?: Collapser;
  /** Failure injection (tests): called after each step; a throw there is a kill at that step. */
  step?: (step: CutStep, file: string) => void | Promise<void>;
}

export type CutAction = 'absent' | 'off' | 'under_limit' | 'cut' | 'would_cut' | 'unsupported' | 'skipped';

export interface CutOutcome {
  file: string;
  action: CutAction;
  /** The file's size when looked at (before any cut); null when absent. */
  size_bytes: number | null;
  limit_bytes: number;
  /** Bytes taken off the head of the file (a block multiple). */
  removed_bytes: number;
  /** Bytes (whole lines) written, compressed, into the new part. */
  part_bytes: number;
  part: string | null;
  /** Parts deleted (or, in a dry-run, that would be) because more than keep_parts are kept. */
  parts_removed: string[];
  /** Parts kept beside the file after this run. */
  parts_kept: number;
  /** Why nothing was cut (skipped, unsupported), or a note. */
  reason: string | null;
}

/** A line's tail this long or longer is not padded (the undo keeps it in the journal): the cut waits. */
const MAX_FRAGMENT = 32 * 1024;
/** Bytes at the head hashed at the start (before the cut point: the pad never touches them). */
const HEAD = 64 * 1024;
/** Bytes hashed to tell the file before the collapse from after it. */
const WINDOW = 1024 * 1024;
const SPACE = 0x20;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function readAt(fh: FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.alloc(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === len ? buf : buf.subarray(0, got);
}

/** Just after the first newline at or after `from - 1` (so `from` itself when byte from-1 is one); null: none yet. */
async function lineEndFrom(fh: FileHandle, from: number, size: number): Promise<number | null> {
  const chunk = 64 * 1024;
  for (let pos = from - 1; pos < size; pos += chunk) {
    const b = await readAt(fh, pos, Math.min(chunk, size - pos));
    const i = b.indexOf(0x0a);
    if (i >= 0) return pos + i + 1;
    if (pos + b.length - from >= MAX_FRAGMENT) return null;
  }
  return null;
}

async function statOrNull(path: string): Promise<Stats | null> {
  try {
    return await stat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}

function tmpOf(part: string): string {
  return join(dirname(part), `.${basename(part)}.tmp`);
}

/**
 * gzip [0, end) of the open log into `part`: temp file, fsync, rename, fsync the folder; owned
 * like the log. Read through the handle the cut holds, so it is the very file being cut.
 */
async function writePart(log: FileHandle, end: number, part: string, st: Stats): Promise<void> {
  const tmp = tmpOf(part);
  await unlinkIfThere(tmp);
  await pipeline(
    createReadStream('', { fd: log, start: 0, end: end - 1, autoClose: false }),
    createGzip(),
    createWriteStream(tmp, { flags: 'wx', mode: st.mode & 0o666 }),
  );
  const fh = await open(tmp, 'r+');
  try {
    if (typeof process.getuid === 'function' && process.getuid() === 0 && st.uid !== 0)
      await fh.chown(st.uid, st.gid).catch(() => undefined);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, part);
  fsyncDir(dirname(part));
}

/** Where the file is relative to the collapse of journal `j` (step padded). */
async function collapsed(fh: FileHandle, j: CutJournal): Promise<'before' | 'after' | 'unknown'> {
  const head = sha(await readAt(fh, 0, j.window!));
  const isPre = head === j.pre;
  const isPost = head === j.post;
  if (isPre && !isPost) return 'before';
  if (isPost && !isPre) return 'after';
  return 'unknown';
}

/** Put the straddling line's tail back (the undo of step 3) and forget the part. */
async function undo(fh: FileHandle, j: CutJournal, stateDir: string): Promise<void> {
  const frag = Buffer.from(j.fragment, 'base64');
  if (frag.length > 0) await fh.write(frag, 0, frag.length, j.cut);
  await fh.datasync();
  await unlinkIfThere(j.part);
  await unlinkIfThere(tmpOf(j.part));
  clearJournal(stateDir);
}

interface Finish {
  action: 'cut' | 'unsupported' | 'skipped';
  reason: string | null;
}

/**
 * Steps 3 and 4 from journal `j` (step part or padded) on the open file. The journal is
 * cleared when this returns (the cut is done, undone, or no longer ours).
 */
async function finish(fh: FileHandle, j: CutJournal, ctx: CutContext): Promise<Finish> {
  const collapse = ctx.collapse ?? fallocateCollapse;
  if (j.step === 'part') {
    const padLen = j.end - 1 - j.cut;
    if (padLen > 0) await fh.write(Buffer.alloc(padLen, SPACE), 0, padLen, j.cut);
    await fh.datasync();
    await ctx.step?.('pad', j.file);
    const size = (await fh.stat()).size;
    const window = Math.min(WINDOW, size - j.cut);
    const pre = sha(await readAt(fh, 0, window));
    const post = sha(await readAt(fh, j.cut, window));
    if (pre === post) {
      // The file repeats itself with period `cut`: after a kill we could not tell whether it was collapsed.
      await undo(fh, j, ctx.stateDir);
      return { action: 'skipped', reason: 'the log repeats itself across the cut point: left as it is' };
    }
    j = { ...j, step: 'padded', window, pre, post };
    writeJournal(ctx.stateDir, j);
    await ctx.step?.('journal-padded', j.file);
  }
  const where = await collapsed(fh, j);
  if (where === 'unknown') {
    // Rewritten by something else since the journal: keep the part (lines may be twice, none lost).
    clearJournal(ctx.stateDir);
    return { action: 'skipped', reason: 'the log changed under the cut in a way an append cannot: left as it is' };
  }
  if (where === 'before') {
    try {
      await collapse(j.file, j.cut);
    } catch (err) {
      // The tool may have failed after the kernel did it (a timeout): look before undoing.
      if ((await collapsed(fh, j)) !== 'after') {
        await undo(fh, j, ctx.stateDir);
        const why = err instanceof CollapseError ? err.message : errorMessage(err);
        const unsupported = err instanceof CollapseError && err.unsupported;
        return { action: unsupported ? 'unsupported' : 'skipped', reason: `collapse failed: ${why}; undone` };
      }
    }
    await ctx.step?.('collapse', j.file);
  }
  await fh.sync();
  clearJournal(ctx.stateDir);
  await ctx.step?.('done', j.file);
  return { action: 'cut', reason: null };
}

/** What a resumed journal came to. */
export interface Resumed {
  file: string;
  step: CutJournal['step'];
  outcome: 'finished' | 'undone' | 'abandoned' | 'unsupported' | 'skipped';
  reason: string | null;
}

/**
 * Finish or undo the cut a killed run left (its journal); null when there is none.
 * - start: the part may be partial and the log is untouched: the part goes, the cut starts over.
 * - part / padded: the part is complete: finish (pad, collapse), unless the hashes say it is done.
 * A log that is gone or was replaced keeps its complete part and the journal is dropped.
 */
export async function resumeCut(ctx: CutContext): Promise<Resumed | null> {
  const j = readJournal(ctx.stateDir);
  if (!j) return null;
  const st = await statOrNull(j.file);
  // Before the collapse the file holds at least [0, end); after it, at least what followed the cut.
  const least = j.step === 'padded' ? j.end - j.cut : j.end;
  let ours = st !== null && st.isFile() && st.dev === j.dev && st.ino === j.ino && st.size >= least;
  if (ours && j.step === 'part') {
    // Not yet collapsed: its head must be what the part begins with, or the pad would land on other lines.
    const fh = await open(j.file, 'r');
    try {
      ours = sha(await readAt(fh, 0, Math.min(j.cut, HEAD))) === j.head;
    } finally {
      await fh.close();
    }
  }
  if (j.step === 'start' || !ours) {
    await unlinkIfThere(tmpOf(j.part));
    if (j.step === 'start' && ours) await unlinkIfThere(j.part);
    clearJournal(ctx.stateDir);
    const outcome = j.step === 'start' && ours ? 'undone' : 'abandoned';
    return { file: j.file, step: j.step, outcome, reason: ours ? null : 'the log is gone, was replaced or rewritten' };
  }
  const fh = await open(j.file, 'r+');
  try {
    const r = await finish(fh, j, ctx);
    const outcome = r.action === 'cut' ? 'finished' : r.action;
    return { file: j.file, step: j.step, outcome, reason: r.reason };
  } finally {
    await fh.close();
  }
}

/** Delete the oldest parts beyond `keep` (only names of the part shape): the deleted (in a dry-run, doomed) paths. */
async function pruneParts(file: string, keep: number, dry: boolean): Promise<{ removed: string[]; kept: number }> {
  const parts = keptParts(file);
  const doomed = parts.slice(0, Math.max(0, parts.length - keep)).map((p) => p.path);
  if (!dry) for (const p of doomed) await unlinkIfThere(p);
  return { removed: doomed, kept: parts.length - doomed.length };
}

/** Cut one log if it is over the limit (the caller holds the logs lock and has resumed any journal). */
export async function cutLog(file: string, ctx: CutContext): Promise<CutOutcome> {
  const out: CutOutcome = {
    file,
    action: 'absent',
    size_bytes: null,
    limit_bytes: ctx.limitBytes,
    removed_bytes: 0,
    part_bytes: 0,
    part: null,
    parts_removed: [],
    parts_kept: 0,
    reason: null,
  };
  const done = async (o: Partial<CutOutcome>): Promise<CutOutcome> => {
    Object.assign(out, o);
    const pr = await pruneParts(file, ctx.keepParts, ctx.dryRun === true);
    // In a dry-run the part to come counts toward the ones kept.
    if (ctx.dryRun && out.action === 'would_cut') {
      const parts = keptParts(file);
      const doomed = parts.slice(0, Math.max(0, parts.length + 1 - ctx.keepParts)).map((p) => p.path);
      out.parts_removed = doomed;
      out.parts_kept = parts.length + 1 - doomed.length;
    } else {
      out.parts_removed = pr.removed;
      out.parts_kept = pr.kept;
    }
    return out;
  };
  const st = await statOrNull(file);
  if (!st) return done({ action: 'absent' });
  out.size_bytes = st.size;
  if (!st.isFile()) return done({ action: 'skipped', reason: 'not a regular file' });
  if (ctx.limitBytes <= 0) return done({ action: 'off' });
  if (st.size <= ctx.limitBytes) return done({ action: 'under_limit' });

  // A dry-run writes nothing, not even the probe: the file system's type is all it goes by.
  const support = ctx.dryRun
    ? (probedBefore(dirname(file)) ?? collapseByType(dirname(file)))
    : await probeCollapse(dirname(file), ctx.collapse ?? fallocateCollapse);
  if (!support.ok) return done({ action: support.transient ? 'skipped' : 'unsupported', reason: support.reason });
  const block = Math.max(support.block, collapseBlock(file));
  const keep = Math.floor(ctx.limitBytes / 2);
  const cut = Math.floor((st.size - keep) / block) * block;
  if (cut <= 0 || cut >= st.size) return done({ action: 'under_limit', reason: 'less than one block to cut' });

  let fh: FileHandle;
  try {
    fh = await open(file, ctx.dryRun ? 'r' : 'r+');
  } catch (err) {
    return done({
      action: 'skipped',
      reason: `cannot open it for writing: ${errnoCode(err) ?? errorMessage(err)}`,
    });
  }
  try {
    const fst = await fh.stat();
    if (fst.ino !== st.ino || fst.dev !== st.dev)
      return await done({ action: 'skipped', reason: 'replaced while looked at' });
    const end = await lineEndFrom(fh, cut, fst.size);
    if (end === null || end - 1 - cut > MAX_FRAGMENT)
      return await done({ action: 'skipped', reason: `no line ends within ${MAX_FRAGMENT} bytes after the cut point` });
    const seq = (keptParts(file).at(-1)?.seq ?? 0) + 1;
    const part = partPath(file, seq);
    out.removed_bytes = cut;
    out.part_bytes = end;
    out.part = part;
    if (ctx.dryRun) return await done({ action: 'would_cut' });
    // end === cut: the cut falls on a line end, nothing straddles it, nothing is padded.
    const fragment = (await readAt(fh, cut, Math.max(0, end - 1 - cut))).toString('base64');
    const head = sha(await readAt(fh, 0, Math.min(cut, HEAD)));
    const j: CutJournal = {
      version: 1,
      file,
      dev: st.dev,
      ino: st.ino,
      cut,
      end,
      seq,
      part,
      fragment,
      head,
      step: 'start',
    };
    writeJournal(ctx.stateDir, j);
    await ctx.step?.('journal', file);
    await writePart(fh, end, part, st);
    await ctx.step?.('part', file);
    writeJournal(ctx.stateDir, { ...j, step: 'part' });
    await ctx.step?.('journal-part', file);
    const r = await finish(fh, { ...j, step: 'part' }, ctx);
    if (r.action !== 'cut') {
      out.removed_bytes = 0;
      out.part_bytes = 0;
      out.part = null;
    }
    return await done(r);
  } finally {
    await fh.close();
  }
}
