import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OrphanConversation, SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import { planPrune, type DbFacts, type Plan } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY, type Policy } from '../../src/prune/policy.js';
import { DAY, NO_DB, NOW, rec, verdicts, withPermutation } from '../support/plan-input.js';

function plan(
  sessions: SessionRecord[],
  policy: Partial<Policy> = {},
  opts: { now?: number; db?: DbFacts; orphans?: OrphanConversation[] } = {},
): Plan {
  return planPrune({
    sessions,
    orphanConversations: opts.orphans ?? [],
    agentIds: ['main'],
    policy: { ...DEFAULT_POLICY, ...policy },
    now: opts.now ?? NOW,
    db: opts.db ?? NO_DB,
    // These cases are about the rules, not the clock (test/sim/clock.test.ts): the clock is trusted.
    trustClock: true,
  });
}

describe('the planner', () => {
  it('1. alias groups are kept or deleted together; each session counts toward max_sessions', () => {
    const canonical = rec('sk_v1_aaa', 40, { aliases: ['agent:main:main', 'agent:main:telegram:direct:1'] });
    const legacy = rec('agent:main:telegram:direct:1', 5); // the alias is recent: the group is recent
    const other = rec('sk_v1_bbb', 50, { aliases: ['agent:main:main'] }); // shares only the main alias: not grouped
    const main = rec('agent:main:main', 60);
    const p = plan([canonical, legacy, other, main, rec('sk_v1_new', 0)], { max_age_days: 30 });
    expect(verdicts(p)).toMatchObject({
      sk_v1_aaa: 'keep:within_policy',
      'agent:main:telegram:direct:1': 'keep:within_policy',
      sk_v1_bbb: 'delete:max_age_days',
      'agent:main:main': 'delete:max_age_days',
    });
    expect(p.groups).toHaveLength(4);
    // Old together → deleted together.
    const p2 = plan(
      [
        rec('sk_v1_aaa', 40, { aliases: ['agent:main:telegram:direct:1'] }),
        rec('agent:main:telegram:direct:1', 45),
        rec('sk_v1_new', 0),
      ],
      { max_age_days: 30 },
    );
    expect(verdicts(p2)).toMatchObject({
      sk_v1_aaa: 'delete:max_age_days',
      'agent:main:telegram:direct:1': 'delete:max_age_days',
    });
    // max_sessions counts sessions (meta files), as PicoClaw's pruner does: a group of two is two. Over the cap
    // by one, the oldest group goes whole, and says that it takes the count below the cap.
    const p3 = plan([rec('sk_v1_aaa', 4, { aliases: ['agent:main:x'] }), rec('agent:main:x', 5), rec('sk_v1_new', 0)], {
      max_sessions: 2,
      max_age_days: 0,
    });
    expect(verdicts(p3)).toMatchObject({
      sk_v1_aaa: 'delete:max_sessions',
      'agent:main:x': 'delete:max_sessions',
      sk_v1_new: 'keep:newest',
    });
    expect(p3.groups.find((g) => g.key === 'agent:main:x')!.detail).toMatch(/from 3 to 1, below max_sessions=2/);
    const p4 = plan([rec('sk_v1_aaa', 4, { aliases: ['agent:main:x'] }), rec('agent:main:x', 5), rec('sk_v1_new', 0)], {
      max_sessions: 3,
      max_age_days: 0,
    });
    expect(Object.values(verdicts(p4)).every((v) => v.startsWith('keep'))).toBe(true);
  });

  it('1b. aliases only join sessions in the same folder', () => {
    const a = rec('sk_v1_aaa', 40, { aliases: ['agent:main:x'] });
    const b = rec('agent:main:x', 1, { dir: '/other', id: '/other/x' });
    expect(plan([a, b, rec('sk_v1_new', 0)], { max_age_days: 30 }).groups).toHaveLength(3);
  });

  it(
    '2. last activity is the newest usable timestamp; sessions with none are ' +
      'undated, never deleted, and still counted',
    () => {
      const p = plan([rec('undated1', null), rec('undated2', null), rec('old', 100), rec('new', 0)], {
        max_age_days: 30,
        max_sessions: 2,
      });
      expect(verdicts(p)).toEqual({
        undated1: 'keep:undated',
        undated2: 'keep:undated',
        old: 'delete:max_age_days',
        new: 'keep:newest',
      });
      const p2 = plan([rec('undated1', null), rec('undated2', null), rec('mid', 3), rec('new', 0)], {
        max_age_days: 0,
        max_sessions: 2,
      });
      expect(verdicts(p2)).toEqual({
        undated1: 'keep:undated',
        undated2: 'keep:undated',
        mid: 'delete:max_sessions',
        new: 'keep:newest',
      });
    },
  );

  it('3. the most recently active session is never deleted (all sharing that time are kept)', () => {
    const p = plan([rec('a', 400), rec('b', 400), rec('c', 500)], { max_age_days: 30, max_sessions: 1 });
    expect(verdicts(p)).toEqual({ a: 'keep:newest', b: 'keep:newest', c: 'delete:max_age_days' });
  });

  it('3b. a newest time in the future also protects the newest plausible session', () => {
    const p = plan([rec('future', -400), rec('real', 0), rec('old', 2)], { max_age_days: 0, max_sessions: 1 });
    expect(verdicts(p)).toEqual({ future: 'keep:newest', real: 'keep:newest', old: 'delete:max_sessions' });
  });

  it('4. the age check is skipped entirely while the clock reads before 2024', () => {
    const now1970 = Date.UTC(1970, 0, 1, 0, 5);
    const s = [
      rec('a', null, { lastActivityMs: Date.UTC(2026, 0, 1) }),
      rec('b', null, { lastActivityMs: Date.UTC(2025, 0, 1) }),
    ];
    const p = plan(s, { max_age_days: 30 }, { now: now1970 });
    expect(p.ageCheck).toBe('skipped_clock');
    expect(Object.values(verdicts(p)).every((v) => v.startsWith('keep'))).toBe(true);
    expect(plan(s, { max_age_days: 0 }).ageCheck).toBe('disabled');
    expect(plan(s, { max_age_days: 30 }).ageCheck).toBe('applied');
  });

  it('5. the count check deletes the oldest dated sessions until max_sessions remain, all agents together', () => {
    const s = [
      rec('a', 1, { agent: 'x' }),
      rec('b', 2, { agent: 'y' }),
      rec('c', 3, { agent: 'x' }),
      rec('d', 4, { agent: 'z' }),
      rec('e', null),
    ];
    const p = plan(s, { max_age_days: 0, max_sessions: 3 });
    expect(verdicts(p)).toEqual({
      a: 'keep:newest',
      b: 'keep:within_policy',
      c: 'delete:max_sessions',
      d: 'delete:max_sessions',
      e: 'keep:undated',
    });
  });

  it('5b. when only protected sessions are left the count check stops short', () => {
    const p = plan([rec('u1', null), rec('u2', null), rec('n', 0)], { max_age_days: 0, max_sessions: 1 });
    expect(Object.values(verdicts(p)).every((v) => v.startsWith('keep'))).toBe(true);
  });

  it('7. oldest first, ties broken by key: the plan is deterministic whatever the input order', () => {
    const s = [rec('b', 10), rec('a', 10), rec('c', 10), rec('new', 0)];
    const p1 = plan(s, { max_age_days: 0, max_sessions: 2 });
    const p2 = plan([...s].reverse(), { max_age_days: 0, max_sessions: 2 });
    expect(verdicts(p1)).toEqual({
      a: 'delete:max_sessions',
      b: 'delete:max_sessions',
      c: 'keep:within_policy',
      new: 'keep:newest',
    });
    expect(verdicts(p2)).toEqual(verdicts(p1));
  });

  it('8. orphan conversations go by the age check alone', () => {
    const orphan = (key: string, ageDays: number | null): OrphanConversation => ({
      conversationId: key.length,
      key,
      messages: 3,
      summaries: 0,
      lastMessageAt: null,
      createdAt: null,
      lastActivityMs: ageDays === null ? null : NOW - ageDays * DAY,
    });
    const p = plan(
      [rec('new', 0)],
      { max_age_days: 30, max_sessions: 0 },
      { orphans: [orphan('old', 40), orphan('recent1', 2), orphan('undated', null)] },
    );
    expect(p.orphans.map((o) => `${o.conversation.key}:${o.action}:${o.reason}`)).toEqual([
      'old:delete:max_age_days',
      'recent1:keep:within_policy',
      'undated:keep:undated',
    ]);
    const p2 = plan([rec('new', 0)], { max_age_days: 0 }, { orphans: [orphan('old', 400)] });
    expect(p2.orphans[0]!.action).toBe('keep');
  });

  it('keeps sessions whose meta cannot be read or whose .jsonl is a symlink, and counts them', () => {
    const p = plan(
      [
        rec(null, null, { issues: ['meta_corrupt'] }),
        rec('link', 100, { issues: ['jsonl_not_regular_file'] }),
        rec('old', 90),
        rec('new', 0),
      ],
      { max_age_days: 30 },
    );
    const v = Object.values(verdicts(p)).sort();
    expect(v).toEqual(['delete:max_age_days', 'keep:newest', 'keep:not_regular_file', 'keep:unreadable_meta']);
  });

  it('6. the size check deletes the oldest sessions with rows until the estimate fits, newest kept', () => {
    const conv = (id: number) => [
      { conversationId: id, key: `k${id}`, messages: 10, summaries: 0, lastMessageAt: null, createdAt: null },
    ];
    const s = [
      rec('s1', 10, { conversations: conv(1) }),
      rec('s2', 9, { conversations: conv(2) }),
      rec('nodb', 8),
      rec('s3', 7, { conversations: conv(3) }),
      rec('s4', 0, { conversations: conv(4) }),
    ];
    const MB = 1024 * 1024;
    const db: DbFacts = {
      present: true,
      fileBytes: 40 * MB,
      usedBytes: 40 * MB,
      contentBytes: new Map([
        [1, 100],
        [2, 100],
        [3, 100],
        [4, 100],
      ]),
    };
    const p = plan(s, { max_age_days: 0, max_sessions: 0, max_db_size_mb: 25 }, { db });
    expect(verdicts(p)).toEqual({
      s1: 'delete:max_db_size_mb',
      s2: 'delete:max_db_size_mb',
      nodb: 'keep:within_policy',
      s3: 'keep:within_policy',
      s4: 'keep:newest',
    });
    expect(p.size.projectedBytesAfter).toBe(20 * MB);
    const tight = plan(s, { max_age_days: 0, max_sessions: 0, max_db_size_mb: 1 }, { db });
    expect(verdicts(tight).s4).toBe('keep:newest');
    expect(tight.size.shortfall).toMatch(/protected/);
  });
});

