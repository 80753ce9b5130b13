import { dbFileBytes, readPages } from '../../picoclaw/seahorse.js';
import type { ApplyRun } from './run.js';
import { autoVacuumMode, shrinkAllowed, shrinkOnline } from './shrink.js';
import { MIN_RECLAIM_BYTES, MIN_RECLAIM_RATIO, vacuumAfterPass } from './vacuum.js';

/**
 * The last step: the VACUUM after the deletions (or the size guard's own), and the owed
 * record. A VACUUM that cannot run now (the gateway runs, the pass was stopped) is owed,
 * so the next offline pass runs it even if it deletes nothing.
 */
export function vacuumAndOwed(run: ApplyRun, size: { vacuumed: boolean; vacuumMs: number; converted?: boolean }): void {
  const { o, plan, db, res } = run;
  const vacuumedBySize = size.vacuumed;
  const deletedAny = res.deletedSessions > 0 || res.deletedConversations > 0;
  const offline = !o.online || o.forceVacuum;
  if (db && deletedAny && !vacuumedBySize && run.stop()) {
    // Stopped (SIGTERM, a deadline, a lock): no long VACUUM now; the next pass decides again.
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = {
      ran: false,
      reason: 'skipped: the pass was stopped before its end; the next pass decides again',
      estimatedReclaimBytes: null,
      bytesBefore: b,
      bytesAfter: b,
      reclaimedBytes: null,
      durationMs: 0,
      walCheckpoint: 'none',
    };
    if (plan.policy.vacuum)
      res.owed ??= {
        db: o.dbPath,
        since: new Date(o.nowMs).toISOString(),
        estimated_bytes_after: null,
        content_bytes: null,
        reason: 'a pass that deleted rows was stopped before its VACUUM',
      };
  } else if (db && (deletedAny || (o.vacuumOwed && offline && plan.policy.vacuum)) && !vacuumedBySize) {
    // What the deletions should give back, from each deleted session's estimated share (when known).
    // An owed VACUUM was counted on by earlier online passes: measured after the FTS merge, not pre-estimated.
    let estimatedFreed: number | null = null;
    if (plan.size.method && !o.vacuumOwed) {
      estimatedFreed = 0;
      for (const g of plan.groups) if (res.groups.get(g.id)!.action === 'delete') estimatedFreed += g.estimatedDbBytes;
      for (const x of plan.orphans)
        if (res.orphans.get(x.conversation.conversationId)!.action === 'delete') estimatedFreed += x.estimatedDbBytes;
    }
    res.vacuum = vacuumAfterPass(db, {
      path: o.dbPath,
      online: o.online,
      forceVacuum: o.forceVacuum,
      vacuumAllowed: plan.policy.vacuum,
      toIncremental: shrinkAllowed(plan.policy),
      freeSpace: o.freeSpace,
      estimatedFreedBytes: estimatedFreed,
    });
    if (o.vacuumOwed && offline)
      res.vacuum.reason = `owed since ${o.vacuumOwed.since} (${o.vacuumOwed.reason}): ${res.vacuum.reason}`;
    if (plan.policy.vacuum && !offline) {
      // Deferred: remembered, so that the next offline pass runs it even if it deletes nothing.
      res.owed ??= {
        db: o.dbPath,
        since: new Date(o.nowMs).toISOString(),
        estimated_bytes_after: null,
        content_bytes: null,
        reason: 'rows deleted while the gateway ran',
      };
    } else if (offline && !res.vacuum.reason.includes('skipped:')) res.owed = null;
  } else if (db && vacuumedBySize) {
    const b = dbFileBytes(o.dbPath).total;
    res.vacuum = {
      ran: true,
      reason: 'the size guard vacuums after each batch to measure progress',
      estimatedReclaimBytes: null,
      bytesBefore: plan.size.fileBytes,
      bytesAfter: b,
      reclaimedBytes: plan.size.fileBytes - b,
      durationMs: size.vacuumMs,
      walCheckpoint: 'truncate',
      converted: size.converted === true,
    };
  }
  // A full VACUUM (FTS folded) ran: the file is the truth, nothing is estimated any more.
  if (res.vacuum?.ran) res.sizeEstimate = null;
  // vacuum is off in the policy: nothing can be owed any more.
  if (!plan.policy.vacuum) res.owed = null;
  if (db && !offline) shrinkStep(run, deletedAny);
}

/**
 * Online shrink (src/prune/apply/shrink.ts): after an online pass that deleted rows, owes a VACUUM
 * or finds at least MIN_RECLAIM_BYTES of free pages, on a database an offline VACUUM converted.
 * The owed VACUUM is cleared once no free page is left (the size guard keeps counting the FTS
 * tombstones from its estimate).
 */
function shrinkStep(run: ApplyRun, deletedAny: boolean): void {
  const { o, plan, res } = run;
  const db = run.db!;
  if (!shrinkAllowed(plan.policy) || run.stop() || autoVacuumMode(db) !== 2) return;
  const p = readPages(db);
  const freeBytes = p.freelistCount * p.pageSize;
  if (!deletedAny && res.owed === null && freeBytes < MIN_RECLAIM_BYTES) return;
  // What this pass's deletions should have freed, against the pages that came free: the rest sits in the FTS
  // index as tombstones. Merged online only when that is worth what a VACUUM would be (the merge rewrites the index).
  let estimatedFreed = 0;
  for (const g of plan.groups) if (res.groups.get(g.id)!.action === 'delete') estimatedFreed += g.estimatedDbBytes;
  for (const x of plan.orphans)
    if (res.orphans.get(x.conversation.conversationId)!.action === 'delete') estimatedFreed += x.estimatedDbBytes;
  const tombstones = estimatedFreed - freeBytes;
  const foldFts = tombstones >= MIN_RECLAIM_BYTES && tombstones >= p.pageCount * p.pageSize * MIN_RECLAIM_RATIO;
  res.shrink = shrinkOnline(db, { stop: () => run.stop(), quietMs: o.quietMs, foldFts });
  if (res.shrink.ran && res.shrink.freelistAfter === 0) res.owed = null;
  if (res.vacuum) res.vacuum.bytesAfter = dbFileBytes(o.dbPath).total;
}
