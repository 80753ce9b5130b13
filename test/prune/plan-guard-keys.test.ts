import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OrphanConversation, SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import type { BootstrapInput } from '../../src/prune/plan/bootstrap-cap.js';
import { cronJobId } from '../../src/prune/plan/cron.js';
import { planPrune, type Plan } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY, type Policy } from '../../src/prune/policy.js';
import { DAY, NO_DB, NOW, rec, verdicts, withPermutation } from '../support/plan-input.js';
import { MIB, predictGap, type BootstrapModel, type Trust } from '../../src/startup-model/fit.js';

/** The planner's rules for the guard's own keys: cron runs' budget and the startup-time budget. */

const uuid = (n: number) => `${n.toString(16).padStart(8, '0')}-1c2d-4e5f-8a9b-${n.toString(16).padStart(12, '0')}`;
const cronKey = (job: string, n: number) => `agent:cron-${job}-${uuid(n)}`;

function plan(
  sessions: SessionRecord[],
  policy: Partial<Policy> = {},
  o: { now?: number; orphans?: OrphanConversation[]; bootstrap?: BootstrapInput } = {},
): Plan {
  return planPrune({
    sessions,
    orphanConversations: o.orphans ?? [],
    agentIds: ['main'],
    policy: { ...DEFAULT_POLICY, max_age_days: 0, max_sessions: 0, ...policy },
    now: o.now ?? NOW,
    db: NO_DB,
    bootstrap: o.bootstrap ?? null,
  });
}

describe('cron job IDs', () => {
  it('reads the job from agent:cron-<job>-<uuid> (pkg/tools/cron.go), whatever the job ID looks like', () => {
    expect(cronJobId('agent:cron-3f9a1c2b7d4e5f60-0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b')).toBe('3f9a1c2b7d4e5f60');
    // generateID's fallback when crypto/rand fails: decimal UnixNano.
    expect(cronJobId('agent:cron-1781367575123456789-0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b')).toBe(
      '1781367575123456789',
    );
    // A hand-edited jobs.json may hold dashes: the UUID's fixed shape marks the end.
    expect(cronJobId('agent:cron-daily-backup-0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b')).toBe('daily-backup');
  });

  it('is null for anything else (treated as a chat: no cron rule touches it)', () => {
    for (const k of [
      null,
      'sk_v1_abc',
      'agent:main:main',
      'agent:cron-abc',
      'agent:cron--0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
      'agent:cron-abc-0B8E2F8A-1C2D-4E5F-8A9B-0C1D2E3F4A5B',
      'agent:cron-abc_0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
      'agent:main:cron-abc-0b8e2f8a-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
    ]) {
      expect(cronJobId(k), String(k)).toBeNull();
    }
  });
});

