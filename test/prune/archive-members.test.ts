import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultSessionArchivePath } from '../../src/archive/archive.js';
import { readArchiveFiles } from '../../src/archive/read.js';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';
import { handHome, sanitize, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * Each member of an alias group deleted with archiving on is archived on its own; the report must
 * name, for each member, the archive that holds that member (a user restores from what it names),
 * not one archive of the group for all of them.
 */

const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };

/**
 * Keys a member may have. `café-N` and `caf_-N` spell one archive name (the name keeps only
 * [A-Za-z0-9._:@+=-]), so when both are deleted in one pass one of them gets a suffixed name.
 */
const KEYS = [
  'sk_v1_0a',
  'sk_v1_0b',
  'sk_v1_0c',
  'sk_v1_0d',
  'sk_v1_0e',
  'agent:main:telegram:direct:42',
  'agent:main:slack:direct:u7',
  'agent:main:café-1',
  'agent:main:caf_-1',
  'agent:main:café-2',
  'agent:main:caf_-2',
];

interface GroupSpec {
  keys: string[];
  old: boolean;
  /** Per member: a seahorse conversation of its own. */
  seahorse: boolean[];
}

const groupArb: fc.Arbitrary<GroupSpec> = fc
  .uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 })
  .chain((keys) =>
    fc.record({
      keys: fc.constant(keys),
      old: fc.boolean(),
      seahorse: fc.array(fc.boolean(), { minLength: keys.length, maxLength: keys.length }),
    }),
  );

/** Groups whose keys are unique across the home (a key seen in an earlier group is dropped). */
const homeArb = fc
  .record({
    groups: fc.array(groupArb, { minLength: 1, maxLength: 4 }),
    // An archive an earlier pass left at some member's default name (the same folder, home and second).
    decoy: fc.option(fc.constantFrom(...KEYS), { nil: null }),
  })
  .map(({ groups, decoy }) => {
    const seen = new Set<string>();
    const out: GroupSpec[] = [];
    for (const g of groups) {
      const idx = g.keys.map((_, i) => i).filter((i) => !seen.has(g.keys[i]!));
      for (const i of idx) seen.add(g.keys[i]!);
      if (idx.length > 0)
        out.push({ keys: idx.map((i) => g.keys[i]!), old: g.old, seahorse: idx.map((i) => g.seahorse[i]!) });
    }
    return { groups: out, decoy };
  });

function sessionsOf(groups: GroupSpec[]): HandSession[] {
  const out: HandSession[] = [{ key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z' }];
  for (const g of groups)
    g.keys.forEach((key, i) =>
      out.push({
        key,
        updated: g.old ? '2026-08-01T10:00:00Z' : '2026-11-30T10:00:00Z',
        // The first member is the group's canonical session: it names the others as its aliases.
        aliases: i === 0 && g.keys.length > 1 ? g.keys.slice(1) : undefined,
        seahorse: g.seahorse[i] ? [g.old ? '2026-08-01 07:00:00' : '2026-11-30 09:00:00'] : undefined,
      }),
    );
  return out;
}

describe('the report of an archiving pass', () => {
  it('names, for every deleted member of every alias group, an archive that holds that very member', async () => {
    await fc.assert(
      fc.asyncProperty(homeArb, async ({ groups, decoy }) => {
        const home = tempDir();
        const { sessionsDir } = handHome(home, sessionsOf(groups));
        const archive = join(tempDir(), 'archive');
        const before = new Map<string, Buffer>();
        for (const g of groups)
          for (const key of g.keys)
            for (const ext of ['.jsonl', '.meta.json']) {
              const p = join(sessionsDir, `${sanitize(key)}${ext}`);
              before.set(p, readFileSync(p));
            }
        let decoyPath: string | null = null;
        if (decoy !== null) {
          mkdirSync(archive, { recursive: true });
          const place = { dir: archive, homeReal: realpathSync(home), nowMs: NOW.getTime() };
          decoyPath = defaultSessionArchivePath(place, { agent: 'main', base: sanitize(decoy) });
          writeFileSync(decoyPath, 'an earlier archive, not this pass');
        }

        const r = await runPrunePass({
          home,
          env,
          apply: true,
          clock: fixedClock(NOW),
          trustClock: true,
          stateDir: null,
          probe: downGateway,
          flags: { archive_dir: archive },
        });
        expect(r.exit_code).toBe(0);
        const deleted = r.sessions.filter((s) => s.action === 'delete');
        const oldKeys = groups.filter((g) => g.old).flatMap((g) => g.keys);
        expect(deleted.map((s) => s.key).sort()).toEqual([...oldKeys].sort());
        for (const s of r.sessions) if (s.action === 'keep') expect(s.archive).toBeNull();

        // Every deleted member has an archive of its own.
        const paths = deleted.map((s) => s.archive);
        expect(new Set(paths).size).toBe(deleted.length);
        for (const s of deleted) {
          expect(s.archive, `${s.file} has no archive`).not.toBeNull();
          expect(s.archive).not.toBe(decoyPath);
          expect(existsSync(s.archive!)).toBe(true);
          const got: Record<'jsonl' | 'meta', Buffer[]> = { jsonl: [], meta: [] };
          const info = await readArchiveFiles(s.archive!, (role) => ({
            write: (chunk: Buffer) => void got[role].push(Buffer.from(chunk)),
          }));
          // The archive it names is this member's, and holds its two files byte for byte.
          expect({ kind: info.kind, agent: info.agent, base: info.base, key: info.key }).toEqual({
            kind: 'session',
            agent: s.agent,
            base: s.file,
            key: s.key,
          });
          expect(Buffer.concat(got.meta).equals(before.get(join(sessionsDir, `${s.file}.meta.json`))!)).toBe(true);
          expect(Buffer.concat(got.jsonl).equals(before.get(join(sessionsDir, `${s.file}.jsonl`))!)).toBe(true);
        }
      }),
      {
        numRuns: 40,
        examples: [
          // Two members of one group that spell one archive name, and a third whose name an earlier archive holds.
          [
            {
              groups: [
                {
                  keys: ['sk_v1_0a', 'agent:main:café-1', 'agent:main:caf_-1'],
                  old: true,
                  seahorse: [true, false, true],
                },
                { keys: ['sk_v1_0b', 'agent:main:telegram:direct:42'], old: true, seahorse: [false, true] },
              ],
              decoy: 'agent:main:telegram:direct:42',
            },
          ],
        ],
      },
    );
  });
});
