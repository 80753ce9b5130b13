/**
 * An independent model of PicoClaw's retention policy (written from PicoClaw's pruning page,
 * "Semantics" and "Clock requirements", and the session store's facts in docs/picoclaw.md), applied to
 * what the scenario builder says it wrote. It never calls the guard's planner or parser: the
 * builder's labels (which meta is valid JSON of the right types, which transcript is a FIFO) are
 * its input.
 *
 * - A session is what PicoClaw lists: a `.meta.json` Go decodes, with a key. The guard deletes
 *   only regular transcripts (or none): a session whose `.jsonl` is a symlink, FIFO or device is
 *   kept, and so is every session of its alias group; such sessions do not count.
 * - Alias groups: a session and the sessions (same folder) whose keys it lists as aliases go
 *   together; a folder reached by two paths is one folder.
 * - Last activity: the newest of the meta's times, the last line's time and the seahorse messages'
 *   times (of every conversation whose key is the session's key or one of its aliases but the main
 *   one, a conversation other sessions claim too included: PicoClaw's pruning page and docs/prune.md);
 *   times before 2024 are no times (undated). The builder works them out (test/sim/home.ts).
 * - The newest group is never deleted (and, when the newest lies in the future, the newest that does
 *   not); undated groups are never deleted but count.
 * - Age: dated groups older than max_age_days go, unless the clock cannot be trusted (the scenario's
 *   clock fault): then nothing goes by age.
 * - Count: max_sessions counts sessions; whole groups go, oldest first, until the count is within it.
 */

export const DAY = 86_400_000;
export const USABLE_SINCE = Date.UTC(2024, 0, 1);

export interface ModelSession {
  /** The builder's id of the session (the file it lives in). */
  id: string;
  /** The folder's identity (one folder however it is reached). */
  folder: string;
  key: string;
  listed: boolean;
  /** The guard may delete it (its transcript is a regular file or absent). */
  deletable: boolean;
  /** Aliases written in its meta (listed sessions only). */
  aliases: string[];
  /** Newest usable time, or null. */
  timeMs: number | null;
}

export interface ModelVerdict {
  action: 'keep' | 'delete';
  why: string;
}

const isMain = (a: string) => /^agent:[^:]+:main$/.test(a);

export function modelVerdicts(
  sessions: ModelSession[],
  policy: { max_age_days: number; max_sessions: number },
  nowMs: number,
  clockTrusted: boolean,
): Map<string, ModelVerdict> {
  // Groups by union-find over listed sessions of one folder.
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    const p = parent.get(x)!;
    if (p === x) return x;
    const r = find(p);
    parent.set(x, r);
    return r;
  };
  for (const s of sessions) parent.set(s.id, s.id);
  const byKey = new Map<string, string[]>();
  for (const s of sessions) {
    if (!s.listed) continue;
    const k = `${s.folder}\0${s.key}`;
    byKey.set(k, [...(byKey.get(k) ?? []), s.id]);
  }
  for (const s of sessions) {
    if (!s.listed) continue;
    for (const a of s.aliases) {
      if (isMain(a) || a === s.key) continue;
      for (const other of byKey.get(`${s.folder}\0${a}`) ?? []) {
        const ra = find(s.id);
        const rb = find(other);
        if (ra !== rb) parent.set(ra, rb);
      }
    }
  }
  const groups = new Map<string, ModelSession[]>();
  for (const s of sessions) {
    const r = find(s.id);
    groups.set(r, [...(groups.get(r) ?? []), s]);
  }
  interface G {
    members: ModelSession[];
    time: number | null;
    key: string;
    verdict: ModelVerdict;
    safe: boolean;
  }
  const gs: G[] = [...groups.values()].map((members) => {
    let time: number | null = null;
    for (const m of members) if (m.listed && m.timeMs !== null && (time === null || m.timeMs > time)) time = m.timeMs;
    const safe = members.every((m) => m.listed && m.deletable);
    return {
      members,
      time,
      key: members.map((m) => m.key).sort()[0]!,
      verdict: { action: 'keep', why: safe ? 'within policy' : 'not listed or not deletable' },
      safe,
    };
  });
  let newest: number | null = null;
  let plausible: number | null = null;
  for (const g of gs) {
    // Every listed session is PicoClaw's to call newest, a refused one too; an unlisted one is no session.
    if (g.time === null) continue;
    if (newest === null || g.time > newest) newest = g.time;
    if (g.time <= nowMs + DAY && (plausible === null || g.time > plausible)) plausible = g.time;
  }
  const deletable = (g: G) =>
    g.safe &&
    g.time !== null &&
    g.time !== newest &&
    !(newest !== null && newest > nowMs + DAY && g.time === plausible);
  if (policy.max_age_days > 0 && clockTrusted && nowMs >= USABLE_SINCE) {
    const cutoff = nowMs - policy.max_age_days * DAY;
    for (const g of gs) if (deletable(g) && g.time! < cutoff) g.verdict = { action: 'delete', why: 'max_age_days' };
  }
  if (policy.max_sessions > 0) {
    let count = 0;
    for (const g of gs) if (g.safe && g.verdict.action === 'keep') count += g.members.length;
    const order = gs
      .filter((g) => deletable(g) && g.verdict.action === 'keep')
      .sort((a, b) => a.time! - b.time! || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const g of order) {
      if (count <= policy.max_sessions) break;
      g.verdict = { action: 'delete', why: 'max_sessions' };
      count -= g.members.length;
    }
  }
  const out = new Map<string, ModelVerdict>();
  for (const g of gs) for (const m of g.members) out.set(m.id, g.verdict);
  return out;
}

/** The ids of each session's model group (for events that must keep a whole group). */
export function modelGroups(sessions: ModelSession[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const parent = new Map<string, string>(sessions.map((s) => [s.id, s.id]));
  const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!));
  const byKey = new Map<string, string[]>();
  for (const s of sessions)
    if (s.listed) byKey.set(`${s.folder}\0${s.key}`, [...(byKey.get(`${s.folder}\0${s.key}`) ?? []), s.id]);
  for (const s of sessions)
    if (s.listed)
      for (const a of s.aliases)
        if (!isMain(a) && a !== s.key)
          for (const o of byKey.get(`${s.folder}\0${a}`) ?? []) {
            const ra = find(s.id);
            const rb = find(o);
            if (ra !== rb) parent.set(ra, rb);
          }
  const by = new Map<string, string[]>();
  for (const s of sessions) by.set(find(s.id), [...(by.get(find(s.id)) ?? []), s.id]);
  for (const ids of by.values()) for (const id of ids) out.set(id, ids);
  return out;
}
