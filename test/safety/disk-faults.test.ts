import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, openSync, readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GuardError } from '../../src/errors.js';
import { fixedClock } from '../../src/io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../../src/io/freespace.js';
import { sqlite } from '../../src/io/sqlite.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { CLI, NO_GUARD_CONFIG, assertBuilt } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';
import { addConversation, handHome, snapshot, type HandSession } from '../support/home.js';
import { requireRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * a damaged or full disk stops the pass before harm, with a clear end.
 *
 * Invariants:
 * - damaged: whenever SQLite's own quick_check finds seahorse.db damaged, `prune --apply` deletes
 *   nothing anywhere (files and database byte-identical) and ends with exit 3 and one line naming the
 *   file; on main a damaged page deleted the sessions before it, then crashed with a stack. The
 *   generator damages one page of a real seahorse.db (any page, any offset, any bytes).
 * - full: a disk that fills at any step (the archive, the state folder, the database's own file
 *   system during the deletions or the VACUUM) ends the pass with its JSON report, exit 9, no stack,
 *   and every session the plan keeps is byte-identical. The tmpfs mounts need root (mount -t tmpfs);
 *   without it those cases are skipped, saying so.
 */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const DAY = 86_400_000;

/** n sessions a day apart, the oldest n - keep older than 30 days, each with seahorse rows of `bytes` text. */
function home(dir: string, n: number, keep: number, bytes = 2000): { home: string; dbPath: string } {
  const sessions: HandSession[] = [];
  for (let i = 0; i < n; i++) {
    const age = i < keep ? i + 1 : 40 + i;
    sessions.push({
      key: `sk_v1_s${String(i).padStart(3, '0')}`,
      updated: new Date(NOW.getTime() - age * DAY).toISOString(),
    });
  }
  const { dbPath } = handHome(dir, sessions);
  const db = new (sqlite())(dbPath);
  db.transaction(() => {
    sessions.forEach((s) =>
      addConversation(db, s.key, Array(4).fill(s.updated!.slice(0, 19).replace('T', ' ')), { contentBytes: bytes }),
    );
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { home: dir, dbPath };
}

function treeBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += Math.ceil(statSync(join(e.parentPath, e.name)).size / 4096) * 4096;
  return n;
}

function quickCheckOf(path: string): string {
  try {
    const db = new (sqlite())(path, { readonly: true });
    try {
      // As the pass reads it (src/prune/pass-seahorse.ts quickCheck): a finding about an FTS5 index alone is no
      // damaged page (the index disagrees with its content table; the b-trees are sound).
      const lines = (db.pragma('quick_check(100)') as { quick_check: string }[]).flatMap((r) =>
        r.quick_check.split('\n'),
      );
      const page = lines.find(
        (l) => l.trim() !== '' && l !== 'ok' && !l.startsWith('***') && !/^fts5:/i.test(l.trim()),
      );
      return page ?? 'ok';
    } finally {
      db.close();
    }
  } catch (err) {
    return `error ${String(err)}`;
  }
}

describe('a damaged or full disk stops the pass before harm', () => {
  it('property: a damaged page that quick_check sees deletes nothing, exit 3, no stack', async () => {
    const pristine = home(join(tempDir('pcg-corrupt-'), 'home'), 30, 5);
    const pageSize = 4096;
    const pages = Math.floor(statSync(pristine.dbPath).size / pageSize);
    let damagedRuns = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: pages }),
        fc.integer({ min: 0, max: pageSize - 1 }),
        fc.uint8Array({ minLength: 1, maxLength: 512 }),
        async (page, offset, garbage) => {
          const h = join(tempDir('pcg-corrupt-run-'), 'home');
          cpSync(pristine.home, h, { recursive: true });
          const dbPath = join(h, 'workspace', 'sessions', 'seahorse.db');
          const fd = openSync(dbPath, 'r+');
          writeSync(fd, Buffer.from(garbage), 0, garbage.length, (page - 1) * pageSize + offset);
          closeSync(fd);
          const damaged = quickCheckOf(dbPath) !== 'ok';
          // The lock file and SQLite's -wal/-shm come and go with any open; the data is the rest.
          const data = (p: string) => /\.picoclaw-guard\.lock|-wal$|-shm$/.test(p);
          const before = snapshot(h, data);
          let exit: number;
          try {
            const r = await runPrunePass({
              home: h,
              env,
              apply: true,
              clock: fixedClock(NOW),
              stateDir: null,
              probe: downGateway,
              flags: { max_age_days: 30, max_sessions: 0, max_db_size_mb: 0 },
            });
            exit = r.exit_code;
          } catch (err) {
            // Anything but a GuardError is a stack on the user's terminal.
            if (!(err instanceof GuardError)) throw err;
            exit = err.exitCode;
          }
          if (damaged) {
            damagedRuns++;
            expect(exit).toBe(3);
            const after = snapshot(h, data);
            expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
            for (const [p, v] of before) expect(after.get(p), p).toBe(v);
          } else expect([0, 3, 7]).toContain(exit);
        },
      ),
      { numRuns: 40, seed: 2606 },
    );
    // The property is worth something only if it damaged the database often.
    expect(damagedRuns).toBeGreaterThan(5);
  }, 120_000);

  it('a damaged messages page: exit 3, one line, all 30 sessions still there (main deleted 25, then crashed)', () => {
    assertBuilt();
    const h = home(join(tempDir('pcg-corrupt-cli-'), 'home'), 30, 5);
    // The first leaf page of messages holds the kept sessions' rows (written first): the deletions
    // never read it, the VACUUM after them does.
    const probe = new (sqlite())(h.dbPath, { readonly: true });
    const { pageno } = probe
      .prepare(`SELECT MIN(pageno) AS pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf'`)
      .get() as { pageno: number };
    probe.close();
    const fd = openSync(h.dbPath, 'r+');
    writeSync(fd, Buffer.alloc(2048, 0xa5), 0, 2048, (pageno - 1) * 4096 + 1024);
    closeSync(fd);
    expect(quickCheckOf(h.dbPath)).not.toBe('ok');
    // With the VACUUM on, the walk that weighs each session's rows meets the damage first; without it,
    // quick_check before the first deletion does.
    for (const extra of [[], ['--no-vacuum']]) {
      const args = ['prune', '--apply', '--home', h.home, '--max-age-days', '30', '--max-sessions', '0'];
      const r = spawnSync(process.execPath, [CLI, ...args, '--max-db-size-mb', '0', ...extra], {
        env: { ...env, PICOGUARD_NO_SYSTEM_STATE: '1', PATH: process.env.PATH },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.status).toBe(3);
      expect(`${r.stdout}${r.stderr}`.replace(/\s+/g, ' ')).toMatch(
        extra.length > 0
          ? /seahorse\.db is damaged \(PRAGMA quick_check: [^*]/
          : /seahorse\.db is damaged \(SQLITE_CORRUPT/,
      );
      const metas = readdirSync(join(h.home, 'workspace', 'sessions')).filter((n) => n.endsWith('.meta.json'));
      expect(metas).toHaveLength(30);
    }
  });

  it('property: a disk that fills (archive, state, database): the report, exit 9, kept sessions whole', async (ctx) => {
    requireRoot(ctx, 'mount small tmpfs file systems that fill up (mount -t tmpfs)');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('archive', 'state', 'database'),
        fc.integer({ min: 0, max: 3 }),
        async (where, slack) => {
          const root = tempDir('pcg-full-');
          const fs = join(root, 'fs');
          mkdirSync(fs);
          // The file system that fills: its size leaves `slack` x 16 KiB past what is put on it.
          const built = home(join(root, 'build'), 24, 4, 60_000);
          // The database's file system holds the home and a little more: the deletions' WAL fits or not
          // (slack), the VACUUM's copy of the database through the WAL never does.
          const homeBytes = treeBytes(built.home);
          const sizeKib = where === 'database' ? Math.ceil(homeBytes / 1024) + 96 + slack * 64 : 64 + slack * 16;
          execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKib}k`, 'tmpfs', fs]);
          try {
            const h = where === 'database' ? join(fs, 'home') : join(root, 'home');
            cpSync(built.home, h, { recursive: true });
            const archive = where === 'archive' ? join(fs, 'archive') : join(root, 'archive');
            const state = where === 'state' ? join(fs, 'state') : join(root, 'state');
            if (where === 'state') {
              // The state folder's file system full to the last byte: the journal and the history cannot be written.
              mkdirSync(state);
              spawnSync('dd', ['if=/dev/zero', `of=${join(fs, 'fill')}`, 'bs=4k'], { stdio: 'ignore' });
            }
            const keptBefore = snapshot(join(h, 'workspace', 'sessions'), (p) => !/s00[0-3]\./.test(p));
            // Every pre-check sees room (this reader, in-process: no environment variable reaches a deleting path):
            // the disk fills for real, at the step itself.
            const roomy: FreeSpaceReader = (p) => ({ ...statfsFreeSpace(p), availableBytes: 100 * 1024 ** 3 });
            let report: { exit_code: number; warnings: string[] };
            try {
              report = await runPrunePass({
                home: h,
                env,
                apply: true,
                clock: fixedClock(NOW),
                freeSpace: roomy,
                stateDir: state,
                probe: downGateway,
                flags: {
                  ...(where === 'archive' ? { archive_dir: archive } : {}),
                  max_age_days: 30,
                  max_sessions: 0,
                  max_db_size_mb: 0,
                },
              });
            } catch (err) {
              // `prune --apply --json` prints the report the pass returns: a throw here is no report.
              throw new Error(`${where} (slack ${slack}): no report: ${String(err)}`);
            }
            expect(report.exit_code, `${where} (slack ${slack}): ${report.warnings.join(' | ')}`).toBe(9);
            expect(report.warnings.join('\n')).toMatch(/disk is full|ENOSPC|SQLITE_FULL/);
            const keptAfter = snapshot(join(h, 'workspace', 'sessions'), (p) => !/s00[0-3]\./.test(p));
            for (const [p, v] of keptBefore) expect(keptAfter.get(p), `${where}: kept ${p}`).toBe(v);
          } finally {
            execFileSync('umount', ['-l', fs]);
          }
        },
      ),
      { numRuns: 6, seed: 2608 },
    );
  }, 300_000);
});
