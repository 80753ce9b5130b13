import { errnoCode, errorMessage } from '../../errors.js';
import type { ConversationStat } from '../../picoclaw/seahorse.js';
import { clearJournal, writeJournal } from '../../state/deletion-journal.js';
import type { ApplyRun } from './run.js';
import type { Pending } from './archive-step.js';
import { GatewayBusy } from './seahorse-delete.js';

/**
 * The seahorse conversations no session owns alone: orphans (no session file claims them)
 * and shared ones (several sessions claimed them). Each is re-checked as it goes: a new
 * message since planning keeps the rest of it.
 *
 * Each deletion is journaled as a group's is (./group.ts, src/state/deletion-journal.ts): its
 * rows go in several transactions, and a pass killed between its archive and its last one left
 * the rest for the next pass to plan, archive a second time and name in its report (an archive
 * of what the first one left, beside the one that holds it all). The next pass finishes it instead.
 */

/** The deleter's running count of deleted rows: unchanged across a step, the step deleted nothing. */
const rowsDeleted = (run: ApplyRun): number => {
  const s = run.deleter?.stats;
  return s ? s.messages + s.parts + s.summaries : 0;
};

/** What is about to go, and its archive, on disk before its first row goes (fsynced); false with no journal. */
function journalConversation(run: ApplyRun, c: ConversationStat, archive: Pending | null): boolean {
  if (!run.o.journal) return false;
  writeJournal(run.o.journal, {
    home: run.o.archiveHome ?? '',
    startedAt: new Date(run.o.nowMs).toISOString(),
    what: `seahorse conversation ${c.key}`,
    archives: archive?.paths ?? [],
    files: [],
    conversations: [{ id: c.conversationId, key: c.key, lastMessageId: c.lastMessageId ?? null }],
  });
  return true;
}

function dropJournal(run: ApplyRun, journaled: boolean): void {
  if (!journaled) return;
  try {
    clearJournal(run.o.journal!);
  } catch {
    // the next pass finds nothing left of it (or the change) and lets it go
  }
}

type Deleted =
  | { ok: true; complete: boolean; touched: boolean; deletedMessages: number; archive: Pending | null }
  | { ok: false; reason: 'archive_failed' | 'delete_failed' | 'interrupted'; detail: string; code?: string };

/**
 * Archive, journal and delete one conversation, re-checked against the plan before each transaction.
 * A failure part-way leaves the journal (and the archive, which holds what went) for the next pass to
 * finish; one before any row went leaves neither.
 */
function deleteOne(run: ApplyRun, c: ConversationStat): Deleted {
  const { archiver, deleter } = run;
  if (!run.convExists!.get(c.conversationId))
    return { ok: true, complete: true, touched: false, deletedMessages: 0, archive: null };
  let archive: Pending | null = null;
  if (archiver) {
    try {
      archive = archiver.orphan(c);
    } catch (err) {
      return { ok: false, reason: 'archive_failed', detail: errorMessage(err) };
    }
  }
  let journaled = false;
  try {
    journaled = journalConversation(run, c, archive);
  } catch (err) {
    archiver?.kept(archive);
    run.noteLocked(err);
    return {
      ok: false,
      reason: 'delete_failed',
      detail: `the deletion journal ${run.o.journal} could not be written (${errnoCode(err) ?? errorMessage(err)}): nothing of it was deleted`,
    };
  }
  const before = rowsDeleted(run);
  try {
    run.o.onConversationStep?.('seahorse', c.key);
    const d = deleter!.deleteConversation(c.conversationId, (gone) => run.convUnchanged(c, gone));
    if (d.complete) run.o.onConversationStep?.('done', c.key);
    // Deleted, or kept because it changed: nothing for the next pass to finish.
    dropJournal(run, journaled);
    if (!d.complete) archiver?.kept(archive);
    return { ok: true, ...d, archive };
  } catch (err) {
    // Nothing went: its archive is a stale copy (removed), and the journal must not name it.
    const nothingGone = rowsDeleted(run) === before;
    archiver?.kept(archive);
    if (nothingGone) dropJournal(run, journaled);
    run.noteLocked(err);
    return {
      ok: false,
      reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed',
      detail: errorMessage(err),
      code: errnoCode(err),
    };
  }
}

/** Orphan conversations the plan deletes by age, after the sessions. */
export function deleteOrphans(run: ApplyRun): void {
  const { o, plan, res, deleter } = run;
  for (const or of plan.orphans) {
    if (or.action !== 'delete') continue;
    if (run.stop() || !deleter) {
      res.interrupted ||= run.stop();
      res.orphans.set(or.conversation.conversationId, { action: 'keep', reason: 'interrupted' });
      continue;
    }
    const c = or.conversation;
    const d = deleteOne(run, c);
    if (!d.ok) {
      res.orphans.set(c.conversationId, { action: 'keep', reason: d.reason, detail: d.detail });
      if (d.reason === 'archive_failed') {
        o.onProgress?.(++run.done, run.total, c.key);
        continue;
      }
    } else {
      if (d.complete) res.deletedConversations++;
      res.orphans.set(
        c.conversationId,
        d.complete
          ? { action: 'delete', reason: 'max_age_days', archive: d.archive?.paths[0] }
          : {
              action: 'keep',
              reason: 'changed_since_plan',
              detail: d.touched
                ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages (and its summaries) were deleted, the rest kept`
                : 'a new message arrived since planning',
              ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}),
            },
      );
    }
    run.collectIfGrown();
    o.onProgress?.(run.done, run.total, c.key);
  }
}

/** Shared conversations go once every session that claimed them is gone, with the same re-check. */
export function deleteShared(run: ApplyRun): void {
  const { plan, res, deleter } = run;
  for (const sh of plan.shared) {
    const c = sh.conversation;
    if (!sh.groupIds.every((id) => res.groups.get(id)!.action === 'delete')) continue;
    if (!deleter || res.interrupted || run.stop()) {
      res.shared.set(c.conversationId, {
        action: 'keep',
        reason: 'interrupted',
        detail: 'not reached: the pass was stopped; the next pass deletes it',
      });
      continue;
    }
    const d = deleteOne(run, c);
    if (!d.ok)
      res.shared.set(c.conversationId, {
        action: 'keep',
        reason: d.reason,
        detail: `${d.code ?? ''} ${d.detail}`.trim(),
      });
    else if (d.complete) {
      res.deletedConversations++;
      res.shared.set(c.conversationId, {
        action: 'delete',
        reason: 'max_age_days',
        detail: `every session that claimed it was deleted`,
        archive: d.archive?.paths[0],
      });
    } else
      res.shared.set(c.conversationId, {
        action: 'keep',
        reason: 'changed_since_plan',
        detail: d.touched
          ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages were deleted, the rest kept`
          : 'a new message arrived since planning',
        ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}),
      });
  }
}
