import type { OrphanConversation, SessionRecord } from '../../picoclaw/inventory/inventory.js';
import type { NumbersById } from '../../io/id-numbers.js';
import type { ConversationStat } from '../../picoclaw/seahorse.js';

/** The planner's verdicts and the records of a plan (./plan.ts makes them; the rest of prune/ reads them). */

export type DeleteReason =
  | 'max_age_days'
  | 'max_sessions'
  | 'max_db_size_mb'
  | 'cron_keep_runs'
  | 'cron_max_age_days'
  | 'max_bootstrap_seconds'
  /** `picoclaw-guard delete KEY` (src/prune/plan/select.ts). */
  | 'requested';
export type KeepReason =
  | 'newest'
  | 'undated'
  | 'within_policy'
  | 'unreadable_meta'
  | 'not_regular_file'
  /** Put back by `restore`: kept until its hold ends. */
  | 'restored_hold'
  /** Pinned by `picoclaw-guard pin`: kept by every rule until unpinned. */
  | 'pinned'
  /** `picoclaw-guard delete KEY`: not the group asked for. */
  | 'not_selected'
  /** Decided at apply time: */
  | 'changed_since_plan'
  | 'archive_failed'
  | 'not_writable'
  | 'delete_failed'
  | 'size_limit_reached'
  | 'interrupted';
export type Reason = DeleteReason | KeepReason;

/** How the age step went (Plan.ageCheck). */
export type AgeCheck = 'applied' | 'disabled' | 'skipped_clock' | 'skipped_clock_jump' | 'refused_clock';

export interface PlanGroup {
  /** Index in `groups` (oldest first). */
  id: number;
  members: SessionRecord[];
  /** The group's key for ordering and display: the smallest member key. */
  key: string;
  lastActivityMs: number | null;
  action: 'keep' | 'delete';
  reason: Reason;
  /** Eligible for the size guard (dated, unprotected, safe, has seahorse rows). */
  sizeEligible: boolean;
  /** Conversations whose every claimant is in this group: deleted with it. */
  ownConversations: ConversationStat[];
  /** Estimated bytes of seahorse.db this group accounts for (after VACUUM). */
  estimatedDbBytes: number;
  /** The cron job whose run this group is (src/prune/plan/cron.ts), or null. */
  cronJob: string | null;
  /** Why the planner decided so, when the reason alone does not say (the bootstrap prediction). */
  detail?: string;
  /** The restore hold that keeps it, if any. */
  hold?: PlanHold;
  /** The pin that keeps it (on one of its members), if any. */
  pin?: PlanPin;
}

/** A session the operator pinned (read from the guard's state by the caller): its whole group is kept. */
export interface PlanPin {
  agent: string;
  key: string;
  pinned_at: string;
  note: string | null;
}

/** A session `restore` put back, kept until `until` (read from the guard's state by the caller). */
export interface PlanHold {
  agent: string;
  key: string;
  restored_at: string;
  until: string;
}

export interface PlanOrphan {
  conversation: OrphanConversation;
  action: 'keep' | 'delete';
  reason: Reason;
  estimatedDbBytes: number;
}

export interface DbFacts {
  present: boolean;
  /** seahorse.db + -wal, as files on disk. */
  fileBytes: number;
  /** (page_count - freelist_count) × page_size: what VACUUM would leave, before deleting. */
  usedBytes: number;
  /** Content bytes per conversation id (messages, parts, summaries): the basis of each share. */
  contentBytes: NumbersById | null;
  /**
   * While the gateway runs and a VACUUM is owed (the guard's state): the estimated size after it.
   * The file has not shrunk yet, so this, not the used pages, is what the size check measures.
   */
  owedEstimateBytes?: number | null;
}

export interface SizePlan {
  checked: boolean;
  limitBytes: number;
  fileBytes: number;
  /** Estimated size after the age/count deletions and a VACUUM. */
  projectedBytesBeforeSize: number;
  /** Estimated size after everything the plan deletes and a VACUUM. */
  projectedBytesAfter: number;
  method: string;
  /** Why the size check could not get under the limit, if it cannot. */
  shortfall: string | null;
}
