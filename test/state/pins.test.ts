import fc from 'fast-check';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveStateDir, SYSTEM_STATE_DIR } from '../../src/io/statedir.js';
import { addPin, homePins, pinsPath, readPins, removePins, type Pin } from '../../src/state/pins.js';
import { tempDir } from '../support/tmp.js';

const pin = (key: string, o: Partial<Pin> = {}): Pin => ({
  home: '/h',
  agent: 'main',
  key,
  pinned_at: '2026-11-30T12:00:00.000Z',
  note: null,
  ...o,
});

describe('the state folder a pin goes to', () => {
  const user = (uid: number, canWrite: boolean) => ({ uid, canWrite: () => canWrite });
  it("is the units' folder for root and for a user who can write it, so the units read the shell's pins", () => {
    expect(resolveStateDir(undefined, { HOME: '/h' }, user(0, false))).toBe(SYSTEM_STATE_DIR);
    expect(resolveStateDir(undefined, { HOME: '/h' }, user(1000, true))).toBe(SYSTEM_STATE_DIR);
    // What the units resolve: $STATE_DIRECTORY is StateDirectory=picoclaw-guard, i.e. that same folder.
    expect(resolveStateDir(undefined, { STATE_DIRECTORY: SYSTEM_STATE_DIR }, user(999, true))).toBe(SYSTEM_STATE_DIR);
  });
  it('is a folder of its own for any other user, and a flag or the tests switch overrides it', () => {
    expect(resolveStateDir(undefined, { HOME: '/h' }, user(1000, false))).toBe('/h/.local/state/picoclaw-guard');
    expect(resolveStateDir(undefined, { HOME: '/h', XDG_STATE_HOME: '/x' }, user(1000, false))).toBe(
      '/x/picoclaw-guard',
    );
    expect(resolveStateDir(undefined, { HOME: '/h', PICOGUARD_NO_SYSTEM_STATE: '1' }, user(0, true))).toBe(
      '/h/.local/state/picoclaw-guard',
    );
    expect(resolveStateDir('/f', { STATE_DIRECTORY: '/s' }, user(0, true))).toBe('/f');
  });
});

describe('the pins file', () => {
  it('adds, renews and removes pins, per home, written atomically (no temp file left)', () => {
    const dir = join(tempDir(), 'state');
    expect(readPins(dir)).toEqual([]);
    addPin(dir, pin('a'));
    addPin(dir, pin('a', { home: '/other' }));
    addPin(dir, pin('a', { note: 'again' }));
    expect(homePins(dir, '/h')).toEqual([pin('a', { note: 'again' })]);
    expect(removePins(dir, { home: '/h', agent: 'main', key: 'a' })).toEqual([pin('a', { note: 'again' })]);
    expect(removePins(dir, { home: '/h', agent: 'main', key: 'a' })).toEqual([]);
    expect(homePins(dir, '/other')).toHaveLength(1);
    expect(readdirSync(dir)).toEqual(['pins.json']);
  });

  it('any sequence of pins and unpins reads back as the model says', () => {
    const op = fc.record({
      add: fc.boolean(),
      key: fc.constantFrom('a', 'b', 'sk_v1_ü', 'agent:main:x'),
      agent: fc.constantFrom('main', 'other'),
      note: fc.option(fc.string({ maxLength: 20 }), { nil: null }),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const dir = join(tempDir(), 'state');
        const model = new Map<string, Pin>();
        for (const o of ops) {
          const p = pin(o.key, { agent: o.agent, note: o.note });
          const id = `${o.agent}\0${o.key}`;
          if (o.add) {
            addPin(dir, p);
            model.delete(id);
            model.set(id, p);
          } else {
            expect(removePins(dir, p).length).toBe(model.has(id) ? 1 : 0);
            model.delete(id);
          }
          expect(readPins(dir)).toEqual([...model.values()]);
        }
      }),
      { numRuns: 60 },
    );
  });

  // A damaged, odd or unreadable pins file (exit 3) is the state file contract's: test/state/store-contract.test.ts.
  it('drops an entry of the wrong shape and honours the rest', () => {
    const dir = tempDir();
    writeFileSync(
      pinsPath(dir),
      JSON.stringify({ pins: [pin('ok'), { key: 1 }, null, pin('n', { note: 7 as never })] }),
    );
    expect(readPins(dir)).toEqual([pin('ok')]);
  });
});

describe('a pin made while a pass deletes', () => {
  it('keeps a victim the pass planned to delete (the pin made between two deletions)', async () => {
    const { handHome } = await import('../support/home.js');
    const { discoverHome } = await import('../../src/picoclaw/home.js');
    const { buildInventory } = await import('../../src/picoclaw/inventory/inventory.js');
    const { planPrune } = await import('../../src/prune/plan/plan.js');
    const { applyPlan } = await import('../../src/prune/apply/apply.js');
    const { DEFAULT_POLICY } = await import('../../src/prune/policy.js');
    const { keptByPinSince } = await import('../../src/state/pins.js');
    const { NOW, offlineApply } = await import('../support/plan-input.js');
    const { existsSync, realpathSync } = await import('node:fs');
    const root = tempDir();
    const home = join(root, 'home');
    const old = (d: number) => new Date(NOW - d * 86_400_000).toISOString();
    const { sessionsDir } = handHome(
      home,
      [
        { key: 'sk_v1_a', updated: old(90) },
        { key: 'sk_v1_b', updated: old(80) },
        { key: 'sk_v1_c', updated: old(70) },
        { key: 'sk_v1_new', updated: old(0) },
      ],
      { seahorse: false },
    );
    const inv = buildInventory(discoverHome({ home, env: {} }), { skipSeahorse: true });
    const plan = planPrune({
      sessions: inv.sessions,
      orphanConversations: [],
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY, max_age_days: 30, max_sessions: 0, max_db_size_mb: 0 },
      now: NOW,
      db: { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    const state = join(root, 'state');
    const homeReal = realpathSync(home);
    let pinned = false;
    const res = applyPlan(
      offlineApply(plan, null, join(sessionsDir, 'seahorse.db'), {
        keepNow: keptByPinSince(state, homeReal, []),
        // While the first victim goes, the operator pins the last one.
        onStep: () => {
          if (pinned) return;
          pinned = true;
          addPin(state, pin('sk_v1_c', { home: homeReal, note: 'just now' }));
        },
      }),
    );
    const by = (k: string) => res.groups.get(plan.groups.find((g) => g.key === k)!.id)!;
    expect(by('sk_v1_a')).toMatchObject({ action: 'delete' });
    expect(by('sk_v1_b')).toMatchObject({ action: 'delete' });
    expect(by('sk_v1_c')).toMatchObject({ action: 'keep', reason: 'pinned' });
    expect(by('sk_v1_c').detail).toMatch(/sk_v1_c was pinned on .*just now, after this pass planned/);
    expect(existsSync(join(sessionsDir, 'sk_v1_c.jsonl'))).toBe(true);
    expect(existsSync(join(sessionsDir, 'sk_v1_c.meta.json'))).toBe(true);
    // The pins file made unreadable mid-pass: every group not yet deleted is kept.
    const keep = keptByPinSince(state, homeReal, []);
    expect(keep({ members: [{ agent: 'main', key: 'sk_v1_x' }] })).toBeNull();
    writeFileSync(pinsPath(state), '{');
    expect(keep({ members: [{ agent: 'main', key: 'sk_v1_x' }] })).toMatch(/cannot be read now/);
  });
});
