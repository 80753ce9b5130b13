import { ExitCode, diskFault, errnoCode, errorMessage } from '../../errors.js';
import { releaseGarbage } from '../../io/heap.js';
import type { Database } from '../../io/sqlite.js';
import type { ConversationStat } from '../../picoclaw/seahorse.js';
import { getHeapStatistics } from 'node:v8';
import type { Plan, PlanGroup } from '../plan/plan.js';
import { PassArchiver } from './archive-step.js';
import { GroupOutcomes } from './group-outcomes.js';
import { GatewayBusy, SeahorseDeleter } from './seahorse-delete.js';
import type { ApplyOptions, ApplyResult } from './types.js';
import { ONLINE_QUIET_MS } from './write-lock.js';

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

import { APPLY_CACHE_KIB } from './cache.js';

export { APPLY_CACHE_KIB };

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
  collectIfGrown(): void {
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
