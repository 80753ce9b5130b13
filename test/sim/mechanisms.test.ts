import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { parseMeta } from '../../src/picoclaw/inventory/sessions.js';
import { runPrunePass, type PassOptions } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';
import { handHome, sanitize, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * Three mechanisms (what counts toward max_sessions, the clock, group membership mid-pass): each with its
 * example and a generator of other shapes.
 * Every case here fails on the code before the fix (the simulation, test/safety/simulation.test.ts,
 * tries them with the rest).
 */
const NOW = new Date('2026-11-30T12:00:00Z');
const DAY = 86_400_000;
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const pass = (home: string, apply: boolean, flags: Record<string, unknown>, extra: Partial<PassOptions> = {}) =>
  runPrunePass({ home, env, apply, clock: fixedClock(NOW), stateDir: null, probe: downGateway, flags, ...extra });

/** n sessions, one an hour apart before NOW, their files' times their activity (as PicoClaw leaves them). */
function recent(n: number, prefix = 'sk_v1_s', gapMs = 3_600_000, from = NOW.getTime()): HandSession[] {
  return Array.from({ length: n }, (_, i) => ({
    key: `${prefix}${String(i).padStart(3, '0')}`,
    updated: new Date(from - (i + 1) * gapMs).toISOString(),
  }));
}

function touchAsWritten(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.meta.json')) continue;
    const m = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { updated_at?: string };
    const t = Date.parse(m.updated_at ?? '');
    if (!Number.isFinite(t) || t < Date.UTC(2024, 0, 1)) continue;
    for (const f of [name, name.replace(/\.meta\.json$/, '.jsonl')])
      if (existsSync(join(dir, f))) utimesSync(join(dir, f), t / 1000, t / 1000);
  }
}

const metasLeft = (dir: string, prefix: string) =>
  readdirSync(dir).filter((n) => n.startsWith(prefix) && n.endsWith('.meta.json')).length;

/** Shapes of valid JSON that Go's decoder rejects for PicoClaw's SessionMeta (pkg/memory/jsonl.go:43-52). */
const WRONG_TYPES: ((key: string) => string)[] = [
  (k) => JSON.stringify({ key: k, count: '3' }),
  (k) => JSON.stringify({ key: k, skip: true }),
  (k) => `{"key": ${JSON.stringify(k)}, "count": 2.0}`,
  (k) => `{"key": ${JSON.stringify(k)}, "skip": 1e2}`,
  (k) => JSON.stringify({ key: k, count: 2 ** 64 }),
  (k) => JSON.stringify({ key: k, updated_at: 'yesterday' }),
  (k) => JSON.stringify({ key: k, created_at: '2026-11-30t10:00:00z' }),
  (k) => JSON.stringify({ key: k, updated_at: '2026-11-30T10:00:60Z' }),
  (k) => JSON.stringify({ key: k, updated_at: 1764496800 }),
  (k) => JSON.stringify({ key: k, aliases: [7] }),
  (k) => JSON.stringify({ key: k, aliases: 'agent:main:x' }),
  (k) => JSON.stringify({ key: k, summary: {} }),
  (k) => JSON.stringify({ KEY: 12, key: k }),
  (k) => JSON.stringify({ key: k, Count: '1' }),
  (k) => JSON.stringify([{ key: k }]),
];

