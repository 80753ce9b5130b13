import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inspectArchive } from '../../src/archive/read.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';
import { live, prune, world, type World } from '../support/restore-world.js';

interface Entry {
  archive: string;
  key: string;
  action: string;
  reason: string | null;
  messages: number | null;
  complete: boolean | null;
  restored_as: string | null;
  resumed: string | null;
  command: string | null;
  files: string[];
}
const json = (r: { stdout: string; stderr: string }) => {
  try {
    return JSON.parse(r.stdout) as { exit_code: number; entries: Entry[]; totals: Record<string, number> };
  } catch {
    throw new Error(`no JSON: ${r.stderr}${r.stdout}`);
  }
};
const restore = (w: World, args: string[]) =>
  runCli(['restore', ...args, '--home', w.home, '--state-dir', w.state, '--json']);

/** Three archives of one key: a long first life, a short second one, and a meta-only copy of the second. */
async function threeLives() {
  const w = world();
  live(w, 'sk_v1_life', 6, '2026-07-01');
  const [a1] = await prune(w, '2026-11-01T00:00:00Z');
  live(w, 'sk_v1_life', 2, '2026-08-05');
  const [a2] = await prune(w, '2026-11-10T00:00:00Z');
  // What an older release archived after a deletion killed between the .jsonl and the .meta.json.
  live(w, 'sk_v1_life', 2, '2026-08-05', { metaOnly: true });
  const [a3] = await prune(w, '2026-11-20T00:00:00Z');
  return { w, a1: a1!, a2: a2!, a3: a3! };
}

describe('restore: the lives of a key', () => {
  it(
    '--list shows every life; a folder restores the latest complete one and lists the others with the command ' +
      'that restores one; that command restores an earlier life beside the later one under a new key',
    async () => {
      const { w, a1, a2, a3 } = await threeLives();
      const list = runCli(['restore', w.archive, '--list', '--json'], { HOME: '/nowhere' });
      expect(list.code, list.stderr).toBe(0);
      const lives = json(list).entries.map((e) => [e.archive, e.action, e.messages, e.complete]);
      expect(lives).toEqual([
        [a1, 'other_life', 6, true],
        [a2, 'listed', 2, true],
        [a3, 'other_life', 0, false],
      ]);

      const r = restore(w, [w.archive]);
      expect(r.code, r.stderr).toBe(0);
      const e = json(r).entries;
      expect(e.map((x) => [x.archive, x.action])).toEqual([
        [a1, 'other_life'],
        [a2, 'restored'],
        [a3, 'other_life'],
      ]);
      // Never a shorter history in place of a longer one without saying so.
      expect(e[0]!.reason).toMatch(
        /^an earlier life: .*6 messages.*holds more messages than the latest complete life \(2\)/,
      );
      expect(e[2]!.reason).toMatch(/same life as the chosen archive, archived again after an interrupted deletion/);
      expect(e[2]!.reason).toMatch(/incomplete: only its meta/);
      expect(e[0]!.command).toBe(`picoclaw-guard restore ${a1} --home ${w.home} --beside`);
      const text = runCli(['restore', w.archive, '--list', '--home', w.home]);
      expect(text.stdout).toMatch(/other life .*\n[\s\S]*to restore it: picoclaw-guard restore /);
      const meta2 = readFileSync(join(w.sessionsDir, 'sk_v1_life.meta.json'), 'utf8');

      // The first life by name, without --beside: refused, naming the choice; nothing touched.
      const refuse = restore(w, [a1]);
      expect(refuse.code).toBe(7);
      const re = json(refuse).entries[0]!;
      expect(re.action).toBe('skipped');
      expect(re.reason).toMatch(
        /a session already exists there .*not overwritten; to restore this life beside it, under the key sk_v1_life\.restored-20261101T000000Z/,
      );
      expect(re.command).toMatch(/--beside$/);
      expect(readFileSync(join(w.sessionsDir, 'sk_v1_life.meta.json'), 'utf8')).toBe(meta2);

      // With --beside: a new key PicoClaw lists beside the later life, the first life's messages intact.
      const beside = restore(w, [a1, '--beside']);
      expect(beside.code, beside.stderr).toBe(0);
      const be = json(beside).entries[0]!;
      expect(be).toMatchObject({ action: 'restored', restored_as: 'sk_v1_life.restored-20261101T000000Z' });
      const m = JSON.parse(readFileSync(join(w.sessionsDir, 'sk_v1_life.restored-20261101T000000Z.meta.json'), 'utf8'));
      expect(m.key).toBe('sk_v1_life.restored-20261101T000000Z');
      expect(m.aliases).toBeUndefined();
      expect(m.count).toBe(6);
      const lines = readFileSync(join(w.sessionsDir, 'sk_v1_life.restored-20261101T000000Z.jsonl'), 'utf8');
      expect(lines.trim().split('\n')).toHaveLength(6);
      expect(readFileSync(join(w.sessionsDir, 'sk_v1_life.meta.json'), 'utf8')).toBe(meta2);
      // Its hold is under the key it got.
      const holds = JSON.parse(readFileSync(join(w.state, 'restore-holds.json'), 'utf8')).holds as { key: string }[];
      expect(holds.map((h) => h.key).sort()).toEqual(['sk_v1_life', 'sk_v1_life.restored-20261101T000000Z']);
      // Run again: already in place, exit 0.
      const again = restore(w, [a1, '--beside']);
      expect(json(again).entries[0]).toMatchObject({ action: 'restored', resumed: 'already_done' });
    },
  );

  it('a key with only an incomplete life: a folder restores nothing of it (exit 7) and names the command', async () => {
    const w = world();
    live(w, 'sk_v1_half', 4, '2026-07-01', { metaOnly: true });
    const [a] = await prune(w, '2026-11-01T00:00:00Z');
    const r = restore(w, [w.archive]);
    expect(r.code).toBe(7);
    const e = json(r).entries[0]!;
    expect(e).toMatchObject({
      action: 'skipped',
      complete: false,
      command: `picoclaw-guard restore ${a} --home ${w.home}`,
    });
    expect(readdirSync(w.sessionsDir).filter((n) => n.includes('half'))).toEqual([]);
    // By name it is restored as archived, and the report says what it lacks.
    const one = restore(w, [a!]);
    expect(one.code, one.stderr).toBe(0);
    expect(json(one).entries[0]!.reason).toMatch(
      /as archived: .*incomplete: only its meta \(the meta counts 4 messages/,
    );
  });

  it('the choice over generated lives: the latest complete life is restored, every other one is listed', async () => {
    // Each life: messages, and whether the archive is meta-only; lives archived in this order.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ lines: fc.integer({ min: 1, max: 5 }), metaOnly: fc.boolean() }), {
          minLength: 1,
          maxLength: 4,
        }),
        async (spec) => {
          const w = world();
          const archives: string[] = [];
          for (const [i, l] of spec.entries()) {
            live(w, 'sk_v1_gen', l.lines, `2026-07-0${i + 1}`, { metaOnly: l.metaOnly });
            archives.push(...(await prune(w, `2026-11-${String(10 + i).padStart(2, '0')}T00:00:00Z`)));
          }
          const infos = await Promise.all(archives.map((a) => inspectArchive(a)));
          expect(infos.map((i) => i.life.complete)).toEqual(spec.map((l) => !l.metaOnly));
          const r = restore(w, [w.archive]);
          const e = json(r).entries;
          const want = spec.map((l) => !l.metaOnly).lastIndexOf(true);
          expect(e.filter((x) => x.action === 'restored').map((x) => x.archive)).toEqual(
            want < 0 ? [] : [archives[want]],
          );
          expect(e.filter((x) => x.action === 'other_life')).toHaveLength(want < 0 ? spec.length - 1 : spec.length - 1);
          expect(r.code).toBe(want < 0 ? 7 : 0);
          if (want >= 0) {
            const lines = readFileSync(join(w.sessionsDir, 'sk_v1_gen.jsonl'), 'utf8').trim().split('\n');
            expect(lines).toHaveLength(spec[want]!.lines);
          }
        },
      ),
      { numRuns: 8 },
    );
  }, 120_000);
});

