import fc from 'fast-check';

/**
 * The simulation's scenarios: a PicoClaw home, a policy, a clock, the events that happen during
 * the pass and one fault. Plain data (printed when a scenario fails, shrunk by fast-check).
 */

export type MetaKind = 'valid' | 'corrupt' | 'wrong_type' | 'empty' | 'no_key';
export type JsonlKind = 'regular' | 'empty' | 'missing' | 'symlink' | 'fifo' | 'device' | 'hardlink';
export type KeyKind = 'opaque' | 'legacy' | 'cron' | 'collide' | 'case' | 'nfd' | 'long';
export type When = { kind: 'age'; days: number } | { kind: 'undated' } | { kind: 'pre2024' } | { kind: 'future' };

export interface SimSession {
  agent: number;
  keyKind: KeyKind;
  meta: MetaKind;
  jsonl: JsonlKind;
  when: When;
  /** This session's key is an alias of session `aliasOf` (same folder), or null. */
  aliasOf: number | null;
  seahorse: boolean;
}

export type Share = 'none' | 'symlink' | 'bind';
export type EventKind = 'append' | 'alias' | 'new' | 'compact' | 'rewrite';
export type Fault = 'none' | 'enospc_archive' | 'enospc_state' | 'corrupt_page' | 'lock_held' | 'clock_ahead';

export interface SimEvent {
  /** At the nth step hook of the pass (0 = the first). */
  step: number;
  kind: EventKind;
}

export interface Scenario {
  agents: number;
  share: Share;
  sessions: SimSession[];
  orphans: number;
  /** A conversation claimed by two sessions of different groups (both list its key as an alias). */
  sharedConversation: boolean;
  policy: { max_age_days: number; max_sessions: number; vacuum: boolean; archive: boolean };
  events: SimEvent[];
  fault: Fault;
  /** With clock_ahead: how many sessions were written under the clock that is now 5 years ahead. */
  writtenUnderBadClock: number;
}

export interface Shape {
  /** Force this fault in every scenario (a class of its own), or let the generator choose. */
  fault?: Fault;
  /** Force a way of sharing a folder. */
  share?: Share;
  /** Force at least one session of this .jsonl kind / meta kind. */
  jsonl?: JsonlKind;
  meta?: MetaKind;
  /** Force at least one event of this kind. */
  event?: EventKind;
  /** max_sessions set to the number of sessions written (the count must not move): counting each once matters. */
  tightCap?: boolean;
  /** Faults and ways of sharing the random pool leaves out (their classes are known to fail: test/sim/classes.ts). */
  avoid?: { faults: Fault[]; shares: Share[] };
  /** Whether the machine lets the harness mount (tmpfs for ENOSPC, bind mounts) and make devices. */
  root: boolean;
}

const when: fc.Arbitrary<When> = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0, max: 400 }).map((days) => ({ kind: 'age' as const, days })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'undated' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pre2024' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'future' as const }) },
);

export function scenarioArb(shape: Shape): fc.Arbitrary<Scenario> {
  const jsonlKinds: JsonlKind[] = ['regular', 'empty', 'missing', 'symlink', 'fifo', 'hardlink'];
  if (shape.root) jsonlKinds.push('device');
  const session = (agents: number): fc.Arbitrary<SimSession> =>
    fc.record({
      agent: fc.integer({ min: 0, max: agents - 1 }),
      keyKind: fc.oneof(
        { weight: 10, arbitrary: fc.constantFrom<KeyKind>('opaque', 'legacy') },
        { weight: 3, arbitrary: fc.constantFrom<KeyKind>('cron', 'collide', 'case', 'nfd', 'long') },
      ),
      meta: fc.oneof(
        { weight: 12, arbitrary: fc.constant<MetaKind>('valid') },
        { weight: 2, arbitrary: fc.constantFrom<MetaKind>('corrupt', 'wrong_type', 'empty', 'no_key') },
      ),
      jsonl: fc.oneof(
        { weight: 12, arbitrary: fc.constant<JsonlKind>('regular') },
        { weight: 3, arbitrary: fc.constantFrom<JsonlKind>(...jsonlKinds) },
      ),
      when,
      aliasOf: fc.option(fc.nat(40), { freq: 4 }),
      seahorse: fc.boolean(),
    });
  const avoid = shape.avoid ?? { faults: [], shares: [] };
  const shares = (shape.root ? (['none', 'symlink', 'bind'] as Share[]) : (['none', 'symlink'] as Share[])).filter(
    (x) => !avoid.shares.includes(x),
  );
  const faults = (['none', 'lock_held', 'clock_ahead', 'corrupt_page'] as Fault[])
    .concat(shape.root ? ['enospc_archive', 'enospc_state'] : [])
    .filter((x) => !avoid.faults.includes(x));
  return fc
    .record({
      agents: fc.integer({ min: 1, max: 3 }),
      share: shape.share ? fc.constant(shape.share) : fc.constantFrom(...shares),
      orphans: fc.integer({ min: 0, max: 3 }),
      sharedConversation: fc.boolean(),
      policy: fc.record({
        max_age_days: fc.constantFrom(0, 7, 30, 90),
        max_sessions: fc.oneof(fc.constant(0), fc.integer({ min: 2, max: 30 })),
        vacuum: fc.boolean(),
        archive: fc.boolean(),
      }),
      events: fc.array(
        fc.record({
          step: fc.nat(12),
          kind: fc.constantFrom<EventKind>('append', 'alias', 'new', 'compact', 'rewrite'),
        }),
        { maxLength: 3 },
      ),
      fault: shape.fault
        ? fc.constant(shape.fault)
        : fc.oneof(
            { weight: 6, arbitrary: fc.constant<Fault>('none') },
            { weight: 4, arbitrary: fc.constantFrom(...faults) },
          ),
      writtenUnderBadClock: fc.integer({ min: 1, max: 3 }),
    })
    .chain((base) =>
      fc.array(session(base.agents), { minLength: 3, maxLength: 28 }).map((sessions) => {
        const s: Scenario = { ...base, sessions };
        // The shape's forced kinds go on the first session (kept simple, so shrinking keeps them).
        if (shape.jsonl) s.sessions[0] = { ...s.sessions[0]!, jsonl: shape.jsonl, meta: 'valid' };
        if (shape.meta) s.sessions[0] = { ...s.sessions[0]!, meta: shape.meta };
        if (shape.event && !s.events.some((e) => e.kind === shape.event))
          s.events = [...s.events, { step: 0, kind: shape.event }];
        if (s.share !== 'none' && s.agents < 2) s.agents = 2;
        if (s.share === 'bind' && s.agents < 2) s.agents = 2;
        if (s.fault === 'enospc_archive') s.policy = { ...s.policy, archive: true };
        if (shape.tightCap) {
          // The cap is the number of sessions PicoClaw lists and the guard may delete: one more counted pushes one out.
          const counted = s.sessions.filter(
            (x) => x.meta === 'valid' && !['symlink', 'fifo', 'device'].includes(x.jsonl),
          ).length;
          s.policy = { ...s.policy, max_sessions: Math.max(1, counted), max_age_days: 0 };
        }
        return s;
      }),
    );
}
