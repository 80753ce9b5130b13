import { LazyList } from '../../io/lazy-list.js';
import { issueText, issueTodo } from '../../picoclaw/inventory/issues.js';
import { holdDetail } from '../../state/holds.js';
import { pinDetail } from '../../state/pins.js';
import type { ApplyResult, GroupOutcome } from '../apply/apply.js';
import { cronJobId } from '../plan/cron.js';

/** One session as the prune report lists it (text, --json, the daemon's /prune). */
export interface PruneSessionEntry {
  agent: string;
  key: string | null;
  file: string;
  /** The alias group's key when the session is one of several deleted or kept together. */
  group: string | null;
  last_activity: string | null;
  group_last_activity: string | null;
  action: 'keep' | 'delete';
  reason: string;
  detail: string | null;
  bytes: number;
  seahorse_messages: number;
  estimated_db_bytes: number | null;
  issues: string[];
  archive: string | null;
  /** Kept, but part of it was deleted before a change stopped the delete: what went. */
  partly_deleted: string | null;
  /** The cron job this session is a run of (`agent:cron-<job>-<uuid>`), or null. */
  cron_job: string | null;
}
import type { DbFacts, Plan, PlanGroup } from '../plan/plan.js';

/**
 * A prune report's session entries: one per session, made from the plan's group, the member and
 * what the pass did with the group.
 */

/** What readers of a report's sessions use: an array, or entries made as they are read. */
export interface SessionList extends Iterable<PruneSessionEntry> {
  readonly length: number;
}

/** What the pass did with a group: what apply found, or as planned (a dry-run). */
export function outcomeOf(g: PlanGroup, result: ApplyResult | null): GroupOutcome {
  return result?.groups.get(g.id) ?? { action: g.action, reason: g.reason };
}

/** What an entry reads besides its group, member and outcome. */
export interface EntryContext {
  nowMs: number;
  dbFacts: DbFacts | null;
  noArchivePaths: boolean;
}

/** The entry of g's i-th member m. */
export function sessionEntry(
  c: EntryContext,
  g: PlanGroup,
  m: PlanGroup['members'][number],
  i: number,
  outcome: GroupOutcome,
): PruneSessionEntry {
  return {
    agent: m.agent,
    key: m.key,
    file: m.base,
    group: g.members.length > 1 ? g.key : null,
    last_activity: iso(m.lastActivityMs),
    group_last_activity: g.members.length > 1 ? iso(g.lastActivityMs) : null,
    action: outcome.action,
    reason: outcome.reason,
    detail:
      'detail' in outcome && outcome.detail
        ? outcome.detail
        : outcome.reason === 'restored_hold' && g.hold
          ? holdDetail(g.hold)
          : outcome.reason === 'pinned' && g.pin
            ? m.key === g.pin.key && m.agent === g.pin.agent
              ? `kept ${pinDetail(g.pin)}`
              : `kept with its alias group: ${g.pin.key} is ${pinDetail(g.pin)}`
            : ((outcome.reason === g.reason ? g.detail : undefined) ??
              unsafeDetail(m, outcome.reason) ??
              (outcome.action === 'keep' ? groupDetail(g, m, c.nowMs) : null)),
    bytes: m.jsonlBytes + m.metaBytes,
    seahorse_messages: m.conversations.reduce((n, x) => n + x.messages, 0),
    estimated_db_bytes: c.dbFacts?.contentBytes ? Math.round(g.estimatedDbBytes / g.members.length) : null,
    issues: m.issues,
    // Its own archive: each member of a group has one (never the group's last for all of them).
    archive: c.noArchivePaths ? null : (outcome.archives?.[i] ?? null),
    partly_deleted: 'partial' in outcome && outcome.partial ? outcome.partial : null,
    cron_job: cronJobId(m.key),
  };
}

