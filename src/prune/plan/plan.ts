import { formatBytes } from '../../io/bytes.js';
import type { OrphanConversation, SessionRecord } from '../../picoclaw/inventory/inventory.js';
import { compareGroups, groupSessions, type GroupMembers } from './groups.js';
import type { ConversationStat } from '../../picoclaw/seahorse.js';
import type { Policy } from '../policy.js';
import { applyBootstrapCap, type BootstrapInput, type BootstrapPlan } from './bootstrap-cap.js';
import { applyCronAgeToOrphans, applyCronRules, countsTowardMaxSessions, type CronPlan } from './cron.js';
import { sharedClaims, StoredGroup } from './group.js';
import type {
  AgeCheck,
  DbFacts,
  KeepReason,
  PlanGroup,
  PlanHold,
  PlanOrphan,
  PlanPin,
  Reason,
  SizePlan,
} from './types.js';
// The plan's records live in ./types.ts; importers outside the planner read them from here.
export type * from './types.js';
import { applyAgeStep } from './clock.js';

/**
 * The planner: inventory + policy + clock → a verdict and a reason for every
 * session. Pure: it touches neither the disk nor the clock, so the dry-run prints
 * exactly what --apply executes, and its invariants are property-tested.
 */

export interface Plan {
  now: number;
  policy: Policy;
  ageCheck: AgeCheck;
  /** Why the clock is not believed (the age step refused: it deletes nothing by age); empty when it is. */
  clockDoubts: string[];
  /** The age check would delete every dated session but the newest: a clock far ahead looks exactly so. */
  everyDatedOld: boolean;
  newestMs: number | null;
  /** Oldest first by last activity, undated last; ties by key. */
  groups: PlanGroup[];
  orphans: PlanOrphan[];
  /** Conversations claimed by sessions of several groups: deleted only when every one of those groups is. */
  shared: { conversation: ConversationStat; groupIds: number[] }[];
  size: SizePlan;
  /** Undated groups (no usable timestamp: never deleted, yet counted) and the dated ones they push out. */
  undated: { groups: number; displaced: number };
  /** Pinned groups (never deleted, yet counted) and the unpinned ones they push out under max_sessions. */
  pinned: { groups: number; displaced: number };
  cron: CronPlan;
  /** The max_bootstrap_seconds step; null when the key is off. */
  bootstrap: BootstrapPlan | null;
}

export interface PlanInput {
  sessions: SessionRecord[];
  orphanConversations: OrphanConversation[];
  agentIds: string[];
  policy: Policy;
  now: number;
  db: DbFacts;
  /** The wall clock jumped since the last pass (the daemon measures it): no age deletions this pass. */
  skipAgeCheck?: boolean;
  /** The operator confirmed the clock (--trust-clock): the age step runs whatever the clock signals say. */
  trustClock?: boolean;
  /** Active restore holds of this home. */
  holds?: PlanHold[];
  /** The pins of this home. */
  pins?: PlanPin[];
  /** The startup-time model for max_bootstrap_seconds (src/prune/plan/bootstrap-cap.ts). */
  bootstrap?: BootstrapInput | null;
  /**
   * `groupSessions(sessions, agentIds)`, made beforehand by a caller that lets the aliases go before
   * the plan. The planner takes them over: it lets them go (sets this to undefined) once its own
   * groups are made.
   */
  aliasGroups?: GroupMembers[];
}

const DAY_MS = 86_400_000;
/** A last activity this far ahead of the clock is not trusted to stand for "newest" alone. */
const FUTURE_SLACK_MS = DAY_MS;

const UNSAFE_ISSUES: Record<string, KeepReason> = {
  meta_corrupt: 'unreadable_meta',
  meta_empty: 'unreadable_meta',
  meta_not_utf8: 'unreadable_meta',
  meta_no_key: 'unreadable_meta',
  meta_wrong_type: 'unreadable_meta',
  meta_unreadable: 'unreadable_meta',
  jsonl_not_regular_file: 'not_regular_file',
  jsonl_unreadable: 'not_regular_file',
};

const UNSAFE_REASONS = new Set<Reason>(Object.values(UNSAFE_ISSUES));

