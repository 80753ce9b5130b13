import { afterAll, describe, expect, it } from 'vitest';
import { avoided, CLASSES, KNOWN_FAILING } from '../sim/classes.js';
import { describeFailure, isRoot, runScenario, simulate, simulateKills, stats } from '../sim/harness.js';
import type { Scenario } from '../sim/scenario.js';

/**
 * The fault-injection simulation: every class with fixed seeds, so that `npm test` (and a CI run) gives
 * the same verdict on the same code. Exploring new seeds is `npm run simulate -- --seed S --class C
 * --scenarios N` (a failure prints its seed and the shrunk scenario), or PCG_SIM_SEED=S here, which adds
 * that seed to the fixed ones. A class another change fixes is an expected failure (test/sim/classes.ts
 * KNOWN_FAILING).
 */
const FIXED_SEEDS = [26];
const SEEDS = [...FIXED_SEEDS, ...(process.env.PCG_SIM_SEED ? [Number(process.env.PCG_SIM_SEED)] : [])];
const RUNS = Number(process.env.PCG_SIM_RUNS ?? 4);
/** Shrink steps in `npm test` (the script shrinks further). */
const SHRINK = Number(process.env.PCG_SIM_SHRINK ?? 8);
const KILL_RUNS = Number(process.env.PCG_SIM_KILL_RUNS ?? 2);
console.log(`simulation: seeds ${SEEDS.join(', ')} (PCG_SIM_SEED=S adds one)`);

/** Scenarios an exploring run found, cut down to what made them fail: each must hold as it is. */
const FOUND: { what: string; scenario: Scenario }[] = [
  {
    // Seed 1013423346, append-mid-pass (the append played no part). The model left out the shared
    // conversation's messages, which date the undated claimant (PicoClaw's last activity counts its
    // seahorse messages, matched on its key and aliases): the pass rightly deletes it by age.
    what: 'an undated session that claims a shared conversation older than max_age_days is dated by it',
    scenario: {
      agents: 1,
      share: 'none',
      orphans: 0,
      sharedConversation: true,
      policy: { max_age_days: 7, max_sessions: 0, vacuum: false, archive: false },
      events: [],
      fault: 'none',
      writtenUnderBadClock: 1,
      sessions: [
        {
          agent: 0,
          keyKind: 'opaque',
          meta: 'valid',
          jsonl: 'regular',
          when: { kind: 'undated' },
          aliasOf: null,
          seahorse: false,
        },
        {
          agent: 0,
          keyKind: 'opaque',
          meta: 'valid',
          jsonl: 'regular',
          when: { kind: 'age', days: 6 },
          aliasOf: null,
          seahorse: false,
        },
      ],
    },
  },
];

describe('simulation: real passes on random homes, with events and faults, against the model', () => {
  for (const f of FOUND)
    it(`found: ${f.what}`, async () => {
      expect(await runScenario(f.scenario, '1013423346')).toEqual([]);
    });

  afterAll(() => {
    console.log(`simulation: ${JSON.stringify(stats)}`);
    // A harness whose passes never complete, or never delete, checks nothing.
    expect(stats.completed).toBeGreaterThan(stats.scenarios / 2);
    expect(stats.deleted).toBeGreaterThan(0);
  });
  for (const c of CLASSES) {
    const known = KNOWN_FAILING[c.name];
    const skip = c.root && !isRoot() ? c.root : null;
    const test = skip ? it.skip : known ? it.fails : it;
    test(`${c.name}${known ? ` (known failing: ${known})` : ''}${skip ? ` (skipped: ${skip})` : ''}`, async () => {
      for (const seed of SEEDS) {
        const r = await simulate(
          seed,
          RUNS,
          { ...c.shape, root: isRoot(), avoid: known ? undefined : avoided() },
          SHRINK,
        );
        expect(r.failure, describeFailure(r, c.name)).toBeNull();
      }
    }, 120_000);
  }

  const killKnown = KNOWN_FAILING.sigkill;
  (killKnown ? it.fails : it)(
    `sigkill: the built CLI killed at the nth change to a sessions folder converges on the next pass${killKnown ? ` (known failing: ${killKnown})` : ''}`,
    async () => {
      for (const seed of SEEDS) {
        const r = await simulateKills(seed, KILL_RUNS, isRoot(), SHRINK / 2);
        expect(r.failure, describeFailure(r, 'sigkill')).toBeNull();
      }
    },
    120_000,
  );
});
