import { errnoCode, errorMessage } from '../../errors.js';
import type { ApplyRun } from './run.js';
import type { Pending } from './archive-step.js';
import { GatewayBusy } from './seahorse-delete.js';

/**
 * The seahorse conversations no session owns alone: orphans (no session file claims them)
 * and shared ones (several sessions claimed them). Each is re-checked as it goes: a new
 * message since planning keeps the rest of it.
 */

/** Orphan conversations the plan deletes by age, after the sessions. */
export function deleteOrphans(run: ApplyRun): void {
  const { o, plan, res, deleter, archiver } = run;
  for (const or of plan.orphans) {
    if (or.action !== 'delete') continue;
    if (run.stop() || !deleter) {
      res.interrupted ||= run.stop();
      res.orphans.set(or.conversation.conversationId, { action: 'keep', reason: 'interrupted' });
      continue;
    }
    const c = or.conversation;
    let orphanArchive: Pending | null = null;
    try {
      if (archiver && run.convExists!.get(c.conversationId)) {
        try {
          orphanArchive = archiver.orphan(c);
        } catch (err) {
          res.orphans.set(c.conversationId, { action: 'keep', reason: 'archive_failed', detail: errorMessage(err) });
          o.onProgress?.(++run.done, run.total, c.key);
          continue;
        }
      }
      const d = run.convExists!.get(c.conversationId)
        ? deleter.deleteConversation(c.conversationId, (gone) => run.convUnchanged(c, gone))
        : { complete: true, touched: false, deletedMessages: 0 };
      if (d.complete) res.deletedConversations++;
      res.orphans.set(
        c.conversationId,
        d.complete
          ? { action: 'delete', reason: 'max_age_days', archive: orphanArchive?.paths[0] }
          : {
              action: 'keep',
              reason: 'changed_since_plan',
              detail: d.touched
                ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages (and its summaries) were deleted, the rest kept`
                : 'a new message arrived since planning',
              ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}),
            },
      );
      if (!d.complete) archiver?.kept(orphanArchive);
    } catch (err) {
      archiver?.kept(orphanArchive);
      run.noteLocked(err);
      res.orphans.set(c.conversationId, {
        action: 'keep',
        reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed',
        detail: errorMessage(err),
      });
    }
    run.tidy();
    o.onProgress?.(run.done, run.total, c.key);
  }
}

/** Shared conversations go once every session that claimed them is gone, with the same re-check. */
export function deleteShared(run: ApplyRun): void {
  const { plan, res, deleter, archiver } = run;
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
    let shArchive: Pending | null = null;
    try {
      if (archiver && run.convExists!.get(c.conversationId)) {
        try {
          shArchive = archiver.orphan(c);
        } catch (err) {
          res.shared.set(c.conversationId, { action: 'keep', reason: 'archive_failed', detail: errorMessage(err) });
          continue;
        }
      }
      const d = run.convExists!.get(c.conversationId)
        ? deleter.deleteConversation(c.conversationId, (gone) => run.convUnchanged(c, gone))
        : { complete: true, touched: false, deletedMessages: 0 };
      if (d.complete) {
        res.deletedConversations++;
        res.shared.set(c.conversationId, {
          action: 'delete',
          reason: 'max_age_days',
          detail: `every session that claimed it was deleted`,
          archive: shArchive?.paths[0],
        });
      } else {
        archiver?.kept(shArchive);
        res.shared.set(c.conversationId, {
          action: 'keep',
          reason: 'changed_since_plan',
          detail: d.touched
            ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages were deleted, the rest kept`
            : 'a new message arrived since planning',
          ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}),
        });
      }
    } catch (err) {
      archiver?.kept(shArchive);
      const code = errnoCode(err);
      run.noteLocked(err);
      res.shared.set(c.conversationId, {
        action: 'keep',
        reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed',
        detail: `${code ?? ''} ${errorMessage(err)}`.trim(),
      });
    }
  }
}
