import { releaseGarbage } from '../../io/heap.js';
import { dbFileBytes } from '../../picoclaw/seahorse.js';
import type { ExitCodeValue } from '../../errors.js';
import type { GatewayState } from '../../picoclaw/gateway.js';
import type { PicoClawHome, Whereabouts } from '../../picoclaw/home.js';
import type { Inventory } from '../../picoclaw/inventory/inventory.js';
import type { ApplyResult } from '../apply/apply.js';
import type { DbFacts, Plan, PlanGroup, Reason } from '../plan/plan.js';
import { POLICY_KEYS, type ResolvedPolicy } from '../policy.js';
import {
  cronRuns,
  iso,
  outcomeOf,
  SessionEntries,
  sessionEntry,
  type PruneSessionEntry,
  type SessionList,
} from './sessions.js';

export type { PruneSessionEntry } from './sessions.js';
import { bootstrapReport, cronReport, type BootstrapReport, type CronReport } from './guard-keys.js';
import { VerdictTally, type VerdictCount } from './summary.js';

/**
 * The reasons an apply keeps a session the plan deleted, for what it found at the time (changed since the
 * plan, an archive or a delete that failed, the size limit reached sooner, the pass interrupted): with the
 * deleted ones, what a pass tried to do, and what the pre-start pass's journal lists.
 */
export const KEPT_AT_APPLY: ReadonlySet<string> = new Set<Reason>([
  'changed_since_plan',
  'archive_failed',
  'not_writable',
  'delete_failed',
  'size_limit_reached',
  'interrupted',
]);

/** The prune report: one shape for the dry-run and for apply (the `--json` output, the daemon's /prune). */

export interface PruneReport<S extends SessionList = PruneSessionEntry[]> {
  /**
   * First, where the pass works: every sessions folder and seahorse.db by real path, each marked
   * inside or outside the home (a config.json that names its workspace by an absolute path). Null
   * when the pass stopped before it found the home.
   */
  where: Whereabouts | null;
  mode: 'dry-run' | 'apply';
  skipped: string | null;
  exit_code: ExitCodeValue;
  now: string;
  home: string;
  gateway: { state: string; reason: string } | null;
  policy: Record<string, { value: unknown; source: string; from: string | null }>;
  age_check: 'applied' | 'disabled' | 'skipped_clock' | 'skipped_clock_jump' | 'refused_clock' | null;
  /** Why the clock is not believed (age_check refused_clock: nothing was deleted by age); [] when it is. */
  clock_doubts: string[];
  /**
   * Sessions with no usable timestamp: never deleted, yet counted toward max_sessions; `displaced`: dated sessions they
   * push out.
   */
  undated: { sessions: number; displaced: number } | null;
  /** Pinned sessions' groups: never deleted, yet counted toward max_sessions; `displaced`: others they push out. */
  pinned: { groups: number; displaced: number } | null;
  sessions: S;
  orphans: {
    key: string;
    conversation_id: number;
    messages: number;
    last_activity: string | null;
    action: 'keep' | 'delete';
    reason: string;
    detail: string | null;
    partly_deleted: string | null;
  }[];
  /** Conversations claimed by sessions of several groups, once every claimant was deleted (apply only). */
  shared_conversations: {
    key: string;
    conversation_id: number;
    messages: number;
    action: 'keep' | 'delete';
    reason: string;
    detail: string | null;
    partly_deleted: string | null;
  }[];
  orphan_jsonl: { path: string; bytes: number; action: 'keep'; reason: string }[];
  database: {
    path: string;
    present: boolean;
    bytes_before: number;
    bytes_after: number | null;
    /** Of bytes_before and bytes_after, the -wal file's (an apply's deletions sit there until SQLite checkpoints). */
    wal_bytes_before: number;
    wal_bytes_after: number | null;
    used_bytes: number | null;
    size_check: {
      checked: boolean;
      limit_bytes: number;
      estimated: boolean;
      projected_bytes_after: number | null;
      method: string | null;
      shortfall: string | null;
      /** Set when no deletion can bring the database under the limit: why, and which sessions hold the rows. */
      limit_unmet: string | null;
      steps: { deleted: number; bytes_after: number; vacuumed: boolean }[];
    };
    /** A VACUUM deferred while the gateway ran, owed to the next offline pass (after this pass). */
    vacuum_owed: { since: string; estimated_bytes_after: number | null; reason: string } | null;
    /** What the size guard counts the database as while the file cannot show it (src/state/size-estimate.ts). */
    size_estimate: { since: string; estimated_bytes_after: number; reason: string } | null;
    /** Online shrink (incremental_vacuum in short steps under the write lock), when this pass tried it. */
    shrink: {
      ran: boolean;
      reason: string;
      steps: number;
      returned_bytes: number;
      longest_step_ms: number;
      duration_ms: number;
      free_pages_left: number;
      /** FTS merge steps first (their tombstones turned into free pages), included in steps. */
      fts_merge_steps: number;
    } | null;
    vacuum: {
      ran: boolean;
      reason: string;
      estimated_reclaim_bytes: number | null;
      reclaimed_bytes: number | null;
      duration_ms: number;
      wal_checkpoint: string;
      /** This VACUUM switched seahorse.db to auto_vacuum INCREMENTAL (shrink_online). */
      converted: boolean;
    } | null;
    longest_write_ms: number | null;
    transactions: number | null;
  };
  totals: {
    sessions: number;
    groups: number;
    delete: number;
    keep: number;
    /** Apply: sessions deleted. In a dry-run, kept for compatibility: those that would be (`would_delete_sessions`). */
    deleted_sessions: number;
    /** Dry-run: the sessions an apply would delete; null in an apply (read `deleted_sessions`). */
    would_delete_sessions: number | null;
    freed_bytes: number;
    deleted_seahorse_messages: number | null;
    deleted_orphan_conversations: number;
    by_reason: Record<string, number>;
    /** Sessions and their bytes by verdict (action and reason), deletions first: the summary's table. */
    by_verdict: VerdictCount[];
  };
  warnings: string[];
  duration_ms: number;
  /** Cron runs by job, and the cron rules' state. */
  cron: CronReport | null;
  /** The max_bootstrap_seconds step: the prediction, the cap, or why nothing was deleted for it. */
  bootstrap: BootstrapReport | null;
}

