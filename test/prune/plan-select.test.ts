import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GuardError } from '../../src/errors.js';
import { planPrune, type PlanPin } from '../../src/prune/plan/plan.js';
import { selectForDelete } from '../../src/prune/plan/select.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { NOW, rec } from '../support/plan-input.js';

/**
 * `delete KEY` narrows a pass's plan to one alias group. For any home, policy, pins and key: either the
 * plan then deletes exactly the members of the group holding that key (nothing else: no other group,
 * no orphan, no size step), or it is refused (pinned: exit 2; unsafe: exit 3) naming every member, and
 * nothing is deleted at all.
 */
describe('delete KEY narrows the plan (property)', () => {
  it('deletes exactly the group asked for, or refuses naming it', () => {
    const spec = fc.record({
      age: fc.option(fc.integer({ min: 0, max: 200 }), { nil: null, freq: 6 }),
      aliasOf: fc.option(fc.nat({ max: 20 }), { nil: null, freq: 4 }),
      unsafe: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
      pinned: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    });
    fc.assert(
      fc.property(
        fc.array(spec, { minLength: 1, maxLength: 20 }),
        fc.nat(),
        fc.record({ max_age_days: fc.constantFrom(0, 30), max_sessions: fc.constantFrom(0, 2, 5) }),
        (specs, pick, pol) => {
          const keys = specs.map((_, i) => `sk_v1_${String(i).padStart(2, '0')}`);
          const sessions = specs.map((s, i) =>
            rec(keys[i]!, s.age, {
              aliases: s.aliasOf !== null && s.aliasOf < specs.length && s.aliasOf !== i ? [keys[s.aliasOf]!] : [],
              issues: s.unsafe ? ['jsonl_not_regular_file'] : [],
            }),
          );
          const pins: PlanPin[] = specs.flatMap((s, i) =>
            s.pinned ? [{ agent: 'main', key: keys[i]!, pinned_at: '2026-01-01T00:00:00Z', note: null }] : [],
          );
          const plan = planPrune({
            sessions,
            orphanConversations: [],
            agentIds: ['main'],
            policy: { ...DEFAULT_POLICY, ...pol },
            now: NOW,
            db: { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null },
            pins,
          });
          const key = keys[pick % keys.length]!;
          const group = plan.groups.find((g) => g.members.some((m) => m.key === key))!;
          const refusal = group.reason === 'pinned' || group.reason === 'not_regular_file';
          let err: unknown = null;
          try {
            selectForDelete(plan, { typed: key }, '/home');
          } catch (e) {
            err = e;
          }
          if (refusal) {
            expect(err).toBeInstanceOf(GuardError);
            expect((err as GuardError).exitCode).toBe(group.reason === 'pinned' ? 2 : 3);
            for (const m of group.members) expect((err as GuardError).message).toContain(m.key!);
            return;
          }
          expect(err).toBeNull();
          const deleted = plan.groups.filter((g) => g.action === 'delete');
          expect(deleted).toEqual([group]);
          expect(group.reason).toBe('requested');
          expect(plan.size.checked).toBe(false);
          expect(plan.groups.every((g) => !g.sizeEligible)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
