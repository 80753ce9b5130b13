import { existsSync, lstatSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { ExitCode, diskFault, errnoCode, errorMessage, type ExitCodeValue } from '../../errors.js';
import { fsyncDir } from '../../io/atomic.js';
import type { Database } from '../../io/sqlite.js';
import { openSeahorseWrite } from '../../picoclaw/seahorse.js';
import {
  clearJournal,
  journalPath,
  readJournal,
  type DeletionJournal,
  type JournalFile,
} from '../../state/deletion-journal.js';
import { SeahorseDeleter } from './seahorse-delete.js';
import { ONLINE_QUIET_MS } from './write-lock.js';

/**
 * The first thing an --apply pass does after taking the lock: finish the deletion a killed pass
 * left half-way (src/state/deletion-journal.ts says why it is journaled), so that its remains are
 * never planned, and archived, as a session of their own.
 *
 * It finishes only what the journal names, exactly as it names it: each file still there must be the
 * very file the plan saw (inode, size, mtime), and each conversation must hold no message newer than
 * the newest it had. Anything written since means PicoClaw is using that session again: nothing more
 * of it is deleted, the journal is let go, and the pass plans what is left like any other session
 * (its archive keeps what was deleted). The same steps in the same order as the deleter: the rows,
 * then each .jsonl before its .meta.json.
 */

export interface Interrupted {
  /** For the report's warnings: what was finished, or why not. */
  note: string | null;
  /** The journal is there but could not be acted on: the pass must not plan over it. */
  refusal: { message: string; exitCode: ExitCodeValue } | null;
}

export interface FinishOptions {
  stateDir: string;
  homeReal: string;
  seahorsePath: string;
  online: boolean;
  busyTimeoutMs: number;
}

class Changed extends Error {}

function stillPlanned(f: JournalFile): boolean {
  let st;
  try {
    st = lstatSync(f.path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
  if (!st.isFile() || st.ino !== f.ino || st.size !== f.bytes || st.mtimeMs !== f.mtimeMs)
    throw new Changed(`${f.path} changed since`);
  return true;
}

function newestMessage(db: Database, id: number): number | null {
  const r = db.prepare(`SELECT MAX(message_id) AS m FROM messages WHERE conversation_id = ?`).get(id) as {
    m: number | null;
  };
  return r.m;
}

function archivesOf(j: DeletionJournal): string {
  return j.archives.length > 0 ? ` (archive: ${j.archives.join(', ')})` : '';
}

export function finishInterrupted(o: FinishOptions): Interrupted {
  const path = journalPath(o.stateDir, o.homeReal);
  let j: DeletionJournal | null;
  try {
    j = readJournal(path);
  } catch (err) {
    return {
      note: null,
      refusal: {
        message:
          `the deletion journal ${path} cannot be read (${errorMessage(err)}); nothing was deleted, since it ` +
          `names a deletion an earlier pass did not finish: check it, or remove it to plan from scratch`,
        exitCode: ExitCode.SKIPPED,
      },
    };
  }
  if (!j) return { note: null, refusal: null };
  let db: Database | null = null;
  try {
    // What is left must be exactly what the journal names, all of it, before anything more goes.
    const files = j.files.filter(stillPlanned);
    const convs = j.conversations;
    if (convs.length > 0 && existsSync(o.seahorsePath)) {
      db = openSeahorseWrite(o.seahorsePath, o.busyTimeoutMs);
      for (const c of convs) {
        const newest = newestMessage(db, c.id);
        if (newest !== null && c.lastMessageId !== null && newest > c.lastMessageId)
          throw new Changed(`seahorse conversation ${c.key} has a message written since`);
      }
      const deleter = new SeahorseDeleter(db, {
        targetTxnMs: o.online ? 50 : 500,
        quietMs: o.online ? ONLINE_QUIET_MS : 0,
      });
      deleter.prepare(convs.map((c) => c.id));
      for (const c of convs) {
        const exists = db.prepare(`SELECT 1 FROM conversations WHERE conversation_id = ?`).get(c.id);
        if (!exists) continue;
        const d = deleter.deleteConversation(c.id, () => {
          const newest = newestMessage(db!, c.id);
          return newest === null || c.lastMessageId === null || newest <= c.lastMessageId;
        });
        if (!d.complete) throw new Changed(`seahorse conversation ${c.key} had a message written part-way`);
      }
    }
    const dirs = new Set<string>();
    for (const f of files) {
      if (!stillPlanned(f)) continue;
      unlinkSync(f.path);
      dirs.add(dirname(f.path));
    }
    for (const d of dirs) fsyncDir(d);
    clearJournal(path);
    return {
      note: `finished deleting ${j.what}, which an earlier pass was interrupted in${archivesOf(j)}`,
      refusal: null,
    };
  } catch (err) {
    if (err instanceof Changed) {
      clearJournal(path);
      return {
        note:
          `an earlier pass was interrupted while deleting ${j.what}; not finished, since ${err.message}: ` +
          `what is left is planned like any other session${archivesOf(j)}`,
        refusal: null,
      };
    }
    const fault = diskFault(err);
    return {
      note: null,
      refusal: {
        message:
          `an earlier pass was interrupted while deleting ${j.what}, and it cannot be finished now ` +
          `(${errnoCode(err) ?? 'error'}: ${errorMessage(err)}); nothing was deleted, the next pass tries again`,
        exitCode: fault === 'no_space' ? ExitCode.NO_SPACE : fault === 'damaged' ? ExitCode.DATA : ExitCode.SKIPPED,
      },
    };
  } finally {
    db?.close();
  }
}
