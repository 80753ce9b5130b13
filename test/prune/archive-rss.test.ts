import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

const GNU_TIME = '/usr/bin/time';
const hasTime = existsSync(GNU_TIME) && spawnSync(GNU_TIME, ['-f', '%M', 'true'], { encoding: 'utf8' }).status === 0;

/** Run the CLI under GNU time; peak RSS in MiB from the kernel. */
function measured(args: string[], state: string): { code: number; rssMiB: number; stderr: string } {
  const out = join(state, `time-${Math.random().toString(36).slice(2)}.txt`);
  const r = spawnSync(GNU_TIME, ['-f', '%M', '-o', out, process.execPath, CLI, ...args], {
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
      expect(arch.rssMiB).toBeLessThan(100);
      // The archive's own cost is a few buffers, not the session's size (50 MiB).
      expect(arch.rssMiB - plain.rssMiB).toBeLessThan(25);
      const rest = measured(['restore', archive, '--home', b.home, '--state-dir', state], state);
      expect(rest.code, rest.stderr).toBe(0);
      // Restore streams too (about 70 MiB here), but its stream chunks are garbage-collected when V8
      // decides: a run in ten peaks 15-45 MiB higher. The bound catches a reader that holds the archive
      // whole (the earlier reader: about 490 MiB for this session).
      expect(rest.rssMiB).toBeLessThan(150);
      expect(
        createHash('sha256')
          .update(readFileSync(join(b.sessionsDir, 'sk_v1_big.jsonl')))
          .digest('hex'),
      ).toBe(digest);
      expect(readdirSync(archive)).toHaveLength(1);
    },
  );
});
