import { formatBytes } from '../../io/bytes.js';
import type { Database } from '../../io/sqlite.js';
import { dbFileBytes, readContentBytes, readPages } from '../../picoclaw/seahorse.js';
import type { ApplyOptions, ApplyResult } from './types.js';
import { sizeHolders, type Plan, type PlanGroup, type Reason } from '../plan/plan.js';
import { foldFtsTombstones, MIN_RECLAIM_BYTES, MIN_RECLAIM_RATIO, roomForVacuum, runVacuum } from './vacuum.js';
import { scaledEstimate } from '../../state/size-estimate.js';
import { shrinkAllowed } from './shrink.js';

/**
 * The size guard (max_db_size_mb), on measurements: it deletes batches that are prefixes of
 * the oldest-first order of the sessions the plan found eligible, each batch the smallest
 * whose estimated share covers the excess, and measures after each VACUUM.
 *
 * - A VACUUM runs only when it can give space back (rows deleted, an owed VACUUM, enough
 *   free pages): one that gives nothing back still rewrites the whole file, every pass.
 * - While the gateway runs the VACUUM is deferred, so the file cannot shrink: the deleted
 *   sessions' share is counted against an estimate, the VACUUM is owed (the guard's state),
 *   and later online passes measure against that estimate, not the unshrunk file.
 * - A session kept at this point (changed, not writable) stops the guard: deleting the next
 *   one in its place would make a safety refusal cost another session.
 */
export interface SizeGuardContext {
  db: Database;
  plan: Plan;
  o: ApplyOptions;
  res: ApplyResult;
  deleteGroup: (g: PlanGroup, reason: Reason) => boolean;
  stop: () => boolean;
  /** Why the database stayed locked, if it did. */
  locked: () => string | null;
  /** Called after each group the size guard tried, with its member count (progress counts sessions). */
  progress: (what: string, sessions: number) => void;
}

/** Why this pass cannot measure the true size (a full VACUUM now), or null when it can. */
function whyNoShrink(plan: Plan, o: ApplyOptions): string | null {
  if (!plan.policy.vacuum) return 'vacuum is off, so the file does not shrink';
  if (o.online && !o.forceVacuum) return 'VACUUM deferred while the gateway runs';
  const room = roomForVacuum(o.dbPath, dbFileBytes(o.dbPath).db, o.freeSpace);
  return room.ok ? null : `cannot VACUUM: ${room.reason}`;
}

