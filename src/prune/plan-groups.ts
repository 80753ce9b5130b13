import type { SessionRecord } from '../picoclaw/inventory.js';
import { groupKeys } from '../picoclaw/inventory.js';

/**
 * The planner's alias groups (a session and the sessions whose keys it lists as aliases go
 * together, docs/picoclaw.md#listing-orphans-and-aliases) and their order: oldest last activity
 * first, then key, then the smallest member id.
 */

/** Alias groups: a session plus the sessions (same folder) whose keys it lists in its aliases (not the main alias). */
export function groupSessions(sessions: SessionRecord[], agentIds: string[]): SessionRecord[][] {
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
  const groups: SessionRecord[][] = [];
  sessions.forEach((s, i) => {
    const r = find(i);
    if (r === i) {
      slot[i] = groups.length;
      groups.push([s]);
    } else groups[slot[r]!]!.push(s);
  });
  return groups;
}

/** The smallest of some strings (what `sort()[0]` gives, without the sorted copy). */
export function smallest(xs: Iterable<string>): string {
  let best: string | undefined;
  for (const x of xs) if (best === undefined || x < best) best = x;
  return best!;
}

export interface RawGroup {
  members: SessionRecord[];
  lastActivityMs: number | null;
  key: string;
  /** The smallest member id, made only when two groups tie on time and key (ids are built strings). */
  tie: string | null;
}

const tieOf = (g: RawGroup): string => (g.tie ??= smallest(g.members.map((m) => m.id)));

export function compareGroups(a: RawGroup, b: RawGroup): number {
  const x = a.lastActivityMs;
  const y = b.lastActivityMs;
  if (x !== y) {
    if (x === null) return 1;
    if (y === null) return -1;
    return x - y;
  }
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  const ta = tieOf(a);
  const tb = tieOf(b);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}