export interface ReportInput {
  mode: 'dry-run' | 'apply';
  now: Date;
  home: PicoClawHome;
  policy: ResolvedPolicy;
  t0: number;
  gateway: GatewayState | null;
  inventory: Inventory | null;
  plan: Plan | null;
  result: ApplyResult | null;
  skipped: string | null;
  exitCode: ExitCodeValue;
  warnings: string[];
  dbFacts: DbFacts | null;
  /** Where the pass works (the report's first field). */
  where?: Whereabouts | null;
  /**
   * The caller is done with the inventory's sessions and the plan's groups: each group is let go
   * as its entries are made, so that the report, as large as the inventory on a big home, never
   * sits on top of both. Afterwards `inventory.sessions` and `plan.groups` are empty.
   */
  consume?: boolean;
  /**
   * Nothing reads the sessions' archive paths (the text report shows the folder, not a path per
   * session): each entry's `archive` is null. An archiving pass over 20,000 sessions would
   * otherwise hold a path of a hundred-odd characters for each deletion, only to drop them
   * unprinted.
   */
  noArchivePaths?: boolean;
  /**
   * The sessions' entries are made each time they are read (SessionEntries), from the plan and the
   * apply's outcomes, which the report then keeps: for a caller that writes them as it reads them.
   * `consume` does not apply.
   */
  stream?: boolean;
}

/** The report, its sessions as an array of entries. */
export function buildReport(r: ReportInput): PruneReport {
  return buildReportOf({ ...r, stream: false }) as PruneReport;
}

/** The report, its sessions made as they are read (ReportInput.stream). */
export function buildStreamedReport(r: ReportInput): PruneReport<SessionEntries> {
  return buildReportOf({ ...r, stream: true }) as PruneReport<SessionEntries>;
}