describe('mechanism 1: what counts is what PicoClaw lists, once', () => {
  it("a meta Go's decoder rejects is no session: every wrong-type shape is kept and pushes nobody out", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(
          WRONG_TYPES.map((_, i) => i),
          { minLength: 1 },
        ),
        fc.integer({ min: 3, max: 12 }),
        async (which, n) => {
          const home = tempDir();
          const { sessionsDir } = handHome(home, recent(n), { seahorse: false });
          for (const i of which) {
            const key = `agent:main:wrong:${i}`;
            writeFileSync(join(sessionsDir, `${sanitize(key)}.meta.json`), WRONG_TYPES[i]!(key));
            writeFileSync(join(sessionsDir, `${sanitize(key)}.jsonl`), '{"role":"user","content":"x"}\n');
          }
          const r = await pass(home, true, { max_sessions: n, max_age_days: 0 });
          expect(r.totals.deleted_sessions).toBe(0);
          for (const i of which)
            expect(r.sessions.find((s) => s.file === sanitize(`agent:main:wrong:${i}`))).toMatchObject({
              action: 'keep',
              reason: 'unreadable_meta',
              issues: ['meta_wrong_type'],
            });
          expect(metasLeft(sessionsDir, 'agent_main_wrong_')).toBe(which.length);
        },
      ),
      { numRuns: 5, seed: 26 },
    );
  });

  it("Go's rules, not JavaScript's: a key matched case-insensitively, null fields, unknown keys are a session", () => {
    const ok = (text: string) => parseMeta(Buffer.from(text));
    expect(ok('{"KEY": "sk_v1_a", "count": null, "extra": [1]}')).toMatchObject({
      meta: { key: 'sk_v1_a' },
      issue: null,
    });
    expect(ok('{"\u212aey": "sk_v1_k"}').meta?.key).toBe('sk_v1_k');
    expect(ok('{"key": "sk_v1_a", "updated_at": "2026-11-30T10:00:00.123456789+02:00"}').issue).toBeNull();
    expect(ok('{"key": "sk_v1_a", "count": -0}').issue).toBeNull();
    expect(ok('null').issue).toBe('meta_no_key');
    for (const [i, w] of WRONG_TYPES.entries()) expect(ok(w(`k${i}`)).issue, w(`k${i}`)).toBe('meta_wrong_type');
  });

  it('a FIFO or a device in place of a .jsonl is not "jsonl missing": kept, not counted', async () => {
    for (const kind of ['fifo', 'device'] as const) {
      if (kind === 'device' && process.getuid?.() !== 0) continue; // mknod needs root
      const home = tempDir();
      const { sessionsDir } = handHome(home, recent(11), { seahorse: false });
      for (let i = 0; i < 10; i++) {
        const base = `sk_v1_odd${kind}${i}`;
        writeFileSync(
          join(sessionsDir, `${base}.meta.json`),
          JSON.stringify({ key: base, count: 1, updated_at: new Date(NOW.getTime() - 60_000).toISOString() }),
        );
        if (kind === 'fifo') execFileSync('mkfifo', [join(sessionsDir, `${base}.jsonl`)]);
        else execFileSync('mknod', [join(sessionsDir, `${base}.jsonl`), 'c', '1', '3']);
      }
      const r = await pass(home, true, { max_sessions: 10, max_age_days: 0 });
      // One real session over the cap: the oldest goes, and only it.
      expect(r.sessions.filter((s) => s.action === 'delete').map((s) => s.key)).toEqual(['sk_v1_s010']);
      expect(r.sessions.filter((s) => s.reason === 'not_regular_file')).toHaveLength(10);
      expect(r.sessions.find((s) => s.key === `sk_v1_odd${kind}0`)!.issues).toContain('jsonl_not_regular_file');
    }
  });

  it('max_sessions counts sessions: 30 in 28 groups, a cap of 25, leave 25 (whole groups, oldest first)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 4, max: 30 }),
        fc.array(fc.nat(29), { maxLength: 6 }),
        fc.integer({ min: 1, max: 29 }),
        async (n, pairs, capRaw) => {
          const cap = Math.min(capRaw, n - 1);
          const sessions = recent(n);
          // Session j lists session j+1 (older) as its alias: a group of two, dated by the newer.
          const inGroup = new Set<number>();
          for (const p of pairs) {
            const j = p % (n - 1);
            if (inGroup.has(j) || inGroup.has(j + 1)) continue;
            inGroup.add(j).add(j + 1);
            sessions[j] = { ...sessions[j]!, aliases: [sessions[j + 1]!.key] };
          }
          const home = tempDir();
          const { sessionsDir } = handHome(home, sessions, { seahorse: false });
          const r = await pass(home, true, { max_sessions: cap, max_age_days: 0 });
          const left = metasLeft(sessionsDir, 'sk_v1_s');
          // Within the cap, and no group more than needed: the last group deleted took the count across it.
          expect(left).toBeLessThanOrEqual(cap);
          expect(left).toBeGreaterThanOrEqual(cap - 1);
          expect(left + r.totals.deleted_sessions).toBe(n);
          if (left < cap) expect(r.sessions.some((s) => /below max_sessions=/.test(s.detail ?? ''))).toBe(true);
        },
      ),
      { numRuns: 8, seed: 2026 },
    );
    // The issue's shape.
    const home = tempDir();
    const s = recent(30);
    s[3] = { ...s[3]!, aliases: [s[4]!.key] };
    s[10] = { ...s[10]!, aliases: [s[11]!.key] };
    const { sessionsDir } = handHome(home, s, { seahorse: false });
    await pass(home, true, { max_sessions: 25, max_age_days: 0 });
    expect(metasLeft(sessionsDir, 'sk_v1_s')).toBe(25);
  });
});

