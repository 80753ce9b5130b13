import { ExitCode, diskFault, errnoCode, errorMessage, type ExitCodeValue } from '../../errors.js';
import type { FreeSpaceReader } from '../../io/freespace.js';
import { releaseGarbage } from '../../io/heap.js';
import type { Database } from '../../io/sqlite.js';
import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import { dbFileBytes, type ConversationStat } from '../../picoclaw/seahorse.js';
import type { OwedVacuum } from '../../state/vacuum-owed.js';
import type { SizeEstimate } from '../../state/size-estimate.js';
import type { ShrinkReport } from './shrink.js';
import { deleteByAgeAndCount, deleteGroup } from './group.js';
import { deleteOrphans, deleteShared } from './conversations.js';
import { vacuumAndOwed } from './vacuum-step.js';
import { PassArchiver } from './archive-step.js';
import { releaseArchiveBuffers } from '../../archive/tar.js';
import type { Plan, PlanGroup, Reason } from '../plan/plan.js';
import { GroupOutcomes } from './group-outcomes.js';
import { GatewayBusy, SeahorseDeleter, type DeleteStats } from './seahorse-delete.js';
import { getHeapStatistics } from 'node:v8';
import { ONLINE_QUIET_MS } from './write-lock.js';
import { runSizeGuard } from './size-guard.js';
import type { VacuumReport } from './vacuum.js';

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

export { GroupOutcomes } from './group-outcomes.js';

export interface ApplyResult {
  /** Outcome per group id (every plan group; see GroupOutcomes). */
  groups: GroupOutcomes;
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
  /**
   * The disk failed the pass (full, or the database damaged) at some step: it stopped there, and this
   * says where and why, with the exit code the pass ends with (NO_SPACE, DATA).
   */
  fault: { exitCode: ExitCodeValue; why: string } | null;
  /** The VACUUM owed after this pass (null: none), for the guard's state. */
  owed: OwedVacuum | null;
  /** What the size guard counts seahorse.db as after this pass (null: the file shows it), for the guard's state. */
  sizeEstimate: SizeEstimate | null;
  /** Online shrink (src/prune/apply/shrink.ts), when this pass tried it. */
  shrink: ShrinkReport | null;
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
  /** The size guard's estimate from an earlier pass that could not shrink the file (from the guard's state). */
  sizeEstimate?: SizeEstimate | null;
  /**
   * Why a group must be kept although the plan deletes it, decided just before it goes (a pin made while the
   * pass runs): the detail to report, or null to go on.
   */
  keepNow?: (g: PlanGroup) => string | null;
  /** Test hook: called after each seahorse write transaction commits or rolls back. */
  onTxn?: () => void;
  /**
   * Where the deletion in progress is journaled (src/state/deletion-journal.ts), so that the next pass
   * finishes one a kill interrupted; null or absent: no journal (no state folder).
   */
  journal?: string | null;
  /** Test hook: called between the steps of deleting one session ('done': deleted, its journal not yet cleared). */
  onStep?: (step: 'seahorse' | 'jsonl' | 'meta' | 'done', s: SessionRecord) => void;
}

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

/** A pass's result before it deletes anything: every group and orphan as the plan decided. */
export function newApplyResult(plan: Plan): ApplyResult {
  return {
    groups: new GroupOutcomes(plan.groups),
    orphans: new Map(),
    shared: new Map(),
    deletedSessions: 0,
    deletedFileBytes: 0,
    deletedConversations: 0,
    seahorse: null,
    vacuum: null,
    size: { ran: false, steps: [], stoppedBecause: null, unmet: null },
    owed: null,
    sizeEstimate: null,
    shrink: null,
    interrupted: false,
    fault: null,
  };
}

type Statement = ReturnType<Database['prepare']>;

/**
 * SQLite's page cache for the deletions and the VACUUM after them, in KiB (the pass's write connection and its
 * temp tables get the same). The deletions touch each page a few times in conversation order and VACUUM copies
 * b-trees in order, so more buys no time: on a 20,000-session home the pass took the same CPU time with 2 MB as
 * with 8 MB (38.0 s against 38.8 s), and the same wall time with 1 MB as with 2 MB (21.2 s), as did a VACUUM of
 * the whole 411 MB file; each step down lowered the peak (8 MiB from 8 MB to 2, 5 MiB from 2 to 1). What misses
 * the cache is in the kernel's page cache.
 */
export const APPLY_CACHE_KIB = 1000;

/**
 * How far the heap may grow over what the last full collection left before the pass collects
 * again, between two sessions. Archiving a session makes rows, lines and buffers that V8 promotes
 * while the archive is being written; left to its own limits the old generation grew by 24 MiB of
 * such garbage over a 20,000-session pass. A collection costs tens of milliseconds and comes every
 * few thousand sessions.
 */
const HEAP_SLACK_BYTES = 4 * 1024 * 1024;