/** The report, its sessions as `r.stream` asks. */
export function buildReportOf(r: ReportInput): PruneReport<SessionList> {
  const policy: PruneReport['policy'] = {};
  for (const k of POLICY_KEYS)
    policy[k] = { value: r.policy[k].value, source: r.policy[k].source, from: r.policy[k].from };
  const entryContext = { nowMs: r.now.getTime(), dbFacts: r.dbFacts, noArchivePaths: !!r.noArchivePaths };
  let sessions: PruneSessionEntry[] | SessionEntries = [];
  const orphans: PruneReport['orphans'] = [];
  const shared: PruneReport['shared_conversations'] = [];
  const byReason: Record<string, number> = {};
  const tally = new VerdictTally();
  let deletedSessions = 0;
  let keptSessions = 0;
  let freed = 0;
  let deleteGroups = 0;
  let keepGroups = 0;
  if (r.plan) {
    const groups = r.plan.groups;
    const consume = r.consume && !r.stream;
    const list: PruneSessionEntry[] = [];
    if (r.stream) sessions = SessionEntries.of(r.plan, r.result, entryContext);
    else sessions = list;
    if (consume && r.inventory) r.inventory.sessions = [];
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      const outcome = outcomeOf(g, r.result);
      if (consume) {
        (groups as (PlanGroup | undefined)[])[i] = undefined;
        // Halfway, the first half's groups are dead: collected, their room takes the second half's entries.
        if (i === groups.length >> 1) releaseGarbage();
      }
      if (outcome.action === 'delete') deleteGroups++;
      else keepGroups++;
      for (let j = 0; j < g.members.length; j++) {
        const m = g.members[j]!;
        byReason[outcome.reason] = (byReason[outcome.reason] ?? 0) + 1;
        tally.add(outcome.action, outcome.reason, m.jsonlBytes + m.metaBytes);
        if (outcome.action === 'delete') {
          deletedSessions++;
          freed += m.jsonlBytes + m.metaBytes;
        } else keptSessions++;
        if (!r.stream) list.push(sessionEntry(entryContext, g, m, j, outcome));
      }
    }
    if (consume) groups.length = 0;
    for (const o of r.plan.orphans) {
      const outcome = r.result?.orphans.get(o.conversation.conversationId) ?? { action: o.action, reason: o.reason };
      orphans.push({
        key: o.conversation.key,
        conversation_id: o.conversation.conversationId,
        messages: o.conversation.messages,
        last_activity: iso(o.conversation.lastActivityMs),
        action: outcome.action,
        reason: outcome.reason,
        detail: 'detail' in outcome && outcome.detail ? outcome.detail : null,
        partly_deleted: 'partial' in outcome && outcome.partial ? outcome.partial : null,
      });
    }
    for (const sh of r.plan.shared) {
      const outcome = r.result?.shared.get(sh.conversation.conversationId);
      if (!outcome) continue;
      shared.push({
        key: sh.conversation.key,
        conversation_id: sh.conversation.conversationId,
        messages: sh.conversation.messages,
        action: outcome.action,
        reason: outcome.reason,
        detail: outcome.detail ?? null,
        partly_deleted: outcome.partial ?? null,
      });
    }
  }
  const inv = r.inventory;
  const v = r.result?.vacuum ?? null;
  const deletedOrphans = orphans.filter((o) => o.action === 'delete').length;
  const sizePlan = r.plan?.size;
  return {
    where: r.where ?? null,
    mode: r.mode,
    skipped: r.skipped,
    exit_code: r.exitCode,
    now: r.now.toISOString(),
    home: r.home.home,
    gateway: r.gateway ? { state: r.gateway.state, reason: r.gateway.reason } : null,
    policy,
    age_check: r.plan?.ageCheck ?? null,
    clock_doubts: r.plan?.clockDoubts ?? [],
    undated: r.plan ? { sessions: r.plan.undated.groups, displaced: r.plan.undated.displaced } : null,
    pinned: r.plan ? { groups: r.plan.pinned.groups, displaced: r.plan.pinned.displaced } : null,
    sessions,
    orphans,
    shared_conversations: shared,
    orphan_jsonl: (inv?.orphanJsonl ?? []).map((o) => ({
      path: o.file.path,
      bytes: o.file.bytes,
      action: 'keep' as const,
      reason: 'no .meta.json: not a session PicoClaw lists; kept',
    })),
    database: {
      path: r.home.seahorsePath,
      present: inv?.seahorse.state === 'open',
      bytes_before: inv?.seahorse.bytes.total ?? 0,
      bytes_after: r.result ? (v?.bytesAfter ?? inv?.seahorse.bytes.total ?? 0) : null,
      wal_bytes_before: inv?.seahorse.bytes.wal ?? 0,
      wal_bytes_after: r.result && inv ? dbFileBytes(inv.seahorse.path).wal : null,
      used_bytes: r.dbFacts?.present ? r.dbFacts.usedBytes : null,
      size_check: {
        checked: sizePlan?.checked ?? false,
        limit_bytes: sizePlan?.limitBytes ?? 0,
        estimated: r.mode === 'dry-run',
        projected_bytes_after: sizePlan?.checked ? sizePlan.projectedBytesAfter : null,
        method: sizePlan?.checked
          ? r.mode === 'dry-run'
            ? `dry-run estimate: ${sizePlan.method}`
            : sizePlan.method
          : null,
        shortfall: r.result ? r.result.size.stoppedBecause : (sizePlan?.shortfall ?? null),
        limit_unmet: r.result
          ? r.result.size.unmet
          : sizePlan?.shortfall?.startsWith('the limit cannot be met')
            ? sizePlan.shortfall
            : null,
        steps: (r.result?.size.steps ?? []).map((s) => ({
          deleted: s.deleted,
          bytes_after: s.bytesAfter,
          vacuumed: s.vacuumed,
        })),
      },
      vacuum_owed: r.result?.owed
        ? {
            since: r.result.owed.since,
            estimated_bytes_after: r.result.owed.estimated_bytes_after,
            reason: r.result.owed.reason,
          }
        : null,
      size_estimate: r.result?.sizeEstimate
        ? {
            since: r.result.sizeEstimate.since,
            estimated_bytes_after: r.result.sizeEstimate.estimated_bytes_after,
            reason: r.result.sizeEstimate.reason,
          }
        : null,
      shrink: r.result?.shrink
        ? {
            ran: r.result.shrink.ran,
            reason: r.result.shrink.reason,
            steps: r.result.shrink.steps,
            returned_bytes: r.result.shrink.returnedBytes,
            longest_step_ms: Math.round(r.result.shrink.longestStepMs * 10) / 10,
            duration_ms: Math.round(r.result.shrink.durationMs),
            free_pages_left: r.result.shrink.freelistAfter,
            fts_merge_steps: r.result.shrink.mergeSteps,
          }
        : null,
      vacuum: v
        ? {
            ran: v.ran,
            reason: v.reason,
            estimated_reclaim_bytes: v.estimatedReclaimBytes,
            reclaimed_bytes: v.reclaimedBytes,
            duration_ms: Math.round(v.durationMs),
            wal_checkpoint: v.walCheckpoint,
            converted: v.converted === true,
          }
        : null,
      longest_write_ms: r.result?.seahorse ? Math.round(r.result.seahorse.longestTxnMs * 10) / 10 : null,
      transactions: r.result?.seahorse?.transactions ?? null,
    },
    totals: {
      sessions: sessions.length,
      groups: deleteGroups + keepGroups,
      delete: deletedSessions,
      keep: keptSessions,
      deleted_sessions: deletedSessions,
      would_delete_sessions: r.mode === 'dry-run' ? deletedSessions : null,
      freed_bytes: freed,
      deleted_seahorse_messages: r.result?.seahorse ? r.result.seahorse.messages : null,
      deleted_orphan_conversations: deletedOrphans,
      by_reason: byReason,
      by_verdict: tally.list(),
    },
    warnings: r.warnings,
    duration_ms: Math.round(performance.now() - r.t0),
    // Streamed: read from the plan's cron runs alone, not from every session's entry.
    cron: r.plan ? cronReport(r.plan, r.stream ? cronRuns(r.plan.groups, r.result) : sessions) : null,
    bootstrap: r.plan?.bootstrap ? bootstrapReport(r.plan.bootstrap) : null,
  };
}
