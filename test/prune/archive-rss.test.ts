import { spawnSync } from 'node:child_process';
import {
  closeSync,
  createWriteStream,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeSync,
} from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { handHome } from '../support/home.js';

/** Node 22 or later: a higher resident floor than Node 20, the Node of the boards (README). */
const LATER_NODE = Number(process.versions.node.split('.')[0]) > 20;
import { tempDir } from '../support/tmp.js';

const GNU_TIME = '/usr/bin/time';
const hasTime = existsSync(GNU_TIME) && spawnSync(GNU_TIME, ['-f', '%M', 'true'], { encoding: 'utf8' }).status === 0;

/** Run the CLI under GNU time; peak RSS in MiB from the kernel. */
function measured(args: string[], state: string): { code: number; rssMiB: number; stderr: string } {
  const out = join(state, `time-${Math.random().toString(36).slice(2)}.txt`);
  const r = spawnSync(GNU_TIME, ['-f', '%M', '-o', out, process.execPath, '--expose-gc', CLI, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG, STATE_DIRECTORY: state },
    timeout: 300_000,
  });
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  return { code: r.status ?? -1, rssMiB: Number(lines[lines.length - 1]) / 1024, stderr: r.stderr };
}

describe('archive memory', () => {
  // Peak RSS is the kernel's figure for the child (not a clock): it does not depend on the machine's load.
  it.skipIf(!hasTime)(
    'archives a 50 MB session within 100 MiB, a few MiB above the same pass ' +
      'without archive, and restores it byte for byte',
    () => {
      const root = tempDir();
      const build = (name: string) => {
        const home = join(root, name);
        const { sessionsDir } = handHome(home, [
          { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] },
          {
            key: 'sk_v1_big',
            updated: '2026-08-01T10:00:00Z',
            seahorse: Array.from({ length: 200 }, () => '2026-08-01 07:00:00'),
          },
        ]);
        const fd = openSync(join(sessionsDir, 'sk_v1_big.jsonl'), 'w');
        const pad = 'y'.repeat(64 * 1024);
        for (let i = 0; i < 800; i++)
          writeSync(
            fd,
            JSON.stringify({ role: 'tool', content: `${i} ${pad}`, created_at: '2026-08-01T10:00:00Z' }) + '\n',
          );
        closeSync(fd);
        return { home, sessionsDir };
      };
      const a = build('plain');
      const b = build('archived');
      const digest = createHash('sha256')
        .update(readFileSync(join(b.sessionsDir, 'sk_v1_big.jsonl')))
        .digest('hex');
      const state = tempDir();
      const args = (home: string) => [
        'prune',
        '--apply',
        '--home',
        home,
        '--max-age-days',
        '30',
        '--max-sessions',
        '0',
        '--max-db-size-mb',
        '0',
        '--no-vacuum',
        '--json',
      ];
      const plain = measured(args(a.home), state);
      expect(plain.code, plain.stderr).toBe(0);
      const archive = join(root, 'archive');
      const arch = measured([...args(b.home), '--archive', archive], state);
      expect(arch.code, arch.stderr).toBe(0);
      expect(existsSync(join(b.sessionsDir, 'sk_v1_big.jsonl'))).toBe(false);
      // A prune --apply runs its pass in a worker thread (signals stop it between two sessions): about 11 MiB
      // more at the peak than a pass on the main thread (BENCHMARKS.md), and Node 24's floor is higher than 20's.
      expect(arch.rssMiB).toBeLessThan(LATER_NODE ? 125 : 115);
      // The archive's own cost is a few buffers, not the session's size (50 MiB).
      expect(arch.rssMiB - plain.rssMiB).toBeLessThan(25);
      const rest = measured(['restore', archive, '--home', b.home, '--state-dir', state], state);
      console.info(`restore of a 50 MB session's .tar.gz: peak ${rest.rssMiB.toFixed(1)} MiB`);
      expect(rest.code, rest.stderr).toBe(0);
      // Restore streams too, each piece written as it is read (73.1-74.1 MiB in nine runs): the bound of
      // every restore (docs/restore.md) on Node 20, the boards' Node; a later Node starts higher. The earlier
      // reader held the archive whole (about 490 MiB here).
      expect(rest.rssMiB).toBeLessThan(LATER_NODE ? 115 : 100);
      expect(
        createHash('sha256')
          .update(readFileSync(join(b.sessionsDir, 'sk_v1_big.jsonl')))
          .digest('hex'),
      ).toBe(digest);
      expect(readdirSync(archive)).toHaveLength(1);
    },
  );

  /**
   * An archive of the earlier single-gzip format (one JSON document, the files base64-encoded) that
   * expands to over 200 MiB from a few hundred KiB: the earlier reader parsed it whole (1.2 GiB peak).
   * Restore streams it (./archive-legacy.ts): its peak stays under 100 MiB, and the .jsonl comes
   * back byte for byte.
   */
  it.skipIf(!hasTime)(
    'restores a version-1 archive of a few hundred KiB that expands to 200 MiB within 100 MiB peak RSS',
    async () => {
      const root = tempDir();
      const home = join(root, 'home');
      const { sessionsDir } = handHome(home, [{ key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z' }]);
      // 6,402 lines of 24,570 bytes (a multiple of 3: each line's base64 stands alone).
      const pad = 'a'.repeat(24_570 - 64);
      const line = Buffer.from(`${JSON.stringify({ role: 'tool', content: pad }).slice(0, -1)}`);
      const one = Buffer.concat([line, Buffer.alloc(24_570 - line.length - 2, 'b'), Buffer.from('}\n')]);
      expect(one.length).toBe(24_570);
      const LINES = 6_402;
      const h = createHash('sha256');
      for (let i = 0; i < LINES; i++) h.update(one);
      const jsonlSha = h.digest('hex');
      const meta = Buffer.from(JSON.stringify({ key: 'sk_v1_big', summary: '', skip: 0, count: LINES }, null, 2));
      const head =
        JSON.stringify({
          format: 'picoclaw-guard-session-archive',
          version: 1,
          archived_at: '2026-09-01T00:00:00.000Z',
          agent: 'main',
          sessions_dir: sessionsDir,
          base: 'sk_v1_big',
          key: 'sk_v1_big',
          aliases: [],
        }).slice(0, -1) +
        `,"files":{"meta":{"name":"sk_v1_big.meta.json","sha256":"${createHash('sha256').update(meta).digest('hex')}",` +
        `"data_base64":"${meta.toString('base64')}"},"jsonl":{"name":"sk_v1_big.jsonl","sha256":"${jsonlSha}","data_base64":"`;
      const archive = join(root, 'archive');
      const file = join(archive, '20260901T000000Z_main_sk_v1_big.session.json.gz');
      const { mkdirSync } = await import('node:fs');
      mkdirSync(archive);
      let expanded = 0;
      const b64 = one.toString('base64');
      await pipeline(
        Readable.from(
          (function* () {
            for (const piece of [head, ...Array<string>(LINES).fill(b64), '"}},"seahorse":null}']) {
              expanded += piece.length;
              yield Buffer.from(piece);
            }
          })(),
        ),
        createGzip({ level: 9 }),
        createWriteStream(file),
      );
      const gz = statSync(file).size;
      expect(expanded).toBeGreaterThan(200 * 2 ** 20);
      expect(gz).toBeLessThan(1 << 20);
      const state = tempDir();
      const rest = measured(['restore', file, '--home', home, '--state-dir', state, '--json'], state);
      console.info(
        `restore of a version-1 archive: ${gz} bytes, expands to ${expanded}: peak ${rest.rssMiB.toFixed(1)} MiB`,
      );
      expect(rest.code, rest.stderr).toBe(0);
      expect(rest.rssMiB).toBeLessThan(LATER_NODE ? 115 : 100);
      expect(
        createHash('sha256')
          .update(readFileSync(join(sessionsDir, 'sk_v1_big.jsonl')))
          .digest('hex'),
      ).toBe(jsonlSha);
    },
    300_000,
  );
});
