import { join } from 'node:path';
import { isRecord, readJsonFile, refusal, removeStateFile, writeJsonFile, type JsonSpec } from '../state/store.js';

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

const num = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

const HINT =
  'delete it: a cut it described is then left as it is (its lines may be both in the newest part and in ' +
  'the log, none is lost)';

export const cutJournalSpec: JsonSpec<CutJournal | null> = {
  what: 'a log cut journal of this version',
  validate: (j) =>
    isRecord(j) &&
    j.version === 1 &&
    typeof j.file === 'string' &&
    typeof j.part === 'string' &&
    typeof j.fragment === 'string' &&
    typeof j.head === 'string' &&
    ['start', 'part', 'padded'].includes(j.step as string) &&
    [j.dev, j.ino, j.cut, j.end, j.seq].every(num) &&
    (j.end as number) >= (j.cut as number)
      ? (j as unknown as CutJournal)
      : null,
  empty: () => null,
  mode: 0o600,
  remedy: 'delete it',
};

/**
 * The journal, null when there is none; a journal that cannot be read or does not parse is reported
 * (exit 3), never guessed at.
 */
export function readJournal(stateDir: string): CutJournal | null {
  const path = journalPath(stateDir);
  const r = readJsonFile(path, cutJournalSpec);
  if (r.problem) throw refusal(`the log cut journal cannot be used: ${r.problem}`, path, HINT);
  return r.value;
}

/** Throws StateWriteError (src/state/store.ts). */
export function writeJournal(stateDir: string, j: CutJournal): void {
  writeJsonFile(journalPath(stateDir), j, cutJournalSpec);
}

export function clearJournal(stateDir: string): void {
  removeStateFile(journalPath(stateDir));
}
