import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, errorMessage, ExitCode, GuardError } from '../errors.js';
import { writeFileAtomic } from '../io/atomic.js';
import { readSmallText, SmallFileError } from '../io/smallfile.js';

/**
 * The cut in flight, in the guard's state folder (`log-cut.json`, written atomically before
 * each step that changes a file), so a cut killed at any step is finished or undone by the next
 * run (src/logs/cut.ts, `resumeCut`). One cut at a time (the logs lock), so one journal.
 */
export const JOURNAL_NAME = 'log-cut.json';

export interface CutJournal {
  version: 1;
  /** The log being cut. */
  file: string;
  /** Its identity: a file replaced meanwhile is not ours to finish. */
  dev: number;
  ino: number;
  /** Bytes [0, cut) are collapsed out of the file (a multiple of the block size). */
  cut: number;
  /** Bytes [0, end) go into the part: whole lines (`end` is just after a newline, end >= cut). */
  end: number;
  /** The part's number and path. */
  seq: number;
  part: string;
  /** The original bytes [cut, end - 1), base64: the pad overwrites them, an undo writes them back. */
  fragment: string;
  /** sha256 of the file's first min(cut, 64 KiB) bytes: still the same file, not rewritten, before the collapse. */
  head: string;
  /**
   * - start: the part may be half written; the log is untouched.
   * - part: the part is complete; the pad may be (partly) written.
   * - padded: the pad is written; the collapse may have happened (told apart by `pre`/`post`).
   */
  step: 'start' | 'part' | 'padded';
  /** With `padded`: sha256 of the file's first `window` bytes before the collapse, and of what comes first after it. */
  window?: number;
  pre?: string;
  post?: string;
}

export function journalPath(stateDir: string): string {
  return join(stateDir, JOURNAL_NAME);
}

/** The journal, null when there is none; a journal that does not parse is reported, never guessed at. */
export function readJournal(stateDir: string): CutJournal | null {
  const path = journalPath(stateDir);
  let text: string;
  try {
    text = readSmallText(path, 'state');
  } catch (err) {
    if (err instanceof SmallFileError && err.problem === 'absent') return null;
    throw badJournal(path, err instanceof SmallFileError ? err.message.slice(path.length + 1) : errorMessage(err));
  }
  let j: Partial<CutJournal>;
  try {
    j = JSON.parse(text) as Partial<CutJournal>;
  } catch {
    throw badJournal(path, 'it is not JSON');
  }
  const num = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (
    j.version !== 1 ||
    typeof j.file !== 'string' ||
    typeof j.part !== 'string' ||
    typeof j.fragment !== 'string' ||
    typeof j.head !== 'string' ||
    !['start', 'part', 'padded'].includes(j.step as string) ||
    ![j.dev, j.ino, j.cut, j.end, j.seq].every(num) ||
    j.end! < j.cut!
  )
    throw badJournal(path, 'it is not a log cut journal of this version');
  return j as CutJournal;
}

function badJournal(path: string, why: string): GuardError {
  return new GuardError(`the log cut journal ${path} cannot be used: ${why}`, {
    exitCode: ExitCode.DATA,
    path,
    hint:
      'delete it: a cut it described is then left as it is (its lines may be both in the newest part and in ' +
      'the log, none is lost)',
  });
}

export function writeJournal(stateDir: string, j: CutJournal): void {
  writeFileAtomic(journalPath(stateDir), JSON.stringify(j) + '\n', 0o600);
}

export function clearJournal(stateDir: string): void {
  try {
    unlinkSync(journalPath(stateDir));
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}
