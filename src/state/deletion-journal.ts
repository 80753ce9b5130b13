import { createHash } from 'node:crypto';
import { mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../io/atomic.js';
import { fileId } from '../io/file-id.js';
import { SmallFileError, readSmallText } from '../io/smallfile.js';

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

/** Record the deletion about to start; fsynced before it returns (throws: the deletion must not start). */
export function writeJournal(path: string, j: DeletionJournal): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileAtomic(path, JSON.stringify(j) + '\n', { mode: 0o600 });
}

/** The deletion is complete (or was given up and reported): the journal goes, and the folder is fsynced. */
export function clearJournal(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  fsyncDir(join(path, '..'));
}

/** The journal left by an interrupted pass, null when there is none; throws when it is there but unreadable. */
export function readJournal(path: string): DeletionJournal | null {
  let text: string;
  try {
    text = readSmallText(path, 'state', { noFollow: true });
  } catch (err) {
    if (err instanceof SmallFileError && err.problem === 'absent') return null;
    throw err;
  }
  const j = JSON.parse(text) as Partial<DeletionJournal>;
  const ok =
    typeof j.what === 'string' &&
    Array.isArray(j.files) &&
    j.files.every(
      (f) =>
        typeof f?.path === 'string' &&
        typeof f.ino === 'number' &&
        typeof f.bytes === 'number' &&
        typeof f.mtimeMs === 'number',
    ) &&
    Array.isArray(j.conversations) &&
    j.conversations.every((c) => typeof c?.id === 'number' && typeof c.key === 'string') &&
    Array.isArray(j.archives);
  if (!ok) throw new Error(`${path} is not a deletion journal`);
  return j as DeletionJournal;
}