describe('cron rules', () => {
  const runs = (job: string, ages: number[]) => ages.map((a, i) => rec(cronKey(job, job.length * 100 + i), a));

  it('cron_keep_runs keeps the newest N runs of each job and leaves chats and other jobs alone', () => {
    const p = plan(
      [...runs('aaaa', [1, 2, 3, 4, 5]), ...runs('bb', [6, 7]), rec('chat-old', 300), rec('chat-new', 0)],
      { cron_keep_runs: 2 },
    );
    const v = verdicts(p);
    expect([1, 2, 3, 4, 5].map((_, i) => v[cronKey('aaaa', 400 + i)])).toEqual([
      'keep:within_policy',
      'keep:within_policy',
      'delete:cron_keep_runs',
      'delete:cron_keep_runs',
      'delete:cron_keep_runs',
    ]);
    expect(v[cronKey('bb', 200)]).toBe('keep:within_policy');
    expect(v[cronKey('bb', 201)]).toBe('keep:within_policy');
    expect(v['chat-old']).toBe('keep:within_policy');
  });

  it('cron_max_age_days works apart from max_age_days, and not while the clock reads before 2024', () => {
    const s = [...runs('aaaa', [1, 20]), rec('chat', 40), rec('new', 0)];
    expect(verdicts(plan(s, { cron_max_age_days: 10 }))).toMatchObject({
      [cronKey('aaaa', 400)]: 'keep:within_policy',
      [cronKey('aaaa', 401)]: 'delete:cron_max_age_days',
      chat: 'keep:within_policy',
    });
    const p1970 = plan(s, { cron_max_age_days: 10 }, { now: Date.UTC(1970, 0, 1, 0, 5) });
    expect(p1970.cron.ageCheck).toBe('skipped_clock');
    expect(p1970.groups.every((g) => g.action === 'keep')).toBe(true);
  });

  it('max_sessions_counts_cron false makes max_sessions a cap on chats: runs neither count nor go', () => {
    const s = [...runs('aaaa', [1, 2, 3, 4]), rec('chat1', 5), rec('chat2', 6), rec('chat3', 7), rec('new', 0)];
    // PicoClaw's rule: cron runs count, and being newer they push the chats out.
    const picoclaw = verdicts(plan(s, { max_sessions: 4 }));
    expect(['chat1', 'chat2', 'chat3'].map((k) => picoclaw[k])).toEqual([
      'delete:max_sessions',
      'delete:max_sessions',
      'delete:max_sessions',
    ]);
    const chatsOnly = verdicts(plan(s, { max_sessions: 3, max_sessions_counts_cron: false }));
    expect(['chat1', 'chat2', 'chat3'].map((k) => chatsOnly[k])).toEqual([
      'keep:within_policy',
      'keep:within_policy',
      'delete:max_sessions',
    ]);
    for (let i = 0; i < 4; i++) expect(chatsOnly[cronKey('aaaa', 400 + i)]).toBe('keep:within_policy');
  });

  it('the newest session is never deleted, even as a run beyond cron_keep_runs; undated runs count but stay', () => {
    const s = [
      rec(cronKey('aaaa', 1), 0),
      rec(cronKey('aaaa', 2), null),
      rec(cronKey('aaaa', 3), 5),
      rec(cronKey('aaaa', 4), 9),
    ];
    expect(verdicts(plan(s, { cron_keep_runs: 1 }))).toEqual({
      [cronKey('aaaa', 1)]: 'keep:newest',
      [cronKey('aaaa', 2)]: 'keep:undated',
      [cronKey('aaaa', 3)]: 'delete:cron_keep_runs',
      [cronKey('aaaa', 4)]: 'delete:cron_keep_runs',
    });
  });

  it('an orphan cron conversation goes by cron_max_age_days; other orphans do not', () => {
    const orphan = (key: string, age: number): OrphanConversation => ({
      conversationId: key.length,
      key,
      messages: 1,
      summaries: 0,
      lastMessageAt: null,
      createdAt: null,
      lastActivityMs: NOW - age * DAY,
    });
    const p = plan(
      [rec('new', 0)],
      { cron_max_age_days: 10 },
      { orphans: [orphan(cronKey('aaaa', 1), 20), orphan('sk_v1_x', 20), orphan(cronKey('bbbbb', 2), 3)] },
    );
    expect(p.orphans.map((o) => `${o.action}:${o.reason}`)).toEqual([
      'delete:cron_max_age_days',
      'keep:within_policy',
      'keep:within_policy',
    ]);
  });
});

