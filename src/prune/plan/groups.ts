import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import { groupKeys } from '../../picoclaw/inventory/key-claims.js';

/**
 * The planner's alias groups (a session and the sessions whose keys it lists as aliases go
 * together, docs/picoclaw.md#listing-orphans-and-aliases) and their order: oldest last activity
 * first, then key, then the smallest member id.
 */

/**
 * A group's members: a lone session as itself, several as a list. Most groups of a large home are
 * one session, and a list per group was held until the plan's groups were made.
 */
export type GroupMembers = SessionRecord | SessionRecord[];

/** The members of a group as a list (a new one for a lone session). */
export const memberList = (g: GroupMembers): SessionRecord[] => (Array.isArray(g) ? g : [g]);

/** Alias groups: a session plus the sessions (same folder) whose keys it lists in its aliases (not the main alias). */
export function groupSessions(sessions: SessionRecord[], agentIds: string[]): GroupMembers[] {
  // Index arrays and one map per folder, not a string or an array per session: on a 20,000-session
  // home these indexes live through the whole grouping and would otherwise be the plan's garbage.
  const parent = new Int32Array(sessions.length);
  for (let i = 0; i < parent.length; i++) parent[i] = i;
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
  };
  /** folder -> key -> the sessions' indexes (one number while the key is unique). */
  const byDirKey = new Map<string, Map<string, number | number[]>>();
  sessions.forEach((s, i) => {
    if (s.key === null) return;
    let keys = byDirKey.get(s.dir);
    if (!keys) byDirKey.set(s.dir, (keys = new Map<string, number | number[]>()));
    const had = keys.get(s.key);
    if (had === undefined) keys.set(s.key, i);
    else if (typeof had === 'number') keys.set(s.key, [had, i]);
    else had.push(i);
  });
  sessions.forEach((s, i) => {
    // A record's aliases are parsed on each read: once here.
    const aliases = s.key === null ? [] : s.aliases;
    if (aliases.length === 0) return;
    const keys = byDirKey.get(s.dir)!;
    for (const a of groupKeys(null, aliases, agentIds)) {
      const js = keys.get(a);
      if (js === undefined) continue;
      if (typeof js === 'number') union(i, js);
      else for (const j of js) union(i, j);
    }
  });
  // A root is its group's smallest index, so groups come out in the order of their first member.
  const slot = new Int32Array(sessions.length);
  const groups: GroupMembers[] = [];
  sessions.forEach((s, i) => {
    const r = find(i);
    if (r === i) {
      slot[i] = groups.length;
      groups.push(s);
    } else {
      const g = groups[slot[r]!]!;
      if (Array.isArray(g)) g.push(s);
      else groups[slot[r]!] = [g, s];
    }
  });
  return groups;
}

/** The smallest of some strings (what `sort()[0]` gives, without the sorted copy). */
export function smallest(xs: Iterable<string>): string {
  let best: string | undefined;
  for (const x of xs) if (best === undefined || x < best) best = x;
  return best!;
}

/** What the group order reads: a group's last activity, key and members. */
export interface Ordered {
  readonly lastActivityMs: number | null;
  readonly key: string;
  readonly members: SessionRecord[];
}

/**
 * Oldest last activity first (undated last), then key, then the smallest member id. The id is
 * made only when two groups tie on time and key (ids are built strings), and not kept.
 */
export function compareGroups(a: Ordered, b: Ordered): number {
  const x = a.lastActivityMs;
  const y = b.lastActivityMs;
  if (x !== y) {
    if (x === null) return 1;
    if (y === null) return -1;
    return x - y;
  }
  const ka = a.key;
  const kb = b.key;
  if (ka !== kb) return ka < kb ? -1 : 1;
  const ta = smallest(a.members.map((m) => m.id));
  const tb = smallest(b.members.map((m) => m.id));
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}
