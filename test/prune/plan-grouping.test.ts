import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupKeys, type SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import { groupSessions, memberList, type GroupMembers } from '../../src/prune/plan/groups.js';
import { planPrune, type PlanInput } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { NO_DB, NOW, rec } from '../support/plan-input.js';

/** The alias grouping as it was first written (a string key and an array per session): the reference. */
function referenceGroups(sessions: SessionRecord[], agentIds: string[]): SessionRecord[][] {
  const parent = sessions.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
  };
  const byDirKey = new Map<string, number[]>();
  sessions.forEach((s, i) => {
    if (s.key === null) return;
    const k = `${s.dir}\0${s.key}`;
    byDirKey.set(k, [...(byDirKey.get(k) ?? []), i]);
  });
  sessions.forEach((s, i) => {
    if (s.key === null) return;
    for (const a of groupKeys(null, s.aliases, agentIds)) {
      for (const j of byDirKey.get(`${s.dir}\0${a}`) ?? []) union(i, j);
    }
  });
  const groups = new Map<number, SessionRecord[]>();
  sessions.forEach((s, i) => groups.set(find(i), [...(groups.get(find(i)) ?? []), s]));
  return [...groups.values()];
}

describe('alias grouping', () => {
  it('groups exactly as the reference does, in the same order, for any keys, folders, duplicates and aliases', () => {
    const key = fc.option(fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'agent:main:main'), { nil: null, freq: 6 });
    const session = fc.record({
      key,
      dir: fc.constantFrom('/a', '/b'),
      aliases: fc.array(fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'agent:main:main', 'agent:ops:main'), {
        maxLength: 4,
      }),
    });
    fc.assert(
      fc.property(fc.array(session, { maxLength: 30 }), (specs) => {
        const sessions = specs.map((s) => rec(s.key, 1, { dir: s.dir, aliases: s.aliases }));
        const ids = (gs: GroupMembers[]) => gs.map((g) => memberList(g).map((m) => sessions.indexOf(m)));
        expect(ids(groupSessions(sessions, ['main', 'ops']))).toEqual(ids(referenceGroups(sessions, ['main', 'ops'])));
      }),
      { numRuns: 300 },
    );
  });

  it('are taken over by the planner, which lets them go and plans as if it had grouped them itself', () => {
    const sessions = [
      rec('k1', 40, { aliases: ['k2'] }),
      rec('k2', 50),
      rec('k3', 45),
      rec(null, 60),
      rec('k4', null, { aliases: ['k1'] }),
      rec('k5', 1),
    ];
    const input = (): PlanInput => ({
      sessions,
      orphanConversations: [],
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY, max_age_days: 30, max_sessions: 2 },
      now: NOW,
      db: NO_DB,
    });
    const given = { ...input(), aliasGroups: groupSessions(sessions, ['main']) };
    const withGroups = planPrune(given);
    expect(given.aliasGroups).toBeUndefined();
    const view = (p: ReturnType<typeof planPrune>) =>
      p.groups.map((g) => [g.id, g.key, g.members.map((m) => sessions.indexOf(m)), g.action, g.reason]);
    expect(view(withGroups)).toEqual(view(planPrune(input())));
    expect(view(withGroups).map((g) => g[2])).toEqual([[3], [2], [0, 1, 4], [5]]);
  });
});