/**
 * The entries of a plan's sessions, made afresh each time the list is read, in the plan's order.
 * A report held as objects is an object of 17 fields per session, with its time and file name
 * strings, on top of the plan it is made from until the plan is let go: the
 * largest thing a pass holds. This list holds nothing per session: the plan and the apply's
 * outcomes it reads are the pass's own. JSON written as it goes (src/commands/json-stream.ts)
 * writes it entry by entry; JSON.stringify gets an array (toJSON).
 */
export class SessionEntries extends LazyList<PruneSessionEntry> implements SessionList {
  constructor(
    readonly length: number,
    private readonly make: () => Iterator<PruneSessionEntry>,
  ) {
    super({ [Symbol.iterator]: make });
  }

  static of(plan: Plan | null, result: ApplyResult | null, c: EntryContext): SessionEntries {
    const groups = plan?.groups ?? [];
    let n = 0;
    for (const g of groups) n += g.members.length;
    return new SessionEntries(n, function* () {
      for (const g of groups) {
        const outcome = outcomeOf(g, result);
        for (let i = 0; i < g.members.length; i++) yield sessionEntry(c, g, g.members[i]!, i, outcome);
      }
    });
  }

  [Symbol.iterator](): Iterator<PruneSessionEntry> {
    return this.make();
  }

  toJSON(): PruneSessionEntry[] {
    return [...this];
  }
}

/** The first `n` of a list, as an array. */
export function firstOf<T>(xs: Iterable<T>, n: number): T[] {
  const out: T[] = [];
  if (n <= 0) return out;
  for (const x of xs) if (out.push(x) >= n) break;
  return out;
}

/**
 * For sessions kept because a file is unreadable or unsafe: which file, what is wrong, what to do.
 * The file's path is made only then (a record makes its paths when asked, and most sessions are
 * neither).
 */
function unsafeDetail(m: PlanGroup['members'][number], reason: string): string | null {
  if (reason !== 'unreadable_meta' && reason !== 'not_regular_file') return null;
  const path = m.files.meta?.path ?? m.id;
  const bad = m.issues.filter(
    (i) => i.startsWith('meta_') || i === 'jsonl_not_regular_file' || i === 'jsonl_unreadable',
  );
  return `${path}: ${bad.map(issueText).join('; ')}; kept (${bad.map(issueTodo).filter(Boolean).join('; ')})`;
}

export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** How old, in words: "7 days", "5 hours". */
function ageWords(ms: number): string {
  const h = Math.max(0, Math.round(ms / 3_600_000));
  if (h < 48) return `${h} hour${h === 1 ? '' : 's'}`;
  const d = Math.round(h / 24);
  return `${d} days`;
}

/**
 * A kept member of an alias group that is older than the group: it stays because a newer
 * member does (the group is kept or deleted together), which its own date does not show.
 */
function groupDetail(g: PlanGroup, m: PlanGroup['members'][number], nowMs: number): string | null {
  if (g.members.length < 2 || g.lastActivityMs === null || m.lastActivityMs === g.lastActivityMs) return null;
  const newest = g.members.find((x) => x.lastActivityMs === g.lastActivityMs);
  if (!newest) return null;
  return `kept with its alias group: ${newest.key ?? newest.base} is ${ageWords(nowMs - g.lastActivityMs)} old`;
}

/**
 * What the cron report reads of each cron run, for every session of the plan whose key is a cron
 * run's: no entry is made for the others.
 */
export function* cronRuns(
  groups: readonly PlanGroup[],
  result: ApplyResult | null,
): Generator<{ cron_job: string; action: string; last_activity: string | null; bytes: number }> {
  for (const g of groups) {
    let outcome: GroupOutcome | null = null;
    for (const m of g.members) {
      const job = cronJobId(m.key);
      if (job === null) continue;
      outcome ??= outcomeOf(g, result);
      yield {
        cron_job: job,
        action: outcome.action,
        last_activity: iso(m.lastActivityMs),
        bytes: m.jsonlBytes + m.metaBytes,
      };
    }
  }
}
