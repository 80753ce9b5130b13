import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { planPrune, type Plan } from '../../src/prune/plan/plan.js';
import { groupCronJob } from '../../src/prune/plan/cron.js';
import { smallest } from '../../src/prune/plan/groups.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import type { ConversationStat } from '../../src/picoclaw/seahorse.js';
import { heldPerSession } from '../support/heap.js';
import { oneConversationEach } from '../support/home.js';
import { NOW, rec } from '../support/plan-input.js';
import { tempDir } from '../support/tmp.js';

describe("the planner's groups", () => {
  it('hold under 100 bytes of heap per one-member group with one conversation (about 255 as object literals)', () => {
    // Measured: about 255 bytes per group as object literals (the object, two arrays with their
    // backing stores, a boxed last activity, a cron run's sliced job id), about 80 as instances
    // that keep the member as it is and read its conversation from it (119 with a copy of that
    // conversation, which the inventory makes afresh on each read).
    const home = tempDir();
    const n = 2000;
    oneConversationEach(home, n, (i) => {
      const digits = String(i).padStart(12, '0');
      // Half chats, half cron runs (their job is read from the key).
      const key =
        i % 2 ? `sk_v1_${digits.padStart(64, '0')}` : `agent:cron-0123456789abcdef-0000abcd-0000-4000-8000-${digits}`;
      return { key, at: new Date(NOW - 40 * 86_400_000 + i * 60_000).toISOString() };
    });
    const h = discoverHome({ home, env: {} });
    const inv = buildInventory(h);
    const contentBytes = new Map<number, number>();
    for (const s of inv.sessions) for (const c of s.conversations) contentBytes.set(c.conversationId, 1000);
    const plan = (): Plan =>
      planPrune({
        sessions: inv.sessions,
        orphanConversations: inv.orphanConversations,
        agentIds: h.agents.map((a) => a.id),
        policy: { ...DEFAULT_POLICY, max_age_days: 30, max_sessions: 500, cron_keep_runs: 100 },
        now: NOW,
        db: { present: true, fileBytes: 4_000_000, usedBytes: 4_000_000, contentBytes },
      });
    // A first plan compiles the code, and shows what is measured: one member, one own conversation each.
    const first = plan();
    const shape = (p: Plan) =>
      p.groups.every((g) => g.members.length === 1 && g.ownConversations.length === 1 && g.estimatedDbBytes === 2000);
    expect([first.groups.length, shape(first), first.groups.filter((g) => g.cronJob !== null).length]).toEqual([
      n,
      true,
      n / 2,
    ]);
    expect(heldPerSession(() => ({ sessions: plan().groups }), n)).toBeLessThan(100);
  });

  // What a group read as the object literal the planner built before: its members' key, newest
  // activity and cron job, and the conversations only it claims, in the order its members list them.
  it('read as the planner computes them, whatever the members, keys and conversations', () => {
    const KEYS = [
      'sk_v1_a',
      'sk_v1_b',
      'agent:main:x',
      'agent:cron-j1-0000abcd-0000-4000-8000-000000000001',
      'agent:cron-j1-0000abcd-0000-4000-8000-000000000002',
      'agent:cron-j2-0000abcd-0000-4000-8000-000000000003',
      null,
    ];
    const conv = (id: number): ConversationStat => ({
      conversationId: id,
      key: `c${id}`,
      messages: 1,
      summaries: 0,
      lastMessageAt: null,
      createdAt: null,
    });
    const session = fc.record({
      key: fc.constantFrom(...KEYS),
      age: fc.option(fc.integer({ min: 0, max: 60 })),
      aliases: fc.array(fc.constantFrom(...KEYS.filter((k) => k !== null)), { maxLength: 2 }),
      convs: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.array(session, { maxLength: 12 }), fc.boolean(), (specs, detail) => {
        const sessions = specs.map((s) => rec(s.key, s.age, { aliases: s.aliases, conversations: s.convs.map(conv) }));
        const p = planPrune({
          sessions,
          orphanConversations: [],
          agentIds: ['main'],
          policy: { ...DEFAULT_POLICY, max_bootstrap_seconds: 0 },
          now: NOW,
          db: { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null },
        });
        const claimedBy = new Map<number, Set<number>>();
        for (const g of p.groups)
          for (const m of g.members)
            for (const c of m.conversations)
              claimedBy.set(c.conversationId, (claimedBy.get(c.conversationId) ?? new Set()).add(g.id));
        for (const g of p.groups) {
          const ms = g.members;
          let last: number | null = null;
          for (const m of ms)
            if (m.lastActivityMs !== null && (last === null || m.lastActivityMs > last)) last = m.lastActivityMs;
          const own: number[] = [];
          for (const m of ms)
            for (const c of m.conversations)
              if (claimedBy.get(c.conversationId)!.size === 1 && !own.includes(c.conversationId))
                own.push(c.conversationId);
          expect({
            key: g.key,
            lastActivityMs: g.lastActivityMs,
            cronJob: g.cronJob,
            own: g.ownConversations.map((c) => c.conversationId),
          }).toEqual({
            key:
              ms.length === 1 && ms[0]!.key !== null ? ms[0]!.key : smallest(ms.map((m) => m.key ?? `\uffff${m.id}`)),
            lastActivityMs: last,
            cronJob: groupCronJob(ms.map((m) => m.key)),
            own,
          });
          // Each read gives the same members and conversations.
          expect(g.members).toEqual(ms);
          expect(g.ownConversations).toEqual(g.ownConversations);
          // No optional field present while unset (as in the literal), and one set reads as set.
          expect(['detail' in g, 'hold' in g]).toEqual([false, false]);
          if (detail) g.detail = 'why';
          expect(g.detail).toBe(detail ? 'why' : undefined);
        }
        // Every session is in exactly one group.
        expect(p.groups.flatMap((g) => g.members).sort((a, b) => sessions.indexOf(a) - sessions.indexOf(b))).toEqual(
          sessions,
        );
      }),
      { numRuns: 300 },
    );
  });
});
