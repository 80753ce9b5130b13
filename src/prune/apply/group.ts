import { accessSync, constants, lstatSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { errnoCode, errorMessage } from '../../errors.js';
import { fsyncDir } from '../../io/atomic.js';
import type { FileFacts } from '../../picoclaw/inventory/sessions.js';
import type { ApplyRun } from './run.js';
import type { Pending } from './archive-step.js';
import type { PlanGroup, Reason } from '../plan/plan.js';
import { GatewayBusy } from './seahorse-delete.js';
import { clearJournal, writeJournal } from '../../state/deletion-journal.js';
import { membershipOf } from './membership.js';

/**
 * Deleting one session group (a session and its aliases): every member's files and every
 * own conversation's rows are re-checked against the plan before each irreversible step.
 */

class Changed extends Error {}

function sameFile(f: FileFacts | null, what: string): void {
  if (!f) return;
  let st;
  try {
    st = lstatSync(f.path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') throw new Changed(`${what} vanished since planning`);
    throw err;
  }
  if (!st.isFile()) throw new Changed(`${what} is no longer a regular file`);
  if (st.ino !== f.ino || st.size !== f.bytes || st.mtimeMs !== f.mtimeMs)
    throw new Changed(`${what} changed since planning (new message or rewrite)`);
}

function checkWritable(f: FileFacts | null): void {
  if (!f) return;
  accessSync(f.path, constants.W_OK);
}

function unlinkExact(f: FileFacts | null, what: string): void {
  if (!f) return;
  sameFile(f, what);
  unlinkSync(f.path);
}

/** The first step: the sessions the plan deletes by age and count, oldest first, until the pass must stop. */
export function deleteByAgeAndCount(run: ApplyRun): void {
  const { o, res } = run;
  for (const g of run.ageCount) {
    if (run.stop()) {
      res.interrupted = true;
      const detail = run.locked
        ? `not reached: ${run.locked}`
        : res.fault
          ? `not reached: ${res.fault.why}`
          : run.archiver?.failure
            ? `not reached: an archive could not be written (${run.archiver.failure})`
            : 'the pass was stopped';
      res.groups.set(g.id, { action: 'keep', reason: 'interrupted', detail });
      continue;
    }
    deleteGroup(run, g, g.reason);
    run.done += g.members.length;
    run.collectIfGrown();
    o.onProgress?.(run.done, run.total, g.key);
  }
}

/** Delete one group; returns false (and records why) if it was kept, whole or in part. */
export function deleteGroup(run: ApplyRun, g: PlanGroup, reason: Reason): boolean {
  const pinned = run.o.keepNow?.(g) ?? null;
  if (pinned !== null) {
    run.res.groups.set(g.id, { action: 'keep', reason: 'pinned', detail: pinned });
    return false;
  }
  const archived: { pending: Pending | null } = { pending: null };
  const ok = deleteGroupOnce(run, g, reason, archived);
  if (!ok) run.archiver?.kept(archived.pending);
  return ok;
}

function deleteGroupOnce(run: ApplyRun, g: PlanGroup, reason: Reason, archived: { pending: Pending | null }): boolean {
  const { o, db, res, archiver } = run;
  // What this group has lost so far, so that a stop part-way says exactly what is left.
  const unlinked = new Set<string>();
  const convDone = new Set<number>();
  const convGone = new Map<number, number>();
  const deletedParts: string[] = [];
  /**
   * Every member's files and every own conversation's rows, as planned (less what this
   * group already deleted). Run before each irreversible step: a change anywhere in the
   * group stops the whole group, not just the member it touched.
   */
  const membership = membershipOf(run.plan);
  const checkGroup = (): void => {
    for (const m of g.members) {
      for (const f of [m.files.meta, m.files.jsonl]) if (f && !unlinked.has(f.path)) sameFile(f, f.path);
    }
    // A .jsonl the plan saw absent that is there now (PicoClaw began writing the session): it is being written.
    for (const m of g.members)
      if (!m.files.jsonl && lstatSync(join(m.dir, `${m.base}.jsonl`), { throwIfNoEntry: false }))
        throw new Changed(`${join(m.dir, `${m.base}.jsonl`)} appeared after planning`);
    // A file this group already deleted that is there again (PicoClaw's append recreates a .jsonl): the
    // session is being written to; its meta must not go after it.
    for (const p of unlinked)
      if (lstatSync(p, { throwIfNoEntry: false })) throw new Changed(`${p} was written again after it was deleted`);
    // The group is re-read, not only its files: a kept session that gained an alias naming a member joins it.
    const joined = membership.check(g, unlinked);
    if (joined) throw new Changed(joined);
    if (db) {
      for (const c of g.ownConversations) {
        if (convDone.has(c.conversationId) || !run.convExists!.get(c.conversationId)) continue;
        if (!run.convUnchanged(c, convGone.get(c.conversationId) ?? 0)) {
          throw new Changed(`seahorse conversation ${c.key} changed since planning`);
        }
      }
    }
  };
  const leftOf = (): string => {
    const left: string[] = [];
    for (const m of g.members)
      for (const f of [m.files.jsonl, m.files.meta]) if (f && !unlinked.has(f.path)) left.push(basename(f.path));
    for (const c of g.ownConversations) {
      if (convDone.has(c.conversationId)) continue;
      const gone = convGone.get(c.conversationId) ?? 0;
      left.push(`seahorse ${c.key} (${c.messages - gone}${gone ? ` of ${c.messages}` : ''} messages)`);
    }
    return left.length > 0 ? left.join(', ') : 'nothing';
  };
  let journaled = false;
  const keep = (r: Reason, detail: string): false => {
    // Kept whole, or kept because it changed: nothing for the next pass to finish, the journal goes.
    // Kept part-way by a failure (a full disk, a lock): the journal stays, and the next pass finishes
    // the deletion if what is left is still exactly what it names.
    if (journaled && (deletedParts.length === 0 || r === 'changed_since_plan')) {
      try {
        clearJournal(o.journal!);
      } catch {
        // the next pass finds it, sees the change, and lets it go
      }
    }
    if (deletedParts.length > 0) {
      res.groups.set(g.id, {
        action: 'keep',
        reason: r,
        detail: `${detail}; stopped part-way: deleted ${deletedParts.join(', ')}; left: ${leftOf()}`,
        partial: deletedParts.join(', '),
      });
    } else res.groups.set(g.id, { action: 'keep', reason: r, detail });
    return false;
  };
  try {
    for (const m of g.members) {
      sameFile(m.files.meta, m.files.meta?.path ?? 'meta');
      sameFile(m.files.jsonl, m.files.jsonl?.path ?? 'jsonl');
      try {
        checkWritable(m.files.meta);
        checkWritable(m.files.jsonl);
        accessSync(m.dir, constants.W_OK);
      } catch (err) {
        return keep(
          'not_writable',
          `${m.files.meta?.path ?? m.dir}: ${errnoCode(err) ?? errorMessage(err)}: fix its owner or permissions`,
        );
      }
    }
    checkGroup();
    // Archived at the moment of deletion, after every re-check; removed again if the group is kept whole.
    if (archiver) {
      try {
        archived.pending = archiver.group(
          g.members,
          g.ownConversations.map((c) => c.conversationId),
        );
      } catch (err) {
        return keep('archive_failed', errorMessage(err));
      }
    }
    // What is about to be deleted, and its archive, on disk before the first irreversible step (fsynced).
    if (o.journal) {
      try {
        writeJournal(o.journal, {
          home: o.archiveHome ?? '',
          startedAt: new Date(run.o.nowMs).toISOString(),
          what: g.key,
          archives: archived.pending?.paths ?? [],
          files: g.members.flatMap((m) =>
            [m.files.jsonl, m.files.meta]
              .filter((f): f is FileFacts => f !== null)
              .map((f) => ({ path: f.path, ino: f.ino, bytes: f.bytes, mtimeMs: f.mtimeMs })),
          ),
          conversations: g.ownConversations.map((c) => ({
            id: c.conversationId,
            key: c.key,
            lastMessageId: c.lastMessageId ?? null,
          })),
        });
        journaled = true;
      } catch (err) {
        run.noteLocked(err);
        return keep(
          'delete_failed',
          `the deletion journal ${o.journal} could not be written (${errnoCode(err) ?? errorMessage(err)}): nothing of it was deleted`,
        );
      }
    }
    for (const c of g.ownConversations) {
      o.onStep?.('seahorse', g.members[0]!);
      if (!run.convExists!.get(c.conversationId)) {
        convDone.add(c.conversationId);
        continue;
      }
      let why: string | null = null;
      const d = run.deleter!.deleteConversation(c.conversationId, (gone) => {
        convGone.set(c.conversationId, gone);
        try {
          checkGroup();
          return true;
        } catch (err) {
          if (!(err instanceof Changed)) throw err;
          why = err.message;
          return false;
        }
      });
      if (d.deletedMessages > 0 || d.touched) convGone.set(c.conversationId, d.deletedMessages);
      if (!d.complete) {
        if (d.touched)
          deletedParts.push(`${d.deletedMessages} of ${c.messages} seahorse messages of ${c.key} (its summaries too)`);
        throw new Changed(why ?? `seahorse conversation ${c.key} changed since planning`);
      }
      convDone.add(c.conversationId);
      deletedParts.push(`seahorse ${c.key} (${c.messages} messages)`);
      res.deletedConversations++;
    }
    for (const m of g.members) {
      for (const [step, f] of [
        ['jsonl', m.files.jsonl],
        ['meta', m.files.meta],
      ] as const) {
        o.onStep?.(step, m);
        if (!f) continue;
        checkGroup();
        unlinkExact(f, f.path);
        membership.ours(m.dir);
        unlinked.add(f.path);
        deletedParts.push(basename(f.path));
        res.deletedFileBytes += step === 'jsonl' ? m.jsonlBytes : m.metaBytes;
      }
      res.deletedSessions++;
    }
    const dirs = new Set(g.members.map((m) => m.dir));
    for (const d of dirs) fsyncDir(d);
    if (journaled) {
      o.onStep?.('done', g.members[0]!);
      try {
        clearJournal(o.journal!);
      } catch {
        // Complete anyway: the next pass finds nothing left of it and clears the journal then.
      }
    }
    // One archive per member, in member order (PassArchiver.group): each member's report entry names its own.
    res.groups.set(g.id, { action: 'delete', reason, archives: archived.pending?.paths });
    return true;
  } catch (err) {
    if (err instanceof Changed) return keep('changed_since_plan', err.message);
    const code = errnoCode(err);
    run.noteLocked(err);
    if (err instanceof GatewayBusy) return keep('interrupted', err.message);
    return keep('delete_failed', `${code ?? ''} ${errorMessage(err)}`.trim());
  }
}