function unsafeReason(s: SessionRecord): KeepReason | null {
  for (const i of s.issues) if (UNSAFE_ISSUES[i]) return UNSAFE_ISSUES[i];
  return s.key === null ? 'unreadable_meta' : null;
}

/** Which kept sessions hold most of seahorse.db (their estimated share), largest first: why a limit cannot be met. */
export function sizeHolders(
  plan: Pick<Plan, 'groups'>,
  outcome: { groups: Map<number, { action: string; reason: Reason }> } | null,
): string {
  const kept = plan.groups
    .filter((g) => (outcome?.groups.get(g.id)?.action ?? g.action) === 'keep' && g.estimatedDbBytes > 0)
    .sort((a, b) => b.estimatedDbBytes - a.estimatedDbBytes);
  if (kept.length === 0) return 'no session holds a measurable share';
  const top = kept
    .slice(0, 3)
    .map(
      (g) =>
        `${g.key} (${outcome?.groups.get(g.id)?.reason ?? g.reason}) holds about ${formatBytes(g.estimatedDbBytes)}`,
    );
  return top.join(', ') + (kept.length > 3 ? `, and ${kept.length - 3} more` : '');
}

/** How many of xs pass: a count, without the list a filter makes (a slot per group each time). */
function count<T>(xs: readonly T[], pass: (x: T) => boolean): number {
  let n = 0;
  for (const x of xs) if (pass(x)) n++;
  return n;
}

/**
 * The plan's groups, in order (each group's id its index). Alias groups come from the caller, or are
 * made here, and are let go when this returns: the plan holds its groups and nothing per group besides.
 */
function makeGroups(input: PlanInput): StoredGroup[] {
  const sets = input.aliasGroups ?? groupSessions(input.sessions, input.agentIds);
  input.aliasGroups = undefined;
  const groups = sets.map((set) => new StoredGroup(set));
  groups.sort(compareGroups);
  for (let i = 0; i < groups.length; i++) groups[i]!.id = i;
  return groups;
}

