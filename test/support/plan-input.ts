import fc from 'fast-check';
import type { SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import type { Database } from '../../src/io/sqlite.js';
import type { ApplyOptions } from '../../src/prune/apply/apply.js';
import type { DbFacts, Plan } from '../../src/prune/plan/plan.js';

/** Shared by the planner's tests: a fixed clock, no database, hand-made session records. */
export const DAY = 86_400_000;
export const NOW = Date.UTC(2026, 10, 30, 12);
export const NO_DB: DbFacts = { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null };

let seq = 0;

/** A session record as the inventory makes it: `key` null is an unreadable meta; `ageDays` null is undated. */
export function rec(key: string | null, ageDays: number | null, extra: Partial<SessionRecord> = {}): SessionRecord {
  seq++;
  const dir = extra.dir ?? '/s';
  return {
    id: `${dir}/${key ?? 'x' + seq}`,
    agent: 'main',
    dir,
    base: key ?? `broken${seq}`,
    key,
    aliases: [],
    jsonlBytes: 100,
    metaBytes: 10,
    messages: 2,
    times: { meta_updated_at: null, meta_created_at: null, jsonl_last_line: null, seahorse_last_message: null },
    lastActivityMs: ageDays === null ? null : NOW - ageDays * DAY,
    conversations: [],
    issues: [],
    files: { jsonl: null, meta: null },
    ...extra,
  };
}

/** Each session's verdict, `action:reason`, by key (or id for an unreadable meta). */
export function verdicts(p: Plan): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of p.groups) for (const m of g.members) out[m.key ?? m.id] = `${g.action}:${g.reason}`;
  return out;
}

/**
 * A generated array together with a uniformly random order of its indexes, for
 * "the plan does not depend on input order": a real permutation, not a reversal (which
 * keeps every pair of neighbours together and so misses many order dependencies).
 */
export function withPermutation<T>(items: fc.Arbitrary<T[]>): fc.Arbitrary<[T[], number[]]> {
  return items.chain((xs) =>
    fc.tuple(fc.constant(xs), fc.shuffledSubarray([...xs.keys()], { minLength: xs.length, maxLength: xs.length })),
  );
}

/** applyPlan's options for an offline pass with room to spare and no archive; `extra` overrides any. */
export function offlineApply(
  plan: Plan,
  db: Database | null,
  dbPath: string,
  extra: Partial<ApplyOptions> = {},
): ApplyOptions {
  return {
    plan,
    db,
    dbPath,
    online: false,
    forceVacuum: false,
    freeSpace: () => ({ availableBytes: 1 << 40, totalBytes: 1 << 40, availableInodes: null, totalInodes: null }),
    archiveDir: null,
    nowMs: NOW,
    ...extra,
  };
}
