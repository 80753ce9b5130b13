import { describe, expect, it } from 'vitest';
import { releaseGarbage } from '../../src/io/heap.js';
import type { Database } from '../../src/io/sqlite.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import { applyPlan, ApplyRun, GroupOutcomes, type ApplyResult } from '../../src/prune/apply/apply.js';
import { planPrune, type Plan, type PlanGroup } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { dumpSeahorse, handHome, integrity, type HandSession } from '../support/home.js';
import { NO_DB, NOW, offlineApply, rec } from '../support/plan-input.js';
import { tempDir } from '../support/tmp.js';
import { settledHeapData } from '../support/heap.js';

function factsOf(res: ApplyResult, n: number): unknown[] {
  let deleted = 0;
  for (const o of res.groups.values()) if (o.action === 'delete' && o.reason === 'max_age_days') deleted++;
  return [res.deletedSessions, deleted, res.groups.size, res.groups.get(n - 1)!.reason];
}

/** What `prune --apply` holds per session once its deletions are done, beyond the plan itself. */
describe('the outcome of an apply pass', () => {
  function planOf(n: number, dir: string): Plan {
    // Sessions with no files (nothing to unlink) in a real writable folder: every old one is deleted by age.
    const sessions = Array.from({ length: n }, (_, i) => rec(`sk_v1_${i}`, i === 0 ? 0 : 40 + (i % 50), { dir }));
    return planPrune({
      // Every session but the newest goes by age here: the clock is trusted (the age step would refuse otherwise).
      trustClock: true,
      sessions,
      orphanConversations: [],
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY, max_sessions: 0, max_db_size_mb: 0 },
      now: NOW,
      db: NO_DB,
    });
  }

  function apply(plan: Plan): ApplyResult {
    return applyPlan(offlineApply(plan, null, '/nonexistent/seahorse.db'));
  }

  it('holds under 50 bytes per session when every group goes as planned (about 100 with an object each)', () => {
    const n = 5_000;
    const dir = tempDir();
    const plan = planOf(n, dir);
    let res: ApplyResult | null = apply(plan);
    // Every group still reads as the plan decided, and iterates as a map of every group (checked
    // as plain values: an assertion may keep hold of the object it was given; and read in a
    // function of its own, whose frame is gone after: a loop variable left in this frame's
    // registers by an optimizing compiler would keep the whole result alive, at random).
    expect(factsOf(res, n)).toEqual([n - 1, n - 1, n, 'newest']);
    // What the result alone holds (the plan stays): the heap with it, then without it.
    const held = settledHeapData();
    res = null;
    const perSession = (held - settledHeapData()) / n;
    expect(perSession).toBeLessThan(50);
  });
});

describe('between two sessions', () => {
  it('the pass collects the garbage its sessions left once it passes 8 MiB over the last collection', () => {
    const plan = planPrune({
      // Every session but the newest goes by age here: the clock is trusted (the age step would refuse otherwise).
      trustClock: true,
      sessions: [],
      orphanConversations: [],
      agentIds: ['main'],
      policy: DEFAULT_POLICY,
      now: NOW,
      db: NO_DB,
    });
    const run = new ApplyRun(offlineApply(plan, null, '/nonexistent/seahorse.db'));
    releaseGarbage(0);
    const floor = process.memoryUsage().heapUsed;
    // What archiving thousands of sessions leaves behind: many small objects that outlived a scavenge.
    let rows: string[][] | null = Array.from({ length: 200_000 }, (_, i) => [`row ${i}`, `line ${i}`]);
    expect(process.memoryUsage().heapUsed - floor).toBeGreaterThan(12 << 20);
    rows = null;
    run.collectIfGrown();
    expect(rows).toBeNull();
    expect(process.memoryUsage().heapUsed - floor).toBeLessThan(4 << 20);
  });
});

describe('the deletions on seahorse.db', () => {
  it('prepare each statement once per pass (not about twenty per conversation) and run with a 2 MB page cache', () => {
    const home = tempDir();
    const old = (i: number): HandSession => ({
      key: `sk_v1_old${i}`,
      updated: '2026-08-01T10:00:00Z',
      seahorse: ['2026-08-01 09:00:00', '2026-08-01 09:30:00', '2026-08-01 10:00:00'],
    });
    const recent = { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] };
    const { dbPath } = handHome(home, [...Array.from({ length: 40 }, (_, i) => old(i)), recent]);
    const inv = buildInventory(
      discoverHome({ home, env: { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG } }),
    );
    const plan = planPrune({
      // Every session but the newest goes by age here: the clock is trusted (the age step would refuse otherwise).
      trustClock: true,
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY, max_db_size_mb: 0, vacuum: false },
      now: NOW,
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    const db: Database = openSeahorseWrite(dbPath);
    let prepared = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = (sql: string) => {
      prepared++;
      return prepare(sql);
    };
    try {
      const res = applyPlan(offlineApply(plan, db, dbPath));
      expect([res.deletedSessions, res.deletedConversations]).toEqual([40, 40]);
      expect(db.pragma('cache_size', { simple: true })).toBe(-1000);
    } finally {
      db.close();
    }
    // The statements of one conversation and of the pass around it: the same for 40 as for 4,000.
    expect(prepared).toBeLessThan(40);
    expect(dumpSeahorse(dbPath).conversations).toHaveLength(1);
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  });
});

describe('GroupOutcomes', () => {
  const group = (id: number, action: 'keep' | 'delete', reason: PlanGroup['reason']): PlanGroup => ({
    id,
    members: [],
    key: `k${id}`,
    lastActivityMs: null,
    action,
    reason,
    sizeEligible: false,
    ownConversations: [],
    estimatedDbBytes: 0,
    cronJob: null,
  });

  it('reads every plan group, stores only what differs, and goes back to the plan when set to it', () => {
    const groups = [group(0, 'delete', 'max_age_days'), group(1, 'keep', 'within_policy')];
    const m = new GroupOutcomes(groups);
    expect([...m.entries()]).toEqual([
      [0, { action: 'delete', reason: 'max_age_days' }],
      [1, { action: 'keep', reason: 'within_policy' }],
    ]);
    expect(m.has(1)).toBe(true);
    expect(m.has(2)).toBe(false);
    expect(m.get(2)).toBeUndefined();
    const kept = { action: 'keep', reason: 'changed_since_plan', detail: 'x changed' } as const;
    m.set(0, kept);
    expect(m.get(0)).toBe(kept);
    // An archive or a detail is an outcome of its own even with the planned action and reason.
    const archived = { action: 'delete', reason: 'max_age_days', archives: ['/a.tar.gz'] } as const;
    m.set(0, archived);
    expect(m.get(0)).toBe(archived);
    m.set(0, { action: 'delete', reason: 'max_age_days', archives: undefined });
    expect(m.get(0)).toEqual({ action: 'delete', reason: 'max_age_days' });
    const seen: [number, string][] = [];
    m.forEach((o, id) => seen.push([id, o.reason]));
    expect(seen).toEqual([
      [0, 'max_age_days'],
      [1, 'within_policy'],
    ]);
    expect([...m].map(([id]) => id)).toEqual([0, 1]);
    expect(m.size).toBe(2);
  });

  it('finds groups by id when ids are not their indexes', () => {
    const m = new GroupOutcomes([group(7, 'keep', 'newest'), group(3, 'delete', 'max_sessions')]);
    expect(m.get(3)).toEqual({ action: 'delete', reason: 'max_sessions' });
    expect(m.get(7)).toEqual({ action: 'keep', reason: 'newest' });
    expect([...m.keys()]).toEqual([7, 3]);
  });
});
