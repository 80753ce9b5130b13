import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileId } from '../io/file-id.js';
import { isRecord, readJsonFile, refusal, removeStateFile, writeJsonFile, type JsonSpec } from './store.js';

/**
 * The deletion in progress, written to the state folder before its first irreversible step.
 * A session goes in steps: its seahorse rows, its .jsonl, its .meta.json. A pass
 * killed between two of them leaves a part of the session behind (a meta without its transcript,
 * a transcript without its rows); planned again from scratch, that part would pass for a session of
 * its own and be archived a second time, over or beside the archive that holds the whole of it.
 *
 * The journal says what was being deleted (each file as the plan saw it, each conversation with the
 * newest message it had) and where its archive is. The next --apply pass reads it before anything
 * else and finishes that deletion, without a second archive, as long as what is left is still exactly
 * what the journal names; it is then cleared. Written with write-temp-fsync-rename and the folder
 * fsynced: after a power cut it is either the old state or the new one, never half of it.
 *
 * One file per home (a state folder may serve several), named from the home's device and inode.
 */

export interface JournalFile {
  path: string;
  ino: number;
  bytes: number;
  mtimeMs: number;
}

export interface JournalConversation {
  id: number;
  key: string;
  /** MAX(message_id) when planned (null: no message): a newer one is a message written since. */
  lastMessageId: number | null;
}

export interface DeletionJournal {
  /** The home's real path, for messages. */
  home: string;
  startedAt: string;
  /** A name for messages: the group's key. */
  what: string;
  /** Its archives (none when the pass does not archive). */
  archives: string[];
  /** In the order they are unlinked: each member's .jsonl, then its .meta.json. */
  files: JournalFile[];
  conversations: JournalConversation[];
}

const PREFIX = 'deleting-';

export function journalPath(stateDir: string, homeReal: string): string {
  const tag = createHash('sha256')
    .update(fileId(homeReal) ?? homeReal)
    .digest('hex')
    .slice(0, 16);
  return join(stateDir, `${PREFIX}${tag}.json`);
}

export const journalSpec: JsonSpec<DeletionJournal | null> = {
  what: 'a deletion journal',
  validate: (j) =>
    isRecord(j) &&
    typeof j.what === 'string' &&
    Array.isArray(j.files) &&
    j.files.every(
      (f) =>
        isRecord(f) &&
        typeof f.path === 'string' &&
        typeof f.ino === 'number' &&
        typeof f.bytes === 'number' &&
        typeof f.mtimeMs === 'number',
    ) &&
    Array.isArray(j.conversations) &&
    j.conversations.every((c) => isRecord(c) && typeof c.id === 'number' && typeof c.key === 'string') &&
    Array.isArray(j.archives)
      ? (j as unknown as DeletionJournal)
      : null,
  empty: () => null,
  mode: 0o600,
  remedy: 'check it, or remove it to plan from scratch',
};

/** Record the deletion about to start; fsynced before it returns (throws StateWriteError: it must not start). */
export function writeJournal(path: string, j: DeletionJournal): void {
  writeJsonFile(path, j, journalSpec);
}

/** The deletion is complete (or was given up and reported): the journal goes, and the folder is fsynced. */
export function clearJournal(path: string): void {
  removeStateFile(path);
}

/**
 * The journal left by an interrupted pass, null when there is none; throws (exit 3) when it is there but
 * cannot be read or is not a journal: it names a deletion an earlier pass did not finish, so the pass must
 * not plan over it.
 */
export function readJournal(path: string): DeletionJournal | null {
  const r = readJsonFile(path, journalSpec);
  if (r.problem) throw refusal(r.problem, path);
  return r.value;
}