describe('restore: nothing in an archive folder can block it', () => {
  it('a FIFO, a device and a symlink to a FIFO named as archives are skipped with their type', () => {
    const w = world();
    mkdirSync(w.archive, { recursive: true });
    const fifo = join(w.archive, 'a-fifo.tar.gz');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    symlinkSync(fifo, join(w.archive, 'b-link-to-fifo.tar.gz'));
    symlinkSync('/dev/zero', join(w.archive, 'c-zero.session.json.gz'));
    mkdirSync(join(w.archive, 'd-folder.tar.gz'));
    writeFileSync(join(w.archive, 'e-junk.tar.gz'), 'junk');
    // A hang would end at spawnSync's timeout: the run must end long before it.
    const opts = { timeout: 30_000 };
    const all = spawnSync(process.execPath, [], opts); // warm-up: the timeout option is honoured
    expect(all.status).toBe(0);
    for (const args of [
      [w.archive, '--home', w.home],
      [w.archive, '--list'],
      [fifo, '--home', w.home],
      [join(w.archive, 'b-link-to-fifo.tar.gz'), '--list'],
      [join(w.archive, 'c-zero.session.json.gz'), '--list'],
    ]) {
      const r = runCli(['restore', ...args, '--state-dir', w.state, '--json'], { HOME: '/nowhere' });
      expect(r.signal, args.join(' ')).toBeNull();
      if (args[0] === w.archive) {
        expect(r.code).toBe(7);
        const e = json(r).entries;
        expect(e.map((x) => [x.action, x.reason])).toEqual([
          ['invalid', 'the archive is a FIFO (named pipe), not an archive file: not read'],
          ['invalid', 'the archive is a FIFO (named pipe), not an archive file: not read'],
          ['invalid', 'the archive is a character device, not an archive file: not read'],
          ['invalid', 'the archive is a folder, not an archive file: not read'],
          ['invalid', expect.stringMatching(/is not a readable \.tar\.gz/)],
        ]);
      } else {
        expect(r.code).toBe(3);
        expect(r.stderr).toMatch(/is (a FIFO \(named pipe\)|a character device), not an archive file: not read/);
      }
    }
  });
});

void tempDir;