export function runSizeGuard(ctx: SizeGuardContext): { vacuumed: boolean; vacuumMs: number; converted: boolean } {
  const { db, plan, o, res, deleteGroup, stop, locked, progress } = ctx;
  const limit = plan.size.limitBytes;
  let vacuumedBySize = false;
  let vacuumMs = 0;
  let converted = false;
  /**
   * Every reason the file cannot shrink to its true size during this pass is one case: the
   * deletions are counted against an estimate kept in the state folder (src/state/size-estimate.ts),
   * so no later pass deletes again for the same excess, whichever pass it is and whatever it can do.
   */
  const noShrink = whyNoShrink(plan, o);
  const canVacuum = noShrink === null;
  /** Online with VACUUM allowed: the VACUUM is owed to the next offline pass. */
  const deferred = plan.policy.vacuum && o.online && !o.forceVacuum;
  res.size.ran = true;
  // An owed record of an older state folder carries the same estimate.
  const owedIn = o.vacuumOwed;
  res.sizeEstimate =
    o.sizeEstimate ??
    (owedIn && owedIn.estimated_bytes_after !== null
      ? {
          db: o.dbPath,
          since: owedIn.since,
          estimated_bytes_after: owedIn.estimated_bytes_after,
          content_bytes: owedIn.content_bytes ?? 0,
          reason: owedIn.reason,
        }
      : null);
  const queue = plan.groups.filter((g) => g.sizeEligible && res.groups.get(g.id)!.action === 'keep');
  let qi = 0;
  // VACUUM first only when it can give space back: rows deleted (by this pass, or by a pass that
  // could not shrink the file) or enough free pages. A VACUUM that gives nothing back still rewrites the
  // whole file (an 830 MB database: 2.5 GB written), on every pass.
  const p0 = readPages(db);
  const free0 = p0.freelistCount * p0.pageSize;
  const fileBytes0 = dbFileBytes(o.dbPath).total;
  let deletedSinceVacuum =
    res.deletedConversations > 0 ||
    o.vacuumOwed != null ||
    res.sizeEstimate !== null ||
    (free0 >= MIN_RECLAIM_BYTES &&
      (free0 >= p0.pageCount * p0.pageSize * MIN_RECLAIM_RATIO || fileBytes0 - free0 <= limit));
  const vacuumNow = (): void => {
    const t = performance.now();
    foldFtsTombstones(db);
    converted = runVacuum(db, { toIncremental: !o.online && shrinkAllowed(plan.policy) }).converted || converted;
    vacuumMs += performance.now() - t;
    vacuumedBySize = true;
    deletedSinceVacuum = false;
    // The file is the truth now: nothing is owed, nothing estimated.
    res.owed = null;
    res.sizeEstimate = null;
  };
  for (;;) {
    if (stop()) {
      res.interrupted = true;
      res.size.stoppedBecause = locked() ? `seahorse.db stayed locked: ${locked()}` : 'interrupted';
      break;
    }
    if (canVacuum && deletedSinceVacuum) vacuumNow();
    const bytes = dbFileBytes(o.dbPath).total;
    const last = res.size.steps[res.size.steps.length - 1];
    if (last) last.bytesAfter = bytes;
    if (bytes <= limit) break;
    const p = readPages(db);
    const used = (p.pageCount - p.freelistCount) * p.pageSize;
    const content = readContentBytes(db);
    let totalContent = 0;
    for (const b of content.values()) totalContent += b;
    // What the deletions are measured against: after a VACUUM the file itself; before one, what a
    // VACUUM would leave; when the file cannot shrink, the smaller of that and the kept estimate,
    // grown with the content since.
    let basis = canVacuum ? (vacuumedBySize ? bytes : used) : Math.min(bytes, used);
    const est = res.sizeEstimate;
    const owed = res.owed;
    if (!canVacuum) {
      if (est) basis = Math.min(basis, scaledEstimate(est, totalContent));
      if (basis <= limit) {
        if (est) res.sizeEstimate = { ...est, estimated_bytes_after: basis, content_bytes: totalContent };
        if (deferred)
          res.owed = {
            db: o.dbPath,
            since: owed?.since ?? new Date(o.nowMs).toISOString(),
            estimated_bytes_after: basis,
            content_bytes: totalContent,
            reason: owed?.reason ?? 'the size guard deleted while the gateway ran',
          };
        res.size.stoppedBecause =
          `${noShrink}${deferred && owed ? ` (owed since ${owed.since})` : ''}` +
          `: the estimated size after it, ${formatBytes(basis)}, fits the limit; nothing more is deleted for this excess` +
          (deferred ? '; it runs at the next pass while the gateway is stopped (the pre-start pass)' : '');
        break;
      }
    }
    if (qi >= queue.length) {
      res.size.stoppedBecause =
        `the limit cannot be met: only protected sessions (newest, undated or unreadable) ` +
        `hold the remaining rows: ${sizeHolders(plan, res)}; no VACUUM (it would give nothing back)`;
      res.size.unmet = res.size.stoppedBecause;
      break;
    }
    // Choose the smallest prefix of what is left whose estimated share covers the excess.
    const need = basis - limit;
    let covered = 0;
    let coveredContent = 0;
    let taken = 0;
    let refused: PlanGroup | null = null;
    const step = { deleted: 0, bytesAfter: bytes, vacuumed: canVacuum };
    while (qi < queue.length && (taken === 0 || covered < need) && !stop()) {
      const g = queue[qi++]!;
      const own = g.ownConversations.reduce((n, c) => n + (content.get(c.conversationId) ?? 0), 0);
      const share = totalContent === 0 ? 0 : (basis * own) / totalContent;
      if (deleteGroup(g, 'max_db_size_mb')) {
        covered += share;
        coveredContent += own;
        taken++;
        step.deleted++;
        deletedSinceVacuum = true;
      } else {
        refused = g;
      }
      progress(`size guard: ${g.key}`, g.members.length);
      if (refused) break;
    }
    res.size.steps.push(step);
    if (!canVacuum && step.deleted > 0) {
      // The file cannot show these deletions: what they gave back is counted from here on, by every pass.
      step.bytesAfter = dbFileBytes(o.dbPath).total;
      const after = Math.max(0, Math.round(basis - covered));
      res.sizeEstimate = {
        db: o.dbPath,
        since: est?.since ?? new Date(o.nowMs).toISOString(),
        estimated_bytes_after: after,
        content_bytes: totalContent - coveredContent,
        reason: noShrink,
      };
      if (deferred)
        res.owed = {
          db: o.dbPath,
          since: owed?.since ?? new Date(o.nowMs).toISOString(),
          estimated_bytes_after: after,
          content_bytes: totalContent - coveredContent,
          reason: 'the size guard deleted while the gateway ran',
        };
    }
    if (refused) {
      // A session the guard would not touch still holds its rows; deleting the next one in its
      // place would make a safety refusal cost another session. The next pass measures again.
      res.size.stoppedBecause =
        `${refused.key} was kept (${res.groups.get(refused.id)!.reason}): the size guard stops rather than delete another session in its place;` +
        ` the next pass measures again`;
      if (canVacuum && deletedSinceVacuum) {
        vacuumNow();
        step.bytesAfter = dbFileBytes(o.dbPath).total;
      }
      break;
    }
    if (step.deleted === 0 && qi >= queue.length) {
      res.size.stoppedBecause = 'no remaining session could be deleted';
      break;
    }
    if (!canVacuum) {
      res.size.stoppedBecause =
        covered >= need
          ? `${noShrink}: the deleted sessions' estimated share (${formatBytes(covered)}) covers the excess; ` +
            `no later pass deletes again for this excess (the estimate is kept in the state folder until a VACUUM ` +
            `measures the file)` +
            (deferred ? '; the file shrinks at the next pass while the gateway is stopped (the pre-start pass)' : '')
          : `${noShrink}: the file shrinks at the next pass that can VACUUM`;
      break;
    }
  }
  return { vacuumed: vacuumedBySize, vacuumMs, converted };
}
