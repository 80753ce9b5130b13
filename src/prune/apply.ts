import { accessSync, constants, lstatSync, unlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { errnoCode, errorMessage } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import type { FreeSpaceReader } from '../io/freespace.js';
import type { Database } from '../io/sqlite.js';
import type { SessionRecord } from '../picoclaw/inventory.js';
import { dbFileBytes, type ConversationStat } from '../picoclaw/seahorse.js';
import type { FileFacts } from '../picoclaw/sessions.js';
import { PassArchiver, type Pending } from './archive-pass.js';
import type { Plan, PlanGroup, Reason } from './plan.js';
import { GatewayBusy, SeahorseDeleter, type DeleteStats } from './seahorse-delete.js';
import { ONLINE_QUIET_MS } from './write-lock.js';
import { runSizeGuard } from './size-guard.js';
import { vacuumAfterPass, type VacuumReport } from './vacuum.js';
import type { OwedVacuum } from '../state/vacuum-owed.js';

/**
 * The only code that deletes. It executes a plan exactly: nothing the plan did not
 * name is touched. Per session: its seahorse rows, then its .jsonl, then its
 * .meta.json (docs/picoclaw.md#rules-for-a-separate-pruner), so an interrupted pass leaves the JSONL, the
 * canonical history, for the next pass to finish. Each victim is re-checked just
 * before it goes: if its files or rows changed since planning, it is kept.
 */

export interface Outcome {
  action: 'keep' | 'delete';
  reason: Reason;
  detail?: string;
  archive?: string;
  /** Kept, but part of it was deleted before a change stopped it: what went. */
  partial?: string;
}

export interface SizeLoopReport {
  ran: boolean;
  steps: { deleted: number; bytesAfter: number; vacuumed: boolean }[];
  stoppedBecause: string | null;
  /** Set when the limit cannot be met by deleting (protected sessions hold the rows): why, and who. */
  unmet: string | null;
}

export interface ApplyResult {
  /** Outcome per group id. */
  groups: Map<number, Outcome>;
  /** Outcome per orphan conversation id. */
  orphans: Map<number, Outcome>;
  /** Outcome per shared conversation id, for those whose every claimant was deleted. */
  shared: Map<number, Outcome>;
  deletedSessions: number;
  deletedFileBytes: number;
  deletedConversations: number;
  seahorse: DeleteStats | null;
  vacuum: VacuumReport | null;
  size: SizeLoopReport;
  interrupted: boolean;
  /** The VACUUM owed after this pass (null: none), for the guard's state. */
  owed: OwedVacuum | null;
}

export interface ApplyOptions {
  plan: Plan;
  db: Database | null;
  dbPath: string;
  /** The gateway is running and ready: short transactions, no VACUUM unless forced. */
  online: boolean;
  forceVacuum: boolean;
  freeSpace: FreeSpaceReader;
  archiveDir: string | null;
  /** Real path of the home, recorded in each archive (needed with archiveDir). */
  archiveHome?: string;
  nowMs: number;
  shouldStop?: () => boolean;
  onProgress?: (done: number, total: number, what: string) => void;
  /** Online: how long the database must be quiet before each write (see SeahorseDeleter). */
  quietMs?: number;
  /** A VACUUM an earlier online pass deferred (from the guard's state). */
  vacuumOwed?: OwedVacuum | null;
  /** Test hook: called after each seahorse write transaction commits or rolls back. */
  onTxn?: () => void;
  /** Test hook: called between the steps of deleting one session. */
  onStep?: (step: 'seahorse' | 'jsonl' | 'meta', s: SessionRecord) => void;
}

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
  if (st.ino !== f.ino || st.size !== f.bytes || st.mtimeMs !== f.mtimeMs) throw new Changed(`${what} changed since planning (new message or rewrite)`);
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

export function applyPlan(o: ApplyOptions): ApplyResult {
  const { plan, db } = o;
  const res: ApplyResult = {
    groups: new Map(),
    orphans: new Map(),
    shared: new Map(),
    deletedSessions: 0,
    deletedFileBytes: 0,
    deletedConversations: 0,
    seahorse: null,
    vacuum: null,
    size: { ran: false, steps: [], stoppedBecause: null, unmet: null },
    owed: null,
    interrupted: false,
  };
  for (const g of plan.groups) res.groups.set(g.id, { action: g.action, reason: g.reason });
  for (const or of plan.orphans) res.orphans.set(or.conversation.conversationId, { action: or.action, reason: or.reason });

  const deleter = db ? new SeahorseDeleter(db, { targetTxnMs: o.online ? 50 : 500, quietMs: o.online ? (o.quietMs ?? ONLINE_QUIET_MS) : 0, onTxn: o.onTxn ? () => o.onTxn!() : undefined }) : null;
  if (deleter) res.seahorse = deleter.stats;
  const convStat = db ? db.prepare(`SELECT COUNT(*) AS n, MAX(created_at) AS last, MAX(message_id) AS lastId FROM messages WHERE conversation_id = ?`) : null;
  const convExists = db ? db.prepare(`SELECT 1 FROM conversations WHERE conversation_id = ?`) : null;

  const ageCount = plan.groups.filter((g) => g.action === 'delete' && g.reason !== 'max_db_size_mb');
  const sizePlanned = plan.groups.filter((g) => g.action === 'delete' && g.reason === 'max_db_size_mb');
  // The size step re-decides from measurements; until it runs, its planned victims are kept.
  for (const g of sizePlanned) res.groups.set(g.id, { action: 'keep', reason: 'size_limit_reached', detail: 'not needed once measured' });

  if (deleter) {
    const ids = [
      ...plan.groups.flatMap((g) => (g.action === 'delete' || g.sizeEligible ? g.ownConversations.map((c) => c.conversationId) : [])),
      ...plan.orphans.filter((x) => x.action === 'delete').map((x) => x.conversation.conversationId),
      ...plan.shared.map((x) => x.conversation.conversationId),
    ];
    deleter.prepare(ids);
  }

  const archiver = o.archiveDir ? new PassArchiver(o.archiveDir, o.archiveHome ?? o.archiveDir, db, o.nowMs, () => (deleter ? deleter.stats.messages + deleter.stats.parts + deleter.stats.summaries : 0)) : null;
  /** Set when the database stays locked past the busy timeout: the rest of the pass is abandoned. */
  let locked: string | null = null;
  const stop = () => locked !== null || archiver?.failure != null || !!o.shouldStop?.();
  // Progress counts sessions (alias group members), as the report's totals do; orphan
  // conversations and the size guard's extra sessions report progress without changing it.
  let done = 0;
  let total = ageCount.reduce((n, g) => n + g.members.length, 0);

  /** Whether conversation c still holds exactly what the plan saw, less the `gone` oldest messages this pass deleted. */
  const convUnchanged = (c: ConversationStat, gone: number): boolean => {
    const now = convStat!.get(c.conversationId) as { n: number; last: string | null; lastId: number | null };
    if (now.n !== c.messages - gone) return false;
    if (now.n === 0) return true;
    return now.last === c.lastMessageAt && (c.lastMessageId === undefined || now.lastId === c.lastMessageId);
  };

  /** Delete one group; returns false (and records why) if it was kept, whole or in part. */
  const deleteGroup = (g: PlanGroup, reason: Reason): boolean => {
    pending = null;
    const ok = deleteGroupOnce(g, reason);
    if (!ok) archiver?.kept(pending);
    return ok;
  };
  let pending: Pending | null = null;
  const deleteGroupOnce = (g: PlanGroup, reason: Reason): boolean => {
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
    const checkGroup = (): void => {
      for (const m of g.members) {
        for (const f of [m.files.meta, m.files.jsonl]) if (f && !unlinked.has(f.path)) sameFile(f, f.path);
      }
      if (db) {
        for (const c of g.ownConversations) {
          if (convDone.has(c.conversationId) || !convExists!.get(c.conversationId)) continue;
          if (!convUnchanged(c, convGone.get(c.conversationId) ?? 0)) throw new Changed(`seahorse conversation ${c.key} changed since planning`);
        }
      }
    };
    const leftOf = (): string => {
      const left: string[] = [];
      for (const m of g.members) for (const f of [m.files.jsonl, m.files.meta]) if (f && !unlinked.has(f.path)) left.push(basename(f.path));
      for (const c of g.ownConversations) {
        if (convDone.has(c.conversationId)) continue;
        const gone = convGone.get(c.conversationId) ?? 0;
        left.push(`seahorse ${c.key} (${c.messages - gone}${gone ? ` of ${c.messages}` : ''} messages)`);
      }
      return left.length > 0 ? left.join(', ') : 'nothing';
    };
    const keep = (r: Reason, detail: string): false => {
      if (deletedParts.length > 0) {
        res.groups.set(g.id, { action: 'keep', reason: r, detail: `${detail}; stopped part-way: deleted ${deletedParts.join(', ')}; left: ${leftOf()}`, partial: deletedParts.join(', ') });
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
          return keep('not_writable', `${m.files.meta?.path ?? m.dir}: ${errnoCode(err) ?? errorMessage(err)}: fix its owner or permissions`);
        }
      }
      checkGroup();
      // Archived at the moment of deletion, after every re-check; removed again if the group is kept whole.
      if (archiver) {
        try {
          pending = archiver.group(g.members, g.ownConversations.map((c) => c.conversationId));
        } catch (err) {
          return keep('archive_failed', errorMessage(err));
        }
      }
      for (const c of g.ownConversations) {
        o.onStep?.('seahorse', g.members[0]!);
        if (!convExists!.get(c.conversationId)) {
          convDone.add(c.conversationId);
          continue;
        }
        let why: string | null = null;
        const d = deleter!.deleteConversation(c.conversationId, (gone) => {
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
          if (d.touched) deletedParts.push(`${d.deletedMessages} of ${c.messages} seahorse messages of ${c.key} (its summaries too)`);
          throw new Changed(why ?? `seahorse conversation ${c.key} changed since planning`);
        }
        convDone.add(c.conversationId);
        deletedParts.push(`seahorse ${c.key} (${c.messages} messages)`);
        res.deletedConversations++;
      }
      for (const m of g.members) {
        for (const [step, f] of [['jsonl', m.files.jsonl], ['meta', m.files.meta]] as const) {
          o.onStep?.(step, m);
          if (!f) continue;
          checkGroup();
          unlinkExact(f, f.path);
          unlinked.add(f.path);
          deletedParts.push(basename(f.path));
          res.deletedFileBytes += step === 'jsonl' ? m.jsonlBytes : m.metaBytes;
        }
        res.deletedSessions++;
      }
      const dirs = new Set(g.members.map((m) => m.dir));
      for (const d of dirs) fsyncDir(d);
      res.groups.set(g.id, { action: 'delete', reason, archive: pending?.paths[pending.paths.length - 1] });
      return true;
    } catch (err) {
      if (err instanceof Changed) return keep('changed_since_plan', err.message);
      const code = errnoCode(err);
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy) locked = errorMessage(err);
      if (err instanceof GatewayBusy) return keep('interrupted', err.message);
      return keep('delete_failed', `${code ?? ''} ${errorMessage(err)}`.trim());
    }
  };

  for (const g of ageCount) {
    if (stop()) {
      res.interrupted = true;
      res.groups.set(g.id, { action: 'keep', reason: 'interrupted', detail: locked ? `not reached: ${locked}` : archiver?.failure ? `not reached: an archive could not be written (${archiver.failure})` : 'the pass was stopped' });
      continue;
    }
    deleteGroup(g, g.reason);
    done += g.members.length;
    o.onProgress?.(done, total, g.key);
  }
  for (const or of plan.orphans) {
    if (or.action !== 'delete') continue;
    if (stop() || !deleter) {
      res.interrupted ||= stop();
      res.orphans.set(or.conversation.conversationId, { action: 'keep', reason: 'interrupted' });
      continue;
    }
    const c = or.conversation;
    let orphanArchive: Pending | null = null;
    try {
      if (archiver && convExists!.get(c.conversationId)) {
        try {
          orphanArchive = archiver.orphan(c);
        } catch (err) {
          res.orphans.set(c.conversationId, { action: 'keep', reason: 'archive_failed', detail: errorMessage(err) });
          o.onProgress?.(++done, total, c.key);
          continue;
        }
      }
      const d = convExists!.get(c.conversationId) ? deleter.deleteConversation(c.conversationId, (gone) => convUnchanged(c, gone)) : { complete: true, touched: false, deletedMessages: 0 };
      if (d.complete) res.deletedConversations++;
      res.orphans.set(
        c.conversationId,
        d.complete
          ? { action: 'delete', reason: 'max_age_days', archive: orphanArchive?.paths[0] }
          : { action: 'keep', reason: 'changed_since_plan', detail: d.touched ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages (and its summaries) were deleted, the rest kept` : 'a new message arrived since planning', ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}) },
      );
      if (!d.complete) archiver?.kept(orphanArchive);
    } catch (err) {
      archiver?.kept(orphanArchive);
      const code = errnoCode(err);
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy) locked = errorMessage(err);
      res.orphans.set(c.conversationId, { action: 'keep', reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed', detail: errorMessage(err) });
    }
    o.onProgress?.(done, total, c.key);
  }

  // The size guard, on measurements (src/prune/size-guard.ts).
  res.owed = o.vacuumOwed ?? null;
  let vacuumedBySize = false;
  let vacuumMs = 0;
  if (db && plan.size.checked && !res.interrupted) {
    const g = runSizeGuard({
      db,
      plan,
      o,
      res,
      deleteGroup,
      stop,
      locked: () => locked,
      progress: (what, sessions) => {
        total += sessions;
        done += sessions;
        o.onProgress?.(done, total, what);
      },
    });
    vacuumedBySize = g.vacuumed;
    vacuumMs = g.vacuumMs;
  }

  // Shared conversations go once every session that claimed them is gone, with the same re-check.
  for (const sh of plan.shared) {
    const c = sh.conversation;
    if (!sh.groupIds.every((id) => res.groups.get(id)!.action === 'delete')) continue;
    if (!deleter || res.interrupted || stop()) {
      res.shared.set(c.conversationId, { action: 'keep', reason: 'interrupted', detail: 'not reached: the pass was stopped; the next pass deletes it' });
      continue;
    }
    let shArchive: Pending | null = null;
    try {
      if (archiver && convExists!.get(c.conversationId)) {
        try {
          shArchive = archiver.orphan(c);
        } catch (err) {
          res.shared.set(c.conversationId, { action: 'keep', reason: 'archive_failed', detail: errorMessage(err) });
          continue;
        }
      }
      const d = convExists!.get(c.conversationId) ? deleter.deleteConversation(c.conversationId, (gone) => convUnchanged(c, gone)) : { complete: true, touched: false, deletedMessages: 0 };
      if (d.complete) {
        res.deletedConversations++;
        res.shared.set(c.conversationId, { action: 'delete', reason: 'max_age_days', detail: `every session that claimed it was deleted`, archive: shArchive?.paths[0] });
      } else {
        archiver?.kept(shArchive);
        res.shared.set(c.conversationId, { action: 'keep', reason: 'changed_since_plan', detail: d.touched ? `a new message arrived part-way: ${d.deletedMessages} of ${c.messages} messages were deleted, the rest kept` : 'a new message arrived since planning', ...(d.touched ? { partial: `${d.deletedMessages} of ${c.messages} messages` } : {}) });
      }
    } catch (err) {
      archiver?.kept(shArchive);
      const code = errnoCode(err);
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy) locked = errorMessage(err);
      res.shared.set(c.conversationId, { action: 'keep', reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed', detail: `${code ?? ''} ${errorMessage(err)}`.trim() });
    }
  }

  const deletedAny = res.deletedSessions > 0 || res.deletedConversations > 0;
  const offline = !o.online || o.forceVacuum;
  if (db && deletedAny && !vacuumedBySize && stop()) {
    // Stopped (SIGTERM, a deadline, a lock): no long VACUUM now; the next pass decides again.
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = { ran: false, reason: 'skipped: the pass was stopped before its end; the next pass decides again', estimatedReclaimBytes: null, bytesBefore: b, bytesAfter: b, reclaimedBytes: null, durationMs: 0, walCheckpoint: 'none' };
    if (plan.policy.vacuum) res.owed ??= { db: o.dbPath, since: new Date(o.nowMs).toISOString(), estimated_bytes_after: null, content_bytes: null, reason: 'a pass that deleted rows was stopped before its VACUUM' };
  } else if (db && (deletedAny || (o.vacuumOwed && offline && plan.policy.vacuum)) && !vacuumedBySize) {
    // What the deletions should give back, from each deleted session's estimated share (when known).
    // An owed VACUUM was counted on by earlier online passes: measured after the FTS merge, not pre-estimated.
    let estimatedFreed: number | null = null;
    if (plan.size.method && !o.vacuumOwed) {
      estimatedFreed = 0;
      for (const g of plan.groups) if (res.groups.get(g.id)!.action === 'delete') estimatedFreed += g.estimatedDbBytes;
      for (const x of plan.orphans) if (res.orphans.get(x.conversation.conversationId)!.action === 'delete') estimatedFreed += x.estimatedDbBytes;
    }
    res.vacuum = vacuumAfterPass(db, { path: o.dbPath, online: o.online, forceVacuum: o.forceVacuum, vacuumAllowed: plan.policy.vacuum, freeSpace: o.freeSpace, estimatedFreedBytes: estimatedFreed });
    if (o.vacuumOwed && offline) res.vacuum.reason = `owed since ${o.vacuumOwed.since} (${o.vacuumOwed.reason}): ${res.vacuum.reason}`;
    if (plan.policy.vacuum && !offline) {
      // Deferred: remembered, so that the next offline pass runs it even if it deletes nothing.
      res.owed ??= { db: o.dbPath, since: new Date(o.nowMs).toISOString(), estimated_bytes_after: null, content_bytes: null, reason: 'rows deleted while the gateway ran' };
    } else if (offline && !res.vacuum.reason.includes('skipped:')) res.owed = null;
  } else if (db && vacuumedBySize) {
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = { ran: true, reason: 'the size guard vacuums after each batch to measure progress', estimatedReclaimBytes: null, bytesBefore: plan.size.fileBytes, bytesAfter: b, reclaimedBytes: plan.size.fileBytes - b, durationMs: vacuumMs, walCheckpoint: 'truncate' };
  }
  // vacuum is off in the policy: nothing can be owed any more.
  if (!plan.policy.vacuum) res.owed = null;
  return res;
}