export function planPrune(input: PlanInput): Plan {
  const { policy, now } = input;
  const groups = makeGroups(input);

  // Newest: every group sharing the newest time; if that is in the future, also the newest plausible one.
  let newestMs: number | null = null;
  let plausibleMs: number | null = null;
  for (const g of groups) {
    const t = g.lastActivityMs;
    if (t === null) continue;
    // A meta PicoClaw does not list (unreadable, or rejected by Go's decoder) is no session: it cannot be
    // "the newest" and take that protection from the real newest (its .jsonl may carry a time).
    if (g.members.some((m) => unsafeReason(m) === 'unreadable_meta')) continue;
    if (newestMs === null || t > newestMs) newestMs = t;
    if (t <= now + FUTURE_SLACK_MS && (plausibleMs === null || t > plausibleMs)) plausibleMs = t;
  }
  const protectedTimes = new Set<number>();
  if (newestMs !== null) {
    protectedTimes.add(newestMs);
    if (newestMs > now + FUTURE_SLACK_MS && plausibleMs !== null) protectedTimes.add(plausibleMs);
  }
  /** By group id: 1 when no rule protects the group (a typed array: one byte a group, not a pointer). */
  const deletable = new Uint8Array(groups.length);
  const holds = new Map((input.holds ?? []).map((h) => [`${h.agent}\0${h.key}`, h]));
  const pins = new Map((input.pins ?? []).map((p) => [`${p.agent}\0${p.key}`, p]));
  for (const g of groups) {
    let unsafe: KeepReason | null = null;
    for (const m of g.members) if ((unsafe = unsafeReason(m)) !== null) break;
    let hold: PlanHold | undefined;
    if (holds.size > 0) for (const m of g.members) if ((hold = holds.get(`${m.agent}\0${m.key}`)) !== undefined) break;
    let pin: PlanPin | undefined;
    if (pins.size > 0) for (const m of g.members) if ((pin = pins.get(`${m.agent}\0${m.key}`)) !== undefined) break;
    if (unsafe) g.reason = unsafe;
    else if (pin) {
      // Kept as the newest and undated are: not deletable by any rule below, yet counted.
      g.reason = 'pinned';
      g.pin = pin;
    } else if (hold) {
      g.reason = 'restored_hold';
      g.hold = hold;
    } else if (g.lastActivityMs === null) g.reason = 'undated';
    else if (protectedTimes.has(g.lastActivityMs)) g.reason = 'newest';
    deletable[g.id] = g.reason === 'within_policy' ? 1 : 0;
  }

  // 1. Age, unless the clock cannot be trusted (./plan-clock.ts).
  const { ageCheck, cutoff, clockDoubts, ageRefused } = applyAgeStep(groups, deletable, input, newestMs, holds);

  // A wall clock far ahead cannot be told from a long silence in general, but a clock that makes
  // every dated session but the newest old enough to go is worth a word before it acts.
  const datedDeletable = count(groups, (g) => g.lastActivityMs !== null && deletable[g.id] === 1);
  const ageVictims = count(groups, (g) => g.reason === 'max_age_days');
  const everyDatedOld = ageCheck === 'applied' && ageVictims > 0 && ageVictims === datedDeletable;

  const cron = applyCronRules(groups, deletable, policy, now, ageRefused || !!input.skipAgeCheck);

  // 2. Count: all agents together, undated and protected groups included (cron runs unless
  // max_sessions_counts_cron is false). Groups kept only because the guard refuses to touch
  // them (an unreadable meta, a .jsonl that is not a regular file) do not count: PicoClaw's
  // ListSessions skips an unreadable meta, and a refusal must never make room by deleting
  // another session.
  // max_sessions is a count of sessions (meta files, as PicoClaw's pruner counts them), not of alias
  // groups: whole groups go, oldest first, until the sessions left are within the cap; a group of
  // several sessions can take the count below it, and its verdict says so.
  const counts = (g: PlanGroup) => countsTowardMaxSessions(policy, g.cronJob);
  const sessionsOf = (g: PlanGroup) => g.members.length;
  const sum = (pass: (g: PlanGroup) => boolean): number => {
    let n = 0;
    for (const g of groups) if (pass(g)) n += sessionsOf(g);
    return n;
  };
  const undatedGroups = count(groups, (g) => g.reason === 'undated');
  const pinnedGroups = count(groups, (g) => g.reason === 'pinned');
  let displacedByUndated = 0;
  let displacedByPinned = 0;
  if (policy.max_sessions > 0) {
    const counted = (g: PlanGroup) => g.action === 'keep' && !UNSAFE_REASONS.has(g.reason) && counts(g);
    let remaining = sum(counted);
    const candidates = sum((g) => g.action === 'keep' && deletable[g.id] === 1 && counts(g));
    const over = (n: number) => Math.min(candidates, Math.max(0, n - policy.max_sessions));
    // Undated sessions count and are never deleted (PicoClaw's rule): how many dated ones they push out.
    displacedByUndated = over(remaining) - over(remaining - sum((g) => g.reason === 'undated' && counted(g)));
    // Pinned ones too: the operator chose them, and the report says what that choice costs.
    displacedByPinned = over(remaining) - over(remaining - sum((g) => g.reason === 'pinned' && counted(g)));
    for (const g of groups) {
      if (remaining <= policy.max_sessions) break;
      if (g.action === 'keep' && deletable[g.id] && counts(g)) {
        g.action = 'delete';
        g.reason = 'max_sessions';
        const before = remaining;
        remaining -= sessionsOf(g);
        if (remaining < policy.max_sessions)
          g.detail =
            `a group of ${sessionsOf(g)} sessions (aliases go together): deleting it takes the count from ` +
            `${before} to ${remaining}, below max_sessions=${policy.max_sessions}`;
      }
    }
  }

  const bootstrap = applyBootstrapCap(groups, deletable, input.bootstrap ?? null);

  // Conversations go with a group only if no kept session elsewhere also claims them.
  const claimants = sharedClaims(groups);
  const shared = new Map<number, { conversation: ConversationStat; groupIds: number[] }>();
  for (const g of groups) {
    const one = g.members.length === 1 && g.members[0]!.conversations.length <= 1;
    const seen = one ? null : new Set<number>();
    for (const m of g.members)
      for (const c of m.conversations) {
        if (seen) {
          if (seen.has(c.conversationId)) continue;
          seen.add(c.conversationId);
        }
        const who = claimants.get(c.conversationId);
        if (!who) g.addOwnConversation(c);
        else if (!shared.has(c.conversationId)) shared.set(c.conversationId, { conversation: c, groupIds: who });
      }
  }

  // Orphan conversations: the age check alone.
  const orphans: PlanOrphan[] = input.orphanConversations.map((c) => {
    if (c.lastActivityMs === null) return { conversation: c, action: 'keep', reason: 'undated', estimatedDbBytes: 0 };
    if (ageCheck === 'applied' && c.lastActivityMs < cutoff)
      return { conversation: c, action: 'delete', reason: 'max_age_days', estimatedDbBytes: 0 };
    return { conversation: c, action: 'keep', reason: 'within_policy', estimatedDbBytes: 0 };
  });

  applyCronAgeToOrphans(orphans, policy, now);

  // 3. Size: estimate each group's share of the used bytes from its share of the content.
  const limit = policy.max_db_size_mb * 1024 * 1024;
  const size: SizePlan = {
    checked: false,
    limitBytes: limit,
    fileBytes: input.db.fileBytes,
    projectedBytesBeforeSize: input.db.usedBytes,
    projectedBytesAfter: input.db.usedBytes,
    method: '',
    shortfall: null,
  };
  const content = input.db.contentBytes;
  if (input.db.present && content) {
    let totalContent = 0;
    for (const b of content.values()) totalContent += b;
    const basis = input.db.owedEstimateBytes ?? input.db.usedBytes;
    const share = (convs: { conversationId: number }[]) =>
      totalContent === 0
        ? 0
        : Math.round((basis * convs.reduce((n, c) => n + (content.get(c.conversationId) ?? 0), 0)) / totalContent);
    for (const g of groups) g.estimatedDbBytes = share(g.ownConversations);
    for (const o of orphans) o.estimatedDbBytes = share([o.conversation]);
    let projected = basis;
    for (const g of groups) if (g.action === 'delete') projected -= g.estimatedDbBytes;
    for (const o of orphans) if (o.action === 'delete') projected -= o.estimatedDbBytes;
    size.projectedBytesBeforeSize = projected;
    size.method =
      "each session's share of seahorse.db's used pages ((page_count - freelist_count) " +
      'x page_size) in proportion to its share of the stored message, part and ' +
      'summary text; ' +
      'the FTS index is assumed to scale with the text. Actual sizes are measured after each VACUUM during --apply.' +
      (input.db.owedEstimateBytes != null
        ? ' A VACUUM is owed (deferred while the gateway runs): the size is counted ' +
          'from the estimate it was owed with, not from the unshrunk file.'
        : '');
    for (const g of groups)
      g.sizeEligible = g.action === 'keep' && deletable[g.id] === 1 && g.ownConversations.length > 0;
    if (policy.max_db_size_mb > 0 && input.db.fileBytes > limit) {
      size.checked = true;
      for (const g of groups) {
        if (projected <= limit) break;
        if (!g.sizeEligible) continue;
        g.action = 'delete';
        g.reason = 'max_db_size_mb';
        projected -= g.estimatedDbBytes;
      }
      if (projected > limit)
        size.shortfall =
          `the limit cannot be met: only protected sessions (newest, undated, pinned or unreadable) ` +
          `hold the remaining rows: ${sizeHolders({ groups }, null)}`;
    }
    size.projectedBytesAfter = projected;
  } else if (input.db.present && policy.max_db_size_mb > 0 && input.db.fileBytes > limit) {
    size.checked = true;
    size.shortfall = 'seahorse.db could not be measured';
  }

  return {
    now,
    policy,
    ageCheck,
    clockDoubts,
    everyDatedOld,
    newestMs,
    groups,
    orphans,
    shared: [...shared.values()],
    size,
    undated: { groups: undatedGroups, displaced: displacedByUndated },
    pinned: { groups: pinnedGroups, displaced: displacedByPinned },
    cron,
    bootstrap,
  };
}
