import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import type { ConversationStat } from '../../picoclaw/seahorse.js';
import { cronJobId, groupCronJob } from './cron.js';
import type { PlanGroup, PlanHold, PlanPin, Reason } from './types.js';
import { smallest, type GroupMembers } from './groups.js';

/**
 * The planner's groups as the plan keeps them. A plan holds one group per session group for the
 * whole pass, and on a large home almost every group is one session with at most one
 * conversation of its own: as an object literal each carried two small arrays, a boxed last
 * activity and a copy of its cron job id, more than the session it stands for.
 * Here such a group keeps its one member as it is, and reads its key, last activity, cron job and
 * (when it owns it) its one conversation from the member, which does not change once inventoried.
 */

const NO_CONVERSATIONS: ConversationStat[] = [];
Object.freeze(NO_CONVERSATIONS);
/** `own` when the group owns its lone member's one conversation. */
const MEMBERS = Symbol('the member');

/** What a group keeps when its key and last activity cannot be read from one member: several, or one without a key. */
class MemberList {
  constructor(
    readonly members: SessionRecord[],
    readonly key: string,
    readonly lastActivityMs: number | null,
  ) {}
}

export class StoredGroup implements PlanGroup {
  /** The group's place in the plan's order: set once the groups are sorted. */
  id = -1;
  action: 'keep' | 'delete' = 'keep';
  reason: Reason = 'within_policy';
  sizeEligible = false;
  estimatedDbBytes = 0;
  // Declared, not defined: most groups have neither, and a group without them reads like the
  // object literal it replaces (no own property holding undefined).
  declare detail?: string;
  declare hold?: PlanHold;
  declare pin?: PlanPin;
  /** The one member whose key is the group's, or the several members with their key and last activity. */
  private readonly m: SessionRecord | MemberList;
  /** The conversations the group owns: none, its lone member's only one (read from it), one, or a list. */
  private own: ConversationStat | ConversationStat[] | typeof MEMBERS | null = null;

  constructor(set: GroupMembers) {
    const only = Array.isArray(set) ? (set.length === 1 ? set[0]! : null) : set;
    // A lone member's key is the group's, and its last activity the group's.
    if (only !== null && only.key !== null) {
      this.m = only;
      return;
    }
    const members = Array.isArray(set) ? set : [set];
    let last: number | null = null;
    for (const m of members)
      if (m.lastActivityMs !== null && (last === null || m.lastActivityMs > last)) last = m.lastActivityMs;
    // A member without a key sorts after every key, by its id.
    this.m = new MemberList(members, smallest(members.map((m) => m.key ?? `\uffff${m.id}`)), last);
  }

  /** A new list on each read for a lone member, which is kept without one. */
  get members(): SessionRecord[] {
    const m = this.m;
    return m instanceof MemberList ? m.members : [m];
  }

  /** The group's key for ordering and display: the smallest member key. */
  get key(): string {
    const m = this.m;
    return m instanceof MemberList ? m.key : m.key!;
  }

  get lastActivityMs(): number | null {
    return this.m.lastActivityMs;
  }

  /** Read from the keys on each use: a cron run's job id would otherwise be a string kept per group. */
  get cronJob(): string | null {
    const m = this.m;
    return m instanceof MemberList ? groupCronJob(m.members.map((x) => x.key)) : cronJobId(m.key);
  }

  /** A new list on each read for a single conversation; the same frozen empty list for none. */
  get ownConversations(): ConversationStat[] {
    const c = this.own;
    if (c === MEMBERS) return (this.m as SessionRecord).conversations;
    return c === null ? NO_CONVERSATIONS : Array.isArray(c) ? c : [c];
  }

  /** Adds a conversation the group owns, after those added before. */
  addOwnConversation(c: ConversationStat): void {
    const o = this.own;
    if (o === null) this.own = this.onlyConversation(c) ? MEMBERS : c;
    else if (o === MEMBERS) this.own = [...this.ownConversations, c];
    else if (Array.isArray(o)) o.push(c);
    else this.own = [o, c];
  }

  /**
   * Is c the lone member's one conversation? A session's conversations are made afresh on each read
   * (src/picoclaw/inventory/inventory.ts): a group that kept one would keep a copy of what its member holds.
   */
  private onlyConversation(c: ConversationStat): boolean {
    const m = this.m;
    if (m instanceof MemberList) return false;
    const cs = m.conversations;
    return cs.length === 1 && cs[0]!.conversationId === c.conversationId && cs[0]!.key === c.key;
  }
}

/**
 * The conversations claimed by sessions of more than one group, each with those groups' ids in
 * order. Every conversation's id goes into one sorted array first: the few named twice are found
 * there, and only theirs get a set. A map from every conversation to its first group held one
 * entry per session through the plan's busiest moment.
 */
export function sharedClaims(groups: PlanGroup[]): Map<number, number[]> {
  let ids = new Float64Array(Math.max(16, groups.length));
  let n = 0;
  for (const g of groups)
    for (const m of g.members)
      for (const c of m.conversations) {
        if (n === ids.length) {
          const grown = new Float64Array(ids.length * 2);
          grown.set(ids);
          ids = grown;
        }
        ids[n++] = c.conversationId;
      }
  const sorted = ids.subarray(0, n).sort();
  const twice = new Set<number>();
  for (let i = 1; i < n; i++) if (sorted[i] === sorted[i - 1]) twice.add(sorted[i]!);
  const by = new Map<number, Set<number>>();
  if (twice.size > 0)
    for (const g of groups)
      for (const m of g.members)
        for (const c of m.conversations)
          if (twice.has(c.conversationId)) {
            let set = by.get(c.conversationId);
            if (!set) by.set(c.conversationId, (set = new Set()));
            set.add(g.id);
          }
  const out = new Map<number, number[]>();
  for (const [id, set] of by)
    if (set.size > 1)
      out.set(
        id,
        [...set].sort((a, b) => a - b),
      );
  return out;
}
