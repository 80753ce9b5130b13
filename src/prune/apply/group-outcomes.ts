import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import type { DeleteReason, PlanGroup, Reason } from '../plan/types.js';

/** What a pass did with a conversation deleted on its own (an orphan, or shared by deleted sessions). */
export interface Outcome {
  action: 'keep' | 'delete';
  reason: Reason;
  detail?: string;
  /** The conversation's archive: one, for one conversation. */
  archive?: string;
  /** Kept, but part of it was deleted before a change stopped it: what went. */
  partial?: string;
}

/**
 * What a pass did with a plan group. Each member of a group is archived on its own
 * (PassArchiver.group), so a group has no one archive: `archives[i]` is the archive that holds
 * member i (the group's member order), and only it may be named as that member's.
 */
export interface GroupOutcome extends Omit<Outcome, 'archive'> {
  archives?: readonly string[];
}

/** A pass's outcome of each plan group, held as little as it can be (moved out of ./apply.ts as it was). */

/** The reasons a group is deleted for, by code (see GroupOutcomes.archived); a reason not listed is stored whole. */
const DELETE_REASONS: readonly DeleteReason[] = [
  'max_age_days',
  'max_sessions',
  'max_db_size_mb',
  'cron_keep_runs',
  'cron_max_age_days',
  'max_bootstrap_seconds',
];

/**
 * Outcome per group id, read like a Map of every plan group. Only the outcomes that differ from
 * the plan's action and reason (kept after all, an archive, a detail) are stored: a pass that deletes
 * what it planned would otherwise hold one object per session, through the report, for nothing.
 *
 * A deletion whose every member was archived at its own default path is not stored either: one byte
 * for the group, and each member's path is made again when asked for. That is exact because an
 * archive's name is deterministic: the pass's folder, stamp and home tag, then the member's agent and
 * file name (src/archive/archive.ts archivePath, the one place a name is made), with a `-2`, `-3`...
 * only when that name was taken. Holding the paths instead would cost an array and a path of a
 * hundred-odd characters per deleted session;
 * only a group with a member whose default name was taken (two names that fileSafe spells alike,
 * an archive of an earlier pass in the same millisecond) keeps its paths, whole.
 */
export class GroupOutcomes extends Map<number, GroupOutcome> {
  private byId: Map<number, PlanGroup> | null = null;
  /** Where the pass archives a session unless another archive holds that name (PassArchiver.defaultPath). */
  private archivePath: ((s: SessionRecord) => string) | null = null;
  /**
   * Per group id that is its index in the plan: 0, or 1 + the DELETE_REASONS index of the reason it
   * was deleted for, each member archived at its own default path.
   */
  private archived: Uint8Array | null = null;

  constructor(private readonly planned: readonly PlanGroup[]) {
    super();
  }

  private group(id: number): PlanGroup | undefined {
    const g = this.planned[id];
    if (g?.id === id) return g;
    // Ids are indexes in a planner's plan; any other plan is looked up by id.
    if (!this.byId) {
      this.byId = new Map();
      for (const x of this.planned) if (x) this.byId.set(x.id, x);
    }
    return this.byId.get(id);
  }

  /** The pass archives each deletion: an archive at a session's default path is kept as one byte. */
  archivesAt(path: (s: SessionRecord) => string): void {
    this.archivePath = path;
  }

  override get(id: number): GroupOutcome | undefined {
    const stored = super.get(id);
    if (stored) return stored;
    const g = this.group(id);
    if (!g) return undefined;
    const code = this.archived?.[id] ?? 0;
    if (code > 0) {
      const path = this.archivePath!;
      return { action: 'delete', reason: DELETE_REASONS[code - 1]!, archives: g.members.map((m) => path(m)) };
    }
    return { action: g.action, reason: g.reason };
  }

  /** The code of o (see archived) when get(id) makes it again exactly from the group; otherwise 0. */
  private archiveCode(id: number, g: PlanGroup, o: GroupOutcome): number {
    const a = o.archives;
    if (!this.archivePath || this.planned[id] !== g || a === undefined || a.length !== g.members.length) return 0;
    if (a.length === 0 || o.action !== 'delete' || o.detail !== undefined || o.partial !== undefined) return 0;
    const r = DELETE_REASONS.indexOf(o.reason as DeleteReason);
    if (r < 0) return 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== this.archivePath(g.members[i]!)) return 0;
    return r + 1;
  }

  override set(id: number, o: GroupOutcome): this {
    const g = this.group(id);
    const code = g ? this.archiveCode(id, g, o) : 0;
    if (code > 0 || this.archived?.[id]) (this.archived ??= new Uint8Array(this.planned.length))[id] = code;
    if (code > 0) {
      super.delete(id);
      return this;
    }
    const asPlanned =
      g !== undefined &&
      o.action === g.action &&
      o.reason === g.reason &&
      o.detail === undefined &&
      o.archives === undefined &&
      o.partial === undefined;
    if (asPlanned) super.delete(id);
    else super.set(id, o);
    return this;
  }

  /** Back to the plan's outcome. */
  override delete(id: number): boolean {
    const flagged = !!this.archived?.[id];
    if (flagged) this.archived![id] = 0;
    return super.delete(id) || flagged;
  }

  override clear(): void {
    this.archived = null;
    super.clear();
  }

  override has(id: number): boolean {
    return this.group(id) !== undefined;
  }

  override get size(): number {
    return this.planned.length;
  }

  override *keys(): MapIterator<number> {
    for (const g of this.planned) yield g.id;
  }

  override *values(): MapIterator<GroupOutcome> {
    for (const g of this.planned) yield this.get(g.id)!;
  }

  override *entries(): MapIterator<[number, GroupOutcome]> {
    for (const g of this.planned) yield [g.id, this.get(g.id)!];
  }

  override [Symbol.iterator](): MapIterator<[number, GroupOutcome]> {
    return this.entries();
  }

  override forEach(fn: (o: GroupOutcome, id: number, map: Map<number, GroupOutcome>) => void, thisArg?: unknown): void {
    for (const [id, o] of this.entries()) fn.call(thisArg, o, id, this);
  }
}
