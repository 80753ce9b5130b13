import { accessSync, constants, lstatSync, unlinkSync } from 'node:fs';
import { errnoCode, errorMessage } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import type { FreeSpaceReader } from '../io/freespace.js';
import type { Database } from '../io/sqlite.js';
import type { SessionRecord } from '../picoclaw/inventory.js';
import { dbFileBytes, readContentBytes } from '../picoclaw/seahorse.js';
import type { FileFacts } from '../picoclaw/sessions.js';
import { archiveSession } from './archive.js';
import type { Plan, PlanGroup, Reason } from './plan.js';
import { GatewayBusy, SeahorseDeleter, type DeleteStats } from './seahorse-delete.js';
import { foldFtsTombstones, pageStats, roomForVacuum, runVacuum, vacuumAfterPass, type VacuumReport } from './vacuum.js';

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
}

export interface SizeLoopReport {
  ran: boolean;
  steps: { deleted: number; bytesAfter: number; vacuumed: boolean }[];
  stoppedBecause: string | null;
}

export interface ApplyResult {
  /** Outcome per group id. */
  groups: Map<number, Outcome>;
  /** Outcome per orphan conversation id. */
  orphans: Map<number, Outcome>;
  deletedSessions: number;
  deletedFileBytes: number;
  deletedConversations: number;
  seahorse: DeleteStats | null;
  vacuum: VacuumReport | null;
  size: SizeLoopReport;
  interrupted: boolean;
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
  nowMs: number;
  shouldStop?: () => boolean;
  onProgress?: (done: number, total: number, what: string) => void;
  /** Online: how long the database must be quiet before each write (see SeahorseDeleter). */
  quietMs?: number;
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
    deletedSessions: 0,
    deletedFileBytes: 0,
    deletedConversations: 0,
    seahorse: null,
    vacuum: null,
    size: { ran: false, steps: [], stoppedBecause: null },
    interrupted: false,
  };
  for (const g of plan.groups) res.groups.set(g.id, { action: g.action, reason: g.reason });
  for (const or of plan.orphans) res.orphans.set(or.conversation.conversationId, { action: or.action, reason: or.reason });

  const deleter = db ? new SeahorseDeleter(db, { targetTxnMs: o.online ? 50 : 500, quietMs: o.online ? (o.quietMs ?? 100) : 0 }) : null;
  if (deleter) res.seahorse = deleter.stats;
  const convStat = db ? db.prepare(`SELECT COUNT(*) AS n, MAX(created_at) AS last FROM messages WHERE conversation_id = ?`) : null;
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

  /** Set when the database stays locked past the busy timeout: the rest of the pass is abandoned. */
  let locked: string | null = null;
  const stop = () => locked !== null || !!o.shouldStop?.();
  let done = 0;
  const total = ageCount.length + plan.orphans.filter((x) => x.action === 'delete').length;

  /** Delete one group; returns false (and records why) if it was kept. */
  const deleteGroup = (g: PlanGroup, reason: Reason): boolean => {
    try {
      for (const m of g.members) {
        sameFile(m.files.meta, m.files.meta?.path ?? 'meta');
        sameFile(m.files.jsonl, m.files.jsonl?.path ?? 'jsonl');
        try {
          checkWritable(m.files.meta);
          checkWritable(m.files.jsonl);
          accessSync(m.dir, constants.W_OK);
        } catch (err) {
          res.groups.set(g.id, { action: 'keep', reason: 'not_writable', detail: `${m.files.meta?.path ?? m.dir}: ${errnoCode(err) ?? errorMessage(err)}: fix its owner or permissions` });
          return false;
        }
      }
      // Seahorse rows unchanged since planning (a message arrived → keep).
      if (db) {
        for (const c of g.ownConversations) {
          if (!convExists!.get(c.conversationId)) continue;
          const now = convStat!.get(c.conversationId) as { n: number; last: string | null };
          if (now.n !== c.messages || now.last !== c.lastMessageAt) throw new Changed(`seahorse conversation ${c.key} changed since planning`);
        }
      }
      let archive: string | undefined;
      if (o.archiveDir) {
        const archived = new Set<number>();
        for (const m of g.members) {
          const convs = g.ownConversations.filter((c) => m.conversations.some((x) => x.conversationId === c.conversationId) && !archived.has(c.conversationId)).map((c) => c.conversationId);
          for (const c of convs) archived.add(c);
          try {
            archive = archiveSession(o.archiveDir, m, db, convs, o.nowMs);
          } catch (err) {
            res.groups.set(g.id, { action: 'keep', reason: 'archive_failed', detail: errorMessage(err) });
            return false;
          }
        }
      }
      for (const c of g.ownConversations) {
        o.onStep?.('seahorse', g.members[0]!);
        if (!convExists!.get(c.conversationId)) continue;
        const ok = deleter!.deleteConversation(c.conversationId, () => {
          const now = convStat!.get(c.conversationId) as { n: number; last: string | null };
          return now.n === c.messages && now.last === c.lastMessageAt;
        });
        if (!ok) throw new Changed(`seahorse conversation ${c.key} changed since planning`);
        res.deletedConversations++;
      }
      for (const m of g.members) {
        o.onStep?.('jsonl', m);
        unlinkExact(m.files.jsonl, m.files.jsonl?.path ?? '');
        o.onStep?.('meta', m);
        unlinkExact(m.files.meta, m.files.meta?.path ?? '');
        res.deletedFileBytes += m.jsonlBytes + m.metaBytes;
        res.deletedSessions++;
      }
      const dirs = new Set(g.members.map((m) => m.dir));
      for (const d of dirs) fsyncDir(d);
      res.groups.set(g.id, { action: 'delete', reason, archive });
      return true;
    } catch (err) {
      if (err instanceof Changed) {
        res.groups.set(g.id, { action: 'keep', reason: 'changed_since_plan', detail: err.message });
        return false;
      }
      const code = errnoCode(err);
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy) locked = errorMessage(err);
      if (err instanceof GatewayBusy) {
        res.groups.set(g.id, { action: 'keep', reason: 'interrupted', detail: err.message });
        return false;
      }
      res.groups.set(g.id, { action: 'keep', reason: 'delete_failed', detail: `${code ?? ''} ${errorMessage(err)}`.trim() });
      return false;
    }
  };

  for (const g of ageCount) {
    if (stop()) {
      res.interrupted = true;
      res.groups.set(g.id, { action: 'keep', reason: 'interrupted', detail: locked ? `not reached: ${locked}` : 'the pass was stopped' });
      continue;
    }
    deleteGroup(g, g.reason);
    o.onProgress?.(++done, total, g.key);
  }
  for (const or of plan.orphans) {
    if (or.action !== 'delete') continue;
    if (stop() || !deleter) {
      res.interrupted ||= stop();
      res.orphans.set(or.conversation.conversationId, { action: 'keep', reason: 'interrupted' });
      continue;
    }
    const c = or.conversation;
    try {
      const ok = convExists!.get(c.conversationId)
        ? deleter.deleteConversation(c.conversationId, () => {
            const now = convStat!.get(c.conversationId) as { n: number; last: string | null };
            return now.n === c.messages && now.last === c.lastMessageAt;
          })
        : true;
      if (ok) res.deletedConversations++;
      res.orphans.set(c.conversationId, ok ? { action: 'delete', reason: 'max_age_days' } : { action: 'keep', reason: 'changed_since_plan' });
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy) locked = errorMessage(err);
      res.orphans.set(c.conversationId, { action: 'keep', reason: err instanceof GatewayBusy ? 'interrupted' : 'delete_failed', detail: errorMessage(err) });
    }
    o.onProgress?.(++done, total, c.key);
  }

  // The size guard, on measurements: batches that are prefixes of the oldest-first order.
  const limit = plan.size.limitBytes;
  let vacuumedBySize = false;
  if (db && plan.size.checked && !res.interrupted) {
    res.size.ran = true;
    const queue = plan.groups.filter((g) => g.sizeEligible && res.groups.get(g.id)!.action === 'keep');
    const canVacuum = plan.policy.vacuum && (!o.online || o.forceVacuum);
    let qi = 0;
    // The size guard always vacuums first: free pages alone may bring the file under the limit.
    let deletedSinceVacuum = true;
    for (;;) {
      if (stop()) {
        res.interrupted = true;
        res.size.stoppedBecause = locked ? `seahorse.db stayed locked: ${locked}` : 'interrupted';
        break;
      }
      if (canVacuum && deletedSinceVacuum) {
        const room = roomForVacuum(o.dbPath, dbFileBytes(o.dbPath).db, o.freeSpace);
        if (!room.ok) {
          res.size.stoppedBecause = `cannot VACUUM: ${room.reason}`;
          break;
        }
        foldFtsTombstones(db);
        runVacuum(db, o.dbPath);
        vacuumedBySize = true;
        deletedSinceVacuum = false;
      }
      const bytes = dbFileBytes(o.dbPath).total;
      const last = res.size.steps[res.size.steps.length - 1];
      if (last) last.bytesAfter = bytes;
      if (bytes <= limit) break;
      if (qi >= queue.length) {
        res.size.stoppedBecause = 'only protected sessions (newest, undated or unreadable) hold the remaining rows';
        break;
      }
      // Choose the smallest prefix of what is left whose estimated share covers the excess.
      const p = pageStats(db);
      const used = (p.pageCount - p.freelist) * p.pageSize;
      const content = readContentBytes(db);
      let totalContent = 0;
      for (const b of content.values()) totalContent += b;
      const need = (canVacuum ? bytes : Math.min(bytes, used)) - limit;
      let covered = 0;
      let taken = 0;
      const step = { deleted: 0, bytesAfter: bytes, vacuumed: canVacuum };
      while (qi < queue.length && (taken === 0 || covered < need) && !stop()) {
        const g = queue[qi++]!;
        const share = totalContent === 0 ? 0 : (used * g.ownConversations.reduce((n, c) => n + (content.get(c.conversationId) ?? 0), 0)) / totalContent;
        if (deleteGroup(g, 'max_db_size_mb')) {
          covered += share;
          taken++;
          step.deleted++;
          deletedSinceVacuum = true;
        }
        o.onProgress?.(done, total, `size guard: ${g.key}`);
      }
      res.size.steps.push(step);
      if (step.deleted === 0 && qi >= queue.length) {
        res.size.stoppedBecause = 'no remaining session could be deleted';
        break;
      }
      if (!canVacuum) {
        step.bytesAfter = dbFileBytes(o.dbPath).total;
        if (step.bytesAfter >= bytes) {
          res.size.stoppedBecause = o.online && plan.policy.vacuum ? 'VACUUM deferred while the gateway runs: the file shrinks at the next offline pass' : 'a step without VACUUM made no progress (vacuum is off)';
          break;
        }
      }
    }
  }

  // Shared conversations go once every session that claimed them is gone.
  if (deleter && !res.interrupted) {
    for (const sh of plan.shared) {
      if (sh.groupIds.every((id) => res.groups.get(id)!.action === 'delete') && convExists!.get(sh.conversation.conversationId)) {
        try {
          if (deleter.deleteConversation(sh.conversation.conversationId)) res.deletedConversations++;
        } catch {
          // kept: the next pass retries
        }
      }
    }
  }

  const deletedAny = res.deletedSessions > 0 || res.deletedConversations > 0;
  if (db && deletedAny && !vacuumedBySize && stop()) {
    // Stopped (SIGTERM, a deadline, a lock): no long VACUUM now; the next pass decides again.
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = { ran: false, reason: 'skipped: the pass was stopped before its end; the next pass decides again', estimatedReclaimBytes: null, bytesBefore: b, bytesAfter: b, reclaimedBytes: null, durationMs: 0, walCheckpoint: 'none' };
  } else if (db && deletedAny && !vacuumedBySize) {
    // What the deletions should give back, from each deleted session's estimated share (when known).
    let estimatedFreed: number | null = null;
    if (plan.size.method) {
      estimatedFreed = 0;
      for (const g of plan.groups) if (res.groups.get(g.id)!.action === 'delete') estimatedFreed += g.estimatedDbBytes;
      for (const x of plan.orphans) if (res.orphans.get(x.conversation.conversationId)!.action === 'delete') estimatedFreed += x.estimatedDbBytes;
    }
    res.vacuum = vacuumAfterPass(db, { path: o.dbPath, online: o.online, forceVacuum: o.forceVacuum, vacuumAllowed: plan.policy.vacuum, freeSpace: o.freeSpace, estimatedFreedBytes: estimatedFreed });
  } else if (db && vacuumedBySize) {
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = { ran: true, reason: 'the size guard vacuums after each batch to measure progress', estimatedReclaimBytes: null, bytesBefore: plan.size.fileBytes, bytesAfter: b, reclaimedBytes: plan.size.fileBytes - b, durationMs: 0, walCheckpoint: 'truncate' };
  }
  return res;
}