/** What the steps of one pass share: the result so far, the deleter, the archiver, progress, and why it stops. */
export class ApplyRun {
  readonly plan: Plan;
  readonly db: Database | null;
  readonly res: ApplyResult;
  readonly deleter: SeahorseDeleter | null;
  readonly archiver: PassArchiver | null;
  /** The age and count victims; the size step's planned ones wait for its measurements. */
  readonly ageCount: PlanGroup[];
  readonly convExists: Statement | null;
  private readonly convStat: Statement | null;
  /** Set when the database stays locked past the busy timeout: the rest of the pass is abandoned. */
  locked: string | null = null;
  // Progress counts sessions (alias group members), as the report's totals do; orphan
  // conversations and the size guard's extra sessions report progress without changing it.
  done = 0;
  total: number;
  private heapFloor = getHeapStatistics().used_heap_size;

  constructor(readonly o: ApplyOptions) {
    const { plan, db } = o;
    this.plan = plan;
    this.db = db;
    const res = newApplyResult(plan);
    this.res = res;
    for (const or of plan.orphans)
      res.orphans.set(or.conversation.conversationId, { action: or.action, reason: or.reason });

    // Pages the checks before the pass cached beyond this are given back now, before the deleter's temp tables.
    if (db) db.pragma(`cache_size = ${-APPLY_CACHE_KIB}`);
    const deleter = db
      ? new SeahorseDeleter(db, {
          targetTxnMs: o.online ? 50 : 500,
          quietMs: o.online ? (o.quietMs ?? ONLINE_QUIET_MS) : 0,
          onTxn: o.onTxn ? () => o.onTxn!() : undefined,
        })
      : null;
    this.deleter = deleter;
    if (deleter) res.seahorse = deleter.stats;
    const stat = `SELECT COUNT(*) AS n, MAX(created_at) AS last, MAX(message_id) AS lastId FROM messages`;
    this.convStat = db ? db.prepare(`${stat} WHERE conversation_id = ?`) : null;
    this.convExists = db ? db.prepare(`SELECT 1 FROM conversations WHERE conversation_id = ?`) : null;

    this.ageCount = plan.groups.filter((g) => g.action === 'delete' && g.reason !== 'max_db_size_mb');
    const sizePlanned = plan.groups.filter((g) => g.action === 'delete' && g.reason === 'max_db_size_mb');
    // The size step re-decides from measurements; until it runs, its planned victims are kept.
    for (const g of sizePlanned)
      res.groups.set(g.id, { action: 'keep', reason: 'size_limit_reached', detail: 'not needed once measured' });

    if (deleter) {
      // One list, filled in place: no per-group arrays to spread.
      const ids: number[] = [];
      for (const g of plan.groups)
        if (g.action === 'delete' || g.sizeEligible) for (const c of g.ownConversations) ids.push(c.conversationId);
      for (const x of plan.orphans) if (x.action === 'delete') ids.push(x.conversation.conversationId);
      for (const x of plan.shared) ids.push(x.conversation.conversationId);
      deleter.prepare(ids);
    }

    const deletedRows = () => (deleter ? deleter.stats.messages + deleter.stats.parts + deleter.stats.summaries : 0);
    const archiver = o.archiveDir
      ? new PassArchiver(o.archiveDir, o.archiveHome ?? o.archiveDir, db, o.nowMs, deletedRows)
      : null;
    this.archiver = archiver;
    if (archiver) res.groups.archivesAt((s) => archiver.defaultPath(s));
    this.total = this.ageCount.reduce((n, g) => n + g.members.length, 0);
  }

  /** Between two sessions: collect once the heap holds HEAP_SLACK_BYTES more than after the last collection. */
  tidy(): void {
    if (getHeapStatistics().used_heap_size < this.heapFloor + HEAP_SLACK_BYTES) return;
    releaseGarbage(0);
    this.heapFloor = getHeapStatistics().used_heap_size;
  }

  stop(): boolean {
    return this.locked !== null || this.res.fault !== null || this.archiver?.failure != null || !!this.o.shouldStop?.();
  }

  /**
   * A busy or locked database abandons the rest of the pass; so does a full or damaged disk, which also
   * sets the pass's fault (the first one stays). True when err was one of those.
   */
  noteLocked(err: unknown): boolean {
    const code = errnoCode(err);
    const busy = code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || err instanceof GatewayBusy;
    if (busy) this.locked = errorMessage(err);
    const fault = diskFault(err);
    if (fault && !this.res.fault) {
      const what = fault === 'no_space' ? 'the disk is full' : 'the disk or seahorse.db is damaged';
      this.res.fault = {
        exitCode: fault === 'no_space' ? ExitCode.NO_SPACE : ExitCode.DATA,
        why: `${what} (${code ?? 'error'}: ${errorMessage(err)})`,
      };
    }
    return busy || fault !== null;
  }

  /**
   * Whether conversation c still holds exactly what the plan saw, less the `gone` oldest messages this pass deleted.
   */
  convUnchanged(c: ConversationStat, gone: number): boolean {
    const now = this.convStat!.get(c.conversationId) as { n: number; last: string | null; lastId: number | null };
    if (now.n !== c.messages - gone) return false;
    if (now.n === 0) return true;
    return now.last === c.lastMessageAt && (c.lastMessageId === undefined || now.lastId === c.lastMessageId);
  }
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
      run.tidy();
      o.onProgress?.(run.done, run.total, what);
    },
  });
}
