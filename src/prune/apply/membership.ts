import { lstatSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { withSmallFile } from '../../io/smallfile.js';
import { groupKeys } from '../../picoclaw/inventory/key-claims.js';
import { classifyEntry, parseMeta } from '../../picoclaw/inventory/sessions.js';
import type { Plan, PlanGroup } from '../plan/plan.js';

/**
 * A group's membership, re-read before each irreversible step (docs/bad-input.md#sessions-that-change-during-a-pass):
 * the plan's alias groups were made from the metas as they were when the folder was read, and
 * PicoClaw rewrites a meta (temp file + rename) whenever a session gains an alias. A session the
 * plan keeps that now names a member of the group being deleted (its key, or one of its aliases)
 * joins that group: the group is kept whole, since deleting it would take a session that a kept
 * session now lists. A new session that names a member, or that a member names, does the same.
 *
 * Cost: one stat of each member's folder per check. A folder is listed again (one lstat per meta,
 * and a read of each meta that changed since planning) only when its modification time moved
 * since the last look and the move was not the pass's own unlink. The pass records its own
 * unlinks (`ours`): a rename by another process in the microseconds between an unlink and that
 * record is the one change this does not see.
 */

interface MetaSeen {
  ino: number;
  size: number;
  mtimeMs: number;
  /** The keys it names (its key and its non-main aliases); none when it cannot be read. */
  keys: string[];
}

interface FolderState {
  /** The folder's mtime (ns) at the last look; null: never looked. */
  mtimeNs: bigint | null;
  /** Metas that differ from the plan's facts (changed, or new), as last read. */
  changed: Map<string, MetaSeen>;
}

const mtimeNs = (dir: string): bigint | null => {
  try {
    return statSync(dir, { bigint: true }).mtimeNs;
  } catch {
    return null;
  }
};

export class MembershipWatch {
  private readonly folders = new Map<string, FolderState>();
  /** The plan's metas by path: what the alias groups were made from. */
  private planned: Map<string, { ino: number; size: number; mtimeMs: number }> | null = null;
  private readonly agentIds: string[];

  constructor(private readonly plan: Plan) {
    const ids = new Set<string>();
    for (const g of plan.groups) for (const m of g.members) ids.add(m.agent);
    this.agentIds = [...ids];
  }

  private plannedMetas(): Map<string, { ino: number; size: number; mtimeMs: number }> {
    if (this.planned) return this.planned;
    const out = new Map<string, { ino: number; size: number; mtimeMs: number }>();
    for (const g of this.plan.groups)
      for (const m of g.members) {
        const f = m.files.meta;
        if (f) out.set(f.path, { ino: f.ino, size: f.bytes, mtimeMs: f.mtimeMs });
      }
    return (this.planned = out);
  }

  private rescan(dir: string, st: FolderState, now: bigint | null): void {
    const planned = this.plannedMetas();
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    const seen = new Set<string>();
    for (const name of names) {
      if (classifyEntry(name) !== 'meta') continue;
      const path = join(dir, name);
      let l;
      try {
        l = lstatSync(path);
      } catch {
        continue;
      }
      const p = planned.get(path);
      if (p && p.ino === l.ino && p.size === l.size && p.mtimeMs === l.mtimeMs) continue;
      seen.add(path);
      const had = st.changed.get(path);
      if (had && had.ino === l.ino && had.size === l.size && had.mtimeMs === l.mtimeMs) continue;
      let keys: string[] = [];
      if (l.isFile()) {
        try {
          const { meta } = withSmallFile(path, 'meta', { noFollow: true }, parseMeta);
          if (meta) keys = groupKeys(meta.key, meta.aliases, this.agentIds);
        } catch {
          keys = [];
        }
      }
      st.changed.set(path, { ino: l.ino, size: l.size, mtimeMs: l.mtimeMs, keys });
    }
    for (const path of [...st.changed.keys()]) if (!seen.has(path)) st.changed.delete(path);
    st.mtimeNs = now;
  }

  /** Why `g` is no longer the group the plan made (a session outside it names one of its members), or null. */
  check(g: PlanGroup, removed: ReadonlySet<string>): string | null {
    const own = new Set<string>();
    const mine = new Set<string>();
    const dirs = new Set<string>();
    for (const m of g.members) {
      dirs.add(m.dir);
      if (m.files.meta) mine.add(m.files.meta.path);
      for (const k of groupKeys(m.key, m.aliases, this.agentIds)) own.add(k);
    }
    for (const dir of dirs) {
      let st = this.folders.get(dir);
      if (!st) this.folders.set(dir, (st = { mtimeNs: null, changed: new Map() }));
      const now = mtimeNs(dir);
      if (now === null || st.mtimeNs !== now) this.rescan(dir, st, now);
      for (const [path, seen] of st.changed) {
        if (mine.has(path) || removed.has(path)) continue;
        const hit = seen.keys.find((k) => own.has(k));
        if (hit !== undefined)
          return `${path} now names ${hit} (an alias or a session added since planning): the group it joined is kept`;
      }
    }
    return null;
  }

  /** After the pass's own unlink in `dir`: its new mtime is the pass's doing, not a change to look at. */
  ours(dir: string): void {
    const st = this.folders.get(dir);
    if (st) st.mtimeNs = mtimeNs(dir);
  }
}

const watches = new WeakMap<Plan, MembershipWatch>();

/** The pass's watch (one per plan). */
export function membershipOf(plan: Plan): MembershipWatch {
  let w = watches.get(plan);
  if (!w) watches.set(plan, (w = new MembershipWatch(plan)));
  return w;
}