describe('max_bootstrap_seconds', () => {
  const model = (a: number, b: number, c: number, rmse: number): BootstrapModel => ({
    kind: 'sessions+mib',
    a,
    b,
    c,
    se: { a: 0, b: 0, c: 0 },
    rmse_seconds: rmse,
    sigma_seconds: rmse,
    cov: [],
    samples: 8,
    distinct_volumes: 8,
    note: null,
  });
  const trusted: Trust = { trusted: true, why: null, more_restarts: null, rmse_bound_seconds: 6 };
  const input = (m: BootstrapModel, budget: number, t: Trust = trusted): BootstrapInput => ({
    budgetSeconds: budget,
    dir: '/s',
    model: m,
    trust: t,
  });
  const home = () => [
    ...Array.from({ length: 20 }, (_, i) => rec(`main-${String(i).padStart(2, '0')}`, 20 - i, { jsonlBytes: MIB })),
    ...Array.from({ length: 5 }, (_, i) => rec(`other-${i}`, 100 + i, { dir: '/o' })),
  ];

  it('deletes the oldest sessions of the default agent until the prediction plus twice its error fits', () => {
    // 2 + 1·n + 0.5·MiB (1 MiB each) + 2 × 1 s error ≤ 24  →  n ≤ 13.
    const p = plan(home(), {}, { bootstrap: input(model(2, 1, 0.5, 1), 24) });
    const deleted = p.groups.filter((g) => g.reason === 'max_bootstrap_seconds').map((g) => g.key);
    expect(deleted).toEqual(['main-00', 'main-01', 'main-02', 'main-03', 'main-04', 'main-05', 'main-06']);
    expect(p.groups.filter((g) => g.key.startsWith('other')).every((g) => g.action === 'keep')).toBe(true);
    expect(p.bootstrap).toMatchObject({
      state: 'applied',
      cap_sessions: 13,
      before: { sessions: 20, predicted_seconds: 32, error_seconds: 1 },
      after: { sessions: 13, predicted_seconds: 21.5 },
    });
    expect(p.groups.find((g) => g.key === 'main-00')!.detail).toMatch(
      /predicted 32 s ± 1 s for 20 sessions \/ 20 MiB; the 24 s budget \(with 2 × ± of room\) allows about 13 sessions/,
    );
  });

  it('deletes nothing for the key with an untrusted model, and says why and how many restarts it needs', () => {
    const t = {
      trusted: false,
      why: '3 restarts measured; deleting by the model needs at least 5',
      more_restarts: 2,
      rmse_bound_seconds: 6,
    };
    const p = plan(home(), {}, { bootstrap: input(model(2, 1, 0.5, 1), 24, t) });
    expect(p.groups.every((g) => g.action === 'keep')).toBe(true);
    expect(p.bootstrap!.state).toBe('untrusted');
    expect(p.bootstrap!.message).toMatch(/not trustworthy yet \(3 restarts measured.*\); it needs 2 more restart/);
  });

  it('deletes nothing when even an empty folder would miss the budget', () => {
    const p = plan(home(), {}, { bootstrap: input(model(30, 1, 0, 1), 24) });
    expect(p.groups.every((g) => g.action === 'keep')).toBe(true);
    expect(p.bootstrap).toMatchObject({ state: 'unreachable', cap_sessions: null });
  });
});