describe('mechanism 3: a clock that cannot be trusted deletes nothing by age', () => {
  it('a clock years ahead, sessions written under it, deletes nothing by age; --trust-clock does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 3, max: 40 }),
        fc.integer({ min: 1, max: 6 }),
        async (underBadClock, beforeRaw, years) => {
          // As many sessions from before the jump as were written under it, or more: with more written under
          // the bad clock than before it, a single CLI pass cannot tell a jump from a long silence (the
          // daemon's monotonic clock does: docs/bad-input.md#the-clock).
          const before = Math.max(beforeRaw, underBadClock);
          const ahead = new Date(NOW.getTime() + years * 365 * DAY);
          const home = tempDir();
          const { sessionsDir } = handHome(
            home,
            [
              ...recent(underBadClock, 'sk_v1_new', 3_600_000, ahead.getTime()),
              ...recent(before, 'sk_v1_old', 3_600_000),
            ],
            { seahorse: false },
          );
          touchAsWritten(sessionsDir);
          const clock = fixedClock(ahead);
          const r = await runPrunePass({ home, env, apply: true, clock, stateDir: null, probe: downGateway });
          expect(r.age_check).toBe('refused_clock');
          expect(r.totals.deleted_sessions).toBe(0);
          expect(r.warnings.some((w) => w.startsWith('the clock cannot be trusted'))).toBe(true);
          // The daemon's way: the pass after the jump skips, the next one must still refuse.
          const skip = 'the wall clock jumped ahead';
          const r1 = await runPrunePass({
            home,
            env,
            apply: true,
            clock,
            stateDir: null,
            probe: downGateway,
            skipAgeCheck: skip,
          });
          const r2 = await runPrunePass({ home, env, apply: true, clock, stateDir: null, probe: downGateway });
          expect(r1.totals.deleted_sessions + r2.totals.deleted_sessions).toBe(0);
          expect(metasLeft(sessionsDir, 'sk_v1_')).toBe(underBadClock + before);
          const t = await runPrunePass({
            home,
            env,
            apply: true,
            clock,
            stateDir: null,
            probe: downGateway,
            trustClock: true,
          });
          expect(t.age_check).toBe('applied');
          expect(t.totals.deleted_sessions).toBe(before);
        },
      ),
      { numRuns: 4, seed: 5 },
    );
  });

  it("the sessions' times disagree with the disk (the newest write far newer than the newest activity)", async () => {
    const home = tempDir();
    // Ten sessions whose recorded times lag a year behind: a clock that was a year behind when they were written.
    const lag = NOW.getTime() - 365 * DAY;
    const { sessionsDir } = handHome(home, recent(10, 'sk_v1_lag', 86_400_000, lag), { seahorse: false });
    // Their files were written just now (mtimes are the real clock's).
    const r = await pass(home, true, { max_age_days: 30 });
    expect(r.age_check).toBe('refused_clock');
    expect(r.clock_doubts.some((d) => d.includes('older than the newest write on disk'))).toBe(true);
    expect(metasLeft(sessionsDir, 'sk_v1_lag')).toBe(10);
  });

  it('an ordinary daily pass is not doubted: a few sessions past the line go', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, recent(40, 'sk_v1_d', 86_400_000), { seahorse: false });
    touchAsWritten(sessionsDir);
    const r = await pass(home, true, { max_age_days: 30 });
    expect(r.age_check).toBe('applied');
    expect(r.totals.deleted_sessions).toBe(10);
  });
});

describe('mechanism 4: group membership is re-read before each irreversible step', () => {
  it('a kept session gaining an alias mid-pass (temp + rename) takes it out of the deletion, at any step', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('seahorse', 'jsonl', 'meta'),
        fc.integer({ min: 0, max: 3 }),
        async (step, victimIndex) => {
          const home = tempDir();
          const victims = Array.from({ length: 4 }, (_, i) => ({
            key: `agent:main:telegram:direct:${100 + i}`,
            updated: new Date(NOW.getTime() - (60 + i) * DAY).toISOString(),
            seahorse: [new Date(NOW.getTime() - (60 + i) * DAY).toISOString().slice(0, 19).replace('T', ' ')],
          }));
          const kept = { key: 'sk_v1_kept', updated: new Date(NOW.getTime() - 3_600_000).toISOString() };
          const { sessionsDir } = handHome(home, [kept, ...victims]);
          touchAsWritten(sessionsDir);
          const target = victims[victimIndex]!.key;
          let done = false;
          const r = await pass(
            home,
            true,
            { max_age_days: 30 },
            {
              trustClock: true,
              onStep: (st, s) => {
                if (done || st !== step || s.key !== target) return;
                done = true;
                const metaPath = join(sessionsDir, 'sk_v1_kept.meta.json');
                const m = JSON.parse(readFileSync(metaPath, 'utf8')) as { aliases?: string[] };
                m.aliases = [...(m.aliases ?? []), target];
                const tmp = join(sessionsDir, `.tmp-1-${Date.now()}`);
                writeFileSync(tmp, JSON.stringify(m, null, 2));
                renameSync(tmp, metaPath);
              },
            },
          );
          expect(done).toBe(true);
          const e = r.sessions.find((s) => s.key === target)!;
          expect(e).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
          expect(e.detail).toMatch(/now names/);
          // Its meta is never deleted after the alias came (the .jsonl may have gone at the step before).
          expect(existsSync(join(sessionsDir, `${sanitize(target)}.meta.json`))).toBe(true);
          if (step === 'seahorse') expect(existsSync(join(sessionsDir, `${sanitize(target)}.jsonl`))).toBe(true);
          // The other victims still go.
          expect(r.totals.deleted_sessions).toBe(3);
        },
      ),
      { numRuns: 6, seed: 4 },
    );
  });
});
