import type { ExitCodeValue } from '../../errors.js';
import type { FreeSpaceReader } from '../../io/freespace.js';
import type { Database } from '../../io/sqlite.js';
import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import type { OwedVacuum } from '../../state/vacuum-owed.js';
import type { SizeEstimate } from '../../state/size-estimate.js';
import type { Plan, PlanGroup } from '../plan/plan.js';
import type { GroupOutcomes, Outcome } from './group-outcomes.js';
import type { DeleteStats } from './seahorse-delete.js';
import type { ShrinkReport } from './shrink.js';
import type { VacuumReport } from './vacuum.js';

/** What an apply is given and what it gives back (./apply.ts runs it; ./run.ts holds one run's state). */

export interface SizeLoopReport {
  ran: boolean;
  steps: { deleted: number; bytesAfter: number; vacuumed: boolean }[];
  stoppedBecause: string | null;
  /** Set when the limit cannot be met by deleting (protected sessions hold the rows): why, and who. */
  unmet: string | null;
}

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
  /** Test hook: the same for a conversation deleted on its own (an orphan, or shared): before its rows, once gone. */
  onConversationStep?: (step: 'seahorse' | 'done', key: string) => void;
}