describe('planner invariants with the guard keys (property tests)', () => {
  const spec = fc.record({
    kind: fc.constantFrom('chat', 'cron', 'cron', 'alias'),
    job: fc.constantFrom('j1', 'j2', 'j3'),
    age: fc.option(fc.integer({ min: -3, max: 200 }), { nil: null, freq: 8 }),
    dir: fc.constantFrom('/s', '/s', '/o'),
    bytes: fc.integer({ min: 0, max: 4 * MIB }),
  });
  const policyArb = fc.record({
    max_age_days: fc.integer({ min: 0, max: 120 }),
    max_sessions: fc.integer({ min: 0, max: 30 }),
    cron_keep_runs: fc.integer({ min: 0, max: 6 }),
    cron_max_age_days: fc.integer({ min: 0, max: 60 }),
    max_sessions_counts_cron: fc.boolean(),
  });
  const modelArb = fc.option(
    fc.record({
      a: fc.double({ min: 0, max: 10, noNaN: true }),
      b: fc.double({ min: 0, max: 2, noNaN: true }),
      c: fc.double({ min: 0, max: 2, noNaN: true }),
      rmse: fc.double({ min: 0, max: 3, noNaN: true }),
      budget: fc.integer({ min: 1, max: 60 }),
      trusted: fc.boolean(),
    }),
    { nil: null },
  );
  const clockArb = fc.constantFrom(NOW, Date.UTC(1970, 0, 1, 0, 5));

  function build(
    specs: { kind: string; job: string; age: number | null; dir: string; bytes: number }[],
  ): SessionRecord[] {
    const out: SessionRecord[] = [];
    specs.forEach((s, i) => {
      const n = String(i).padStart(3, '0');
      if (s.kind === 'cron') out.push(rec(cronKey(s.job, i), s.age, { dir: s.dir, jsonlBytes: s.bytes }));
      else if (s.kind === 'alias' && out.length > 0) {
        // A legacy session listed in an earlier chat's aliases: one group with it.
        const owner = out[out.length - 1]!;
        const key = `agent:main:telegram:direct:${n}`;
        owner.aliases = [...owner.aliases, key];
        out.push(rec(key, s.age, { dir: owner.dir, jsonlBytes: s.bytes }));
      } else out.push(rec(`chat-${n}`, s.age, { dir: s.dir, jsonlBytes: s.bytes }));
    });
    return out;
  }

  it(
    'newest and undated never go, alias groups go whole, the clock gates the ' +
      'age rules, and the plan does not depend on input order',
    () => {
      fc.assert(
        fc.property(
          withPermutation(fc.array(spec, { minLength: 1, maxLength: 40 })),
          policyArb,
          modelArb,
          clockArb,
          ([specs, order], pol, mdl, now) => {
            const sessions = build(specs);
            const bootstrap: BootstrapInput | undefined = mdl
              ? {
                  budgetSeconds: mdl.budget,
                  dir: '/s',
                  model: {
                    kind: 'sessions+mib',
                    a: mdl.a,
                    b: mdl.b,
                    c: mdl.c,
                    se: { a: 0, b: 0, c: 0 },
                    rmse_seconds: mdl.rmse,
                    sigma_seconds: mdl.rmse,
                    cov: [],
                    samples: 9,
                    distinct_volumes: 9,
                    note: null,
                  },
                  trust: {
                    trusted: mdl.trusted,
                    why: mdl.trusted ? null : 'x',
                    more_restarts: mdl.trusted ? null : 1,
                    rmse_bound_seconds: 2,
                  },
                }
              : undefined;
            const p = plan(sessions, pol, { now, bootstrap });
            const dated = sessions.filter((s) => s.lastActivityMs !== null).map((s) => s.lastActivityMs!);
            const newest = dated.length ? Math.max(...dated) : null;
            for (const g of p.groups) {
              if (g.action !== 'delete') continue;
              expect(g.lastActivityMs).not.toBeNull();
              expect(g.lastActivityMs).not.toBe(newest);
              for (const m of g.members)
                expect(m.lastActivityMs === null || m.lastActivityMs <= g.lastActivityMs!).toBe(true);
              if (now < Date.UTC(2024, 0, 1)) expect(['max_age_days', 'cron_max_age_days']).not.toContain(g.reason);
              if (g.reason === 'cron_keep_runs' || g.reason === 'cron_max_age_days') expect(g.cronJob).not.toBeNull();
              if (g.reason === 'max_sessions' && !pol.max_sessions_counts_cron) expect(g.cronJob).toBeNull();
              if (g.reason === 'max_bootstrap_seconds') {
                expect(mdl?.trusted).toBe(true);
                expect(g.members.every((m) => m.dir === '/s')).toBe(true);
              }
            }
            // An alias group has one verdict: the members are never split.
            const groupOf = new Map<string, number>();
            for (const g of p.groups) for (const m of g.members) groupOf.set(m.id, g.id);
            for (const s of sessions)
              for (const a of s.aliases) {
                const other = sessions.find((x) => x.key === a && x.dir === s.dir);
                if (other) expect(groupOf.get(other.id)).toBe(groupOf.get(s.id));
              }
            const shuffled = order.map((i) => sessions[i]!);
            expect(verdicts(plan(shuffled, pol, { now, bootstrap }))).toEqual(verdicts(p));
          },
        ),
        { numRuns: 300 },
      );
    },
  );

  it(
    'each cron job keeps at most cron_keep_runs runs (or only protected ones ' +
      'beyond), its oldest dated runs going first',
    () => {
      fc.assert(
        fc.property(fc.array(spec, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 5 }), (specs, keep) => {
          const p = plan(build(specs), { cron_keep_runs: keep });
          const jobs = new Set(p.groups.map((g) => g.cronJob).filter((j): j is string => j !== null));
          for (const job of jobs) {
            const runs = p.groups.filter((g) => g.cronJob === job);
            const kept = runs.filter((g) => g.action === 'keep');
            const keptDeletable = kept.filter((g) => g.reason === 'within_policy');
            expect(kept.length <= keep || keptDeletable.length === 0).toBe(true);
            for (const d of runs.filter((g) => g.action === 'delete'))
              for (const k of keptDeletable) expect(d.id).toBeLessThan(k.id);
          }
          // Chats are never touched by the cron rules.
          expect(p.groups.filter((g) => g.cronJob === null).every((g) => g.action === 'keep')).toBe(true);
        }),
        { numRuns: 300 },
      );
    },
  );

  it(
    'with max_sessions_counts_cron false, the chats kept are at most max_sessions ' + '(or only protected ones beyond)',
    () => {
      fc.assert(
        fc.property(fc.array(spec, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 20 }), (specs, max) => {
          const p = plan(build(specs), { max_sessions: max, max_sessions_counts_cron: false });
          const chats = p.groups.filter((g) => g.cronJob === null && g.action === 'keep');
          expect(chats.length <= max || chats.every((g) => g.reason !== 'within_policy')).toBe(true);
          expect(p.groups.filter((g) => g.cronJob !== null).every((g) => g.action === 'keep')).toBe(true);
        }),
        { numRuns: 300 },
      );
    },
  );

  it(
    'with a trusted model, the default agent ends within the budget or only ' +
      'protected sessions of it are left; oldest go first',
    () => {
      fc.assert(
        fc.property(
          fc.array(spec, { minLength: 1, maxLength: 40 }),
          fc.record({
            a: fc.double({ min: 0, max: 5, noNaN: true }),
            b: fc.double({ min: 0.01, max: 2, noNaN: true }),
            c: fc.double({ min: 0, max: 2, noNaN: true }),
            budget: fc.integer({ min: 6, max: 60 }),
          }),
          (specs, m) => {
            const model: BootstrapModel = {
              kind: 'sessions+mib',
              a: m.a,
              b: m.b,
              c: m.c,
              se: { a: 0, b: 0, c: 0 },
              rmse_seconds: 1,
              sigma_seconds: 1,
              cov: [],
              samples: 9,
              distinct_volumes: 9,
              note: null,
            };
            const p = plan(
              build(specs),
              {},
              {
                bootstrap: {
                  budgetSeconds: m.budget,
                  dir: '/s',
                  model,
                  trust: { trusted: true, why: null, more_restarts: null, rmse_bound_seconds: 2 },
                },
              },
            );
            const keptHere = p.groups
              .filter((g) => g.action === 'keep')
              .flatMap((g) => g.members.filter((x) => x.dir === '/s'));
            const predicted =
              predictGap(
                model,
                keptHere.length,
                keptHere.reduce((n, x) => n + x.jsonlBytes, 0),
              ) + 2; // + 2 × sigma (no coefficient uncertainty here)
            const deletableLeft = p.groups.filter(
              (g) => g.action === 'keep' && g.reason === 'within_policy' && g.members.some((x) => x.dir === '/s'),
            );
            if (p.bootstrap!.state !== 'unreachable' || p.bootstrap!.cap_sessions !== null)
              expect(predicted <= m.budget + 1e-9 || deletableLeft.length === 0).toBe(true);
            const victims = p.groups.filter((g) => g.reason === 'max_bootstrap_seconds');
            for (const d of victims) for (const k of deletableLeft) expect(d.id).toBeLessThan(k.id);
          },
        ),
        { numRuns: 300 },
      );
    },
  );

  it("at their defaults the guard keys decide nothing (PicoClaw's policy alone)", () => {
    fc.assert(
      fc.property(
        fc.array(spec, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 0, max: 30 }),
        (specs, age, max) => {
          const p = plan(build(specs), { max_age_days: age, max_sessions: max });
          for (const g of p.groups)
            expect(['cron_keep_runs', 'cron_max_age_days', 'max_bootstrap_seconds']).not.toContain(g.reason);
          expect(p.bootstrap).toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });
});