describe('planner invariants (property tests)', () => {
  const sessionArb = fc.record({
    age: fc.option(fc.integer({ min: -3, max: 400 }), { nil: null }),
    tie: fc.boolean(),
  });
  const policyArb = fc.record({
    max_age_days: fc.integer({ min: 0, max: 120 }),
    max_sessions: fc.integer({ min: 0, max: 30 }),
  });

  it('never deletes the newest or an undated session, deletes only dated ones, and is deterministic', () => {
    fc.assert(
      fc.property(
        withPermutation(fc.array(sessionArb, { minLength: 1, maxLength: 40 })),
        policyArb,
        ([specs, order], pol) => {
          const sessions = specs.map((s, i) =>
            rec(`k${String(i).padStart(3, '0')}`, s.age === null ? null : s.tie ? 10 : s.age),
          );
          const p = plan(sessions, pol);
          const dated = sessions.filter((s) => s.lastActivityMs !== null).map((s) => s.lastActivityMs!);
          const newest = dated.length ? Math.max(...dated) : null;
          for (const g of p.groups) {
            if (g.action !== 'delete') continue;
            expect(g.lastActivityMs).not.toBeNull();
            expect(g.lastActivityMs).not.toBe(newest);
          }
          // Same verdicts whatever the order of the input.
          const shuffled = order.map((i) => sessions[i]!);
          expect(verdicts(plan(shuffled, pol))).toEqual(verdicts(p));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the count check leaves max_sessions (or only protected ones) and its victims are the oldest', () => {
    fc.assert(
      fc.property(
        fc.array(sessionArb, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 30 }),
        (specs, max) => {
          const sessions = specs.map((s, i) => rec(`k${String(i).padStart(3, '0')}`, s.age));
          const p = plan(sessions, { max_age_days: 0, max_sessions: max });
          const kept = p.groups.filter((g) => g.action === 'keep');
          const deletableKept = kept.filter((g) => g.reason === 'within_policy');
          expect(kept.length <= max || deletableKept.length === 0).toBe(true);
          // Every deleted group is older than (or tied with and ordered before) every deletable kept group.
          const deleted = p.groups.filter((g) => g.action === 'delete');
          for (const d of deleted) for (const k of deletableKept) expect(d.id).toBeLessThan(k.id);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the size check deletes a prefix of the oldest-first eligible order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            age: fc.integer({ min: 0, max: 300 }),
            bytes: fc.integer({ min: 1, max: 1000 }),
            inDb: fc.boolean(),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        fc.integer({ min: 1, max: 40 }),
        (specs, limitMb) => {
          const content = new Map<number, number>();
          const sessions = specs.map((s, i) => {
            const conversations = s.inDb
              ? [
                  {
                    conversationId: i + 1,
                    key: `k${i}`,
                    messages: 1,
                    summaries: 0,
                    lastMessageAt: null,
                    createdAt: null,
                  },
                ]
              : [];
            if (s.inDb) content.set(i + 1, s.bytes);
            return rec(`k${String(i).padStart(3, '0')}`, s.age, { conversations });
          });
          const MB = 1024 * 1024;
          const p = plan(
            sessions,
            { max_age_days: 0, max_sessions: 0, max_db_size_mb: limitMb },
            { db: { present: true, fileBytes: 50 * MB, usedBytes: 50 * MB, contentBytes: content } },
          );
          const eligible = p.groups.filter((g) => g.sizeEligible || g.reason === 'max_db_size_mb');
          const flags = eligible.map((g) => g.action === 'delete');
          const firstKeep = flags.indexOf(false);
          if (firstKeep >= 0) expect(flags.slice(firstKeep).every((f) => !f)).toBe(true);
          if (p.size.projectedBytesAfter > limitMb * MB) expect(flags.every((f) => f)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
