import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sharedClaims } from '../../src/prune/plan/group.js';
import type { PlanGroup } from '../../src/prune/plan/plan.js';

/** The planner's rule spelled out: a conversation claimed by members of two or more groups, with their ids in order. */
function naive(groups: { id: number; members: { conversations: { conversationId: number }[] }[] }[]) {
  const who = new Map<number, Set<number>>();
  for (const g of groups)
    for (const m of g.members)
      for (const c of m.conversations) who.set(c.conversationId, (who.get(c.conversationId) ?? new Set()).add(g.id));
  const out = new Map<number, number[]>();
  for (const [id, set] of who)
    if (set.size > 1)
      out.set(
        id,
        [...set].sort((a, b) => a - b),
      );
  return out;
}

describe('sharedClaims', () => {
  it('names each conversation claimed by several groups, with the groups in order, and no other', () => {
    const conv = fc.record({ conversationId: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constant(2 ** 40)) });
    const member = fc.record({ conversations: fc.array(conv, { maxLength: 3 }) });
    fc.assert(
      fc.property(fc.array(fc.array(member, { minLength: 1, maxLength: 3 }), { maxLength: 40 }), (raw) => {
        const groups = raw.map((members, id) => ({ id, members }));
        const got = sharedClaims(groups as unknown as PlanGroup[]);
        expect([...got].sort((a, b) => a[0] - b[0])).toEqual([...naive(groups)].sort((a, b) => a[0] - b[0]));
      }),
      { numRuns: 500 },
    );
  });
});
