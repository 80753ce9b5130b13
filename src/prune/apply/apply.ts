import { diskFault } from '../../errors.js';
import { dbFileBytes } from '../../picoclaw/seahorse.js';
import { releaseArchiveBuffers } from '../../archive/tar.js';
import { deleteByAgeAndCount, deleteGroup } from './group.js';
import { deleteOrphans, deleteShared } from './conversations.js';
import { vacuumAndOwed } from './vacuum-step.js';
import { ApplyRun } from './run.js';
import { runSizeGuard } from './size-guard.js';
import type { ApplyOptions, ApplyResult } from './types.js';

export type * from './types.js';
export type { GroupOutcome, Outcome } from './group-outcomes.js';
export { GroupOutcomes } from './group-outcomes.js';
export { APPLY_CACHE_KIB, ApplyRun, newApplyResult } from './run.js';

/**
 * The only code that deletes. It executes a plan exactly: nothing the plan did not
 * name is touched. Per session: its seahorse rows, then its .jsonl, then its
 * .meta.json (docs/picoclaw.md#rules-for-a-separate-pruner), so an interrupted pass leaves the JSONL, the
 * canonical history, for the next pass to finish. Each victim is re-checked just
 * before it goes: if its files or rows changed since planning, it is kept.
 */

/**
 * The steps, in the order they run: the age and count victims (./apply-group.ts), orphan
 * conversations (./apply-conversations.ts), the size guard on measurements (./size-guard.ts),
 * the shared conversations whose every claimant went, then the VACUUM and the owed record
 * (./apply-vacuum.ts). A step after a stop keeps what it has not reached, and says so.
 */
export function applyPlan(o: ApplyOptions): ApplyResult {
  const run = new ApplyRun(o);
  // A full or damaged disk at any step stops the pass there (the steps after see run.stop()), and the
  // pass still ends with its report: what went, what is left, and why it stopped.
  const step = <T>(fn: () => T, otherwise: T): T => {
    if (run.res.fault) return otherwise;
    try {
      return fn();
    } catch (err) {
      if (!run.noteLocked(err)) throw err;
      run.res.interrupted = true;
      return otherwise;
    }
  };
  step(() => deleteByAgeAndCount(run), undefined);
  step(() => deleteOrphans(run), undefined);
  const size = step(() => measuredSizeStep(run), { vacuumed: false, vacuumMs: 0 });
  step(() => deleteShared(run), undefined);
  const before = run.res.fault;
  step(() => vacuumAndOwed(run, size), undefined);
  if (run.res.fault && run.res.fault !== before && o.db) {
    // The VACUUM (or the checkpoint after it) failed: SQLite rolled it back; the rows deleted stay deleted.
    const b = dbFileBytes(o.dbPath).total;
    run.res.vacuum = {
      ran: false,
      reason: `failed: ${run.res.fault.why}; the next offline pass tries again`,
      estimatedReclaimBytes: null,
      bytesBefore: b,
      bytesAfter: b,
      reclaimedBytes: null,
      durationMs: 0,
      walCheckpoint: 'none',
    };
  }
  const archiveFault = run.archiver?.failureError;
  if (!run.res.fault && archiveFault && diskFault(archiveFault)) run.noteLocked(archiveFault);
  if (run.archiver) releaseArchiveBuffers();
  return run.res;
}

/** The size guard, on measurements (src/prune/apply/size-guard.ts), unless the pass already stopped. */
function measuredSizeStep(run: ApplyRun): { vacuumed: boolean; vacuumMs: number; converted?: boolean } {
  const { db, plan, o, res } = run;
  res.owed = o.vacuumOwed ?? null;
  res.sizeEstimate = o.sizeEstimate ?? null;
  if (!db || !plan.size.checked || res.interrupted) return { vacuumed: false, vacuumMs: 0 };
  return runSizeGuard({
    db,
    plan,
    o,
    res,
    deleteGroup: (g, reason) => deleteGroup(run, g, reason),
    stop: () => run.stop(),
    locked: () => run.locked,
    progress: (what, sessions) => {
      run.total += sessions;
      run.done += sessions;
      run.collectIfGrown();
      o.onProgress?.(run.done, run.total, what);
    },
  });
}
