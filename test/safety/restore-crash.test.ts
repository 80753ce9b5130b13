import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESTORE_STEPS, RESTORE_TMP_PREFIX } from '../../src/archive/restore-write.js';
import { assertBuilt, runCli } from '../support/cli.js';
import { repoRoot } from '../support/crash.js';
import { live, prune, sessionFiles, world, type World } from '../support/restore-world.js';

/**
 * A restore killed (SIGKILL) at every step of its writing, then run again, finishes: the
 * sessions folder ends exactly as an uninterrupted restore leaves it, with no temp file and the
 * hold recorded. The kill is exact: dev/restore-kill.ts runs the real restore and kills itself
 * from its step hook. Between the kill and the rerun, the state PicoClaw could see is checked: a
 * listed session (a .meta.json) always has its whole .jsonl (the meta is linked last).
 */
const KILL = join(repoRoot(), 'dist', 'dev', 'restore-kill.js');

interface Shape {
  name: string;
  /** Builds the world; returns the path restore is given and its extra flags. */
  build: () => Promise<{ w: World; path: string; flags: string[] }>;
  /** Occurrences of each step (a folder writes several sessions). */
  nth: number[];
}

const SHAPES: Shape[] = [
  {
    name: 'one archive into an empty slot',
    build: async () => {
      const w = world();
      live(w, 'sk_v1_one', 5, '2026-07-01');
      const [a] = await prune(w, '2026-11-01T00:00:00Z');
      return { w, path: a!, flags: [] };
    },
    nth: [1],
  },
  {
    name: 'an earlier life beside a later one (--beside)',
    build: async () => {
      const w = world();
      live(w, 'sk_v1_two', 4, '2026-07-01');
      const [a] = await prune(w, '2026-11-01T00:00:00Z');
      live(w, 'sk_v1_two', 1, '2026-10-30');
      return { w, path: a!, flags: ['--beside'] };
    },
    nth: [1],
  },
  {
    name: 'a folder of two keys and two lives of one',
    build: async () => {
      const w = world();
      live(w, 'sk_v1_a', 3, '2026-07-01');
      live(w, 'sk_v1_b', 2, '2026-07-02');
      await prune(w, '2026-11-01T00:00:00Z');
      live(w, 'sk_v1_a', 1, '2026-08-01');
      await prune(w, '2026-11-10T00:00:00Z');
      return { w, path: w.archive, flags: [] };
    },
    nth: [1, 2],
  },
];

function check(w: World, when: string): string[] {
  const bad: string[] = [];
  const names = readdirSync(w.sessionsDir);
  for (const n of names) {
    if (!n.endsWith('.meta.json')) continue;
    const jsonl = n.replace(/\.meta\.json$/, '.jsonl');
    const m = JSON.parse(readFileSync(join(w.sessionsDir, n), 'utf8')) as { count: number };
    const lines = existsSync(join(w.sessionsDir, jsonl))
      ? readFileSync(join(w.sessionsDir, jsonl), 'utf8').split('\n').filter(Boolean).length
      : 0;
    if (lines !== m.count) bad.push(`${when}: ${n} is listed with ${lines} of its ${m.count} messages`);
  }
  return bad;
}

describe('restore killed at every step', () => {
  for (const shape of SHAPES) {
    it(`${shape.name}: rerun finishes, exactly as an uninterrupted restore`, async () => {
      assertBuilt();
      const ref = await shape.build();
      const r0 = runCli(['restore', ref.path, ...ref.flags, '--home', ref.w.home, '--state-dir', ref.w.state]);
      expect(r0.code, r0.stderr + r0.stdout).toBe(0);
      const want = sessionFiles(ref.w.sessionsDir);
      const kills: string[] = [];
      const failures: string[] = [];
      for (const step of RESTORE_STEPS) {
        for (const n of shape.nth) {
          const { w, path, flags } = await shape.build();
          const k = spawnSync(process.execPath, [KILL, `${step}#${n}`, path, w.home, w.state, ...flags], {
            encoding: 'utf8',
            timeout: 60_000,
          });
          const at = `${step}#${n}`;
          if (k.signal !== 'SIGKILL') {
            // The step never came (a folder's second session has no second 'holds').
            expect(k.status, `${at}: ${k.stderr}`).toBe(0);
            continue;
          }
          kills.push(at);
          failures.push(...check(w, `after a kill at ${at}`));
          const r = runCli(['restore', path, ...flags, '--home', w.home, '--state-dir', w.state, '--json']);
          if (r.code !== 0) failures.push(`rerun after ${at} exited ${r.code}: ${r.stderr}${r.stdout.slice(0, 600)}`);
          const got = sessionFiles(w.sessionsDir);
          if (JSON.stringify([...got]) !== JSON.stringify([...want]))
            failures.push(`after ${at} and a rerun: ${JSON.stringify([...got])} != ${JSON.stringify([...want])}`);
          if (readdirSync(w.sessionsDir).some((x) => x.startsWith(RESTORE_TMP_PREFIX)))
            failures.push(`after ${at} and a rerun: temp files remain`);
          const holds = JSON.parse(readFileSync(join(w.state, 'restore-holds.json'), 'utf8')).holds as unknown[];
          if (holds.length === 0) failures.push(`after ${at} and a rerun: no hold`);
        }
      }
      expect(failures).toEqual([]);
      // Every step was reached and killed at least once.
      expect(new Set(kills.map((k) => k.split('#')[0]))).toEqual(new Set(RESTORE_STEPS));
    }, 240_000);
  }
});
