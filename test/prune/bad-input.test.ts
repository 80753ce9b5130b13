import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, type TestContext } from 'vitest';
import { systemClock } from '../../src/io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../../src/io/freespace.js';
import { sqlite } from '../../src/io/sqlite.js';
import { sqliteTempDir } from '../../src/prune/apply/vacuum.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';
import { addConversation, canMount, handHome, snapshot, writeSession } from '../support/home.js';
import { requireRoot, skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/** Sessions dated relative to the real clock: the CLI runs with the machine's time. */
const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();
const sqlDaysAgo = (d: number) => daysAgo(d).slice(0, 19).replace('T', ' ');

function basicHome(home: string) {
  return handHome(home, [
    { key: 'sk_v1_old', updated: daysAgo(90), seahorse: [sqlDaysAgo(90), sqlDaysAgo(90)] },
    { key: 'sk_v1_new', updated: daysAgo(0), seahorse: [sqlDaysAgo(0)] },
  ]);
}

/**
 * Each home's own state folder. `join(home, '..')` would be the shared temp folder, where a state folder left by
 * another user's run cannot be written, and the deletion journal (rightly) keeps every session then.
 */
const stateDirs = new Map<string, string>();
function stateOf(home: string): string {
  let d = stateDirs.get(home);
  if (!d) stateDirs.set(home, (d = tempDir()));
  return d;
}

function prune(home: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const r = runCli(['prune', '--apply', '--json', '--home', home, '--state-dir', stateOf(home), ...args], env);
  let report: Record<string, any> | null = null;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    report = null;
  }
  return { ...r, report };
}

/** tmpfs mounts need root, and a sandbox may refuse them even to root. */
function requireMount(ctx: TestContext): void {
  requireRoot(ctx, 'mount a tmpfs');
  if (!canMount())
    skipWithReason(ctx, 'this machine refuses to mount a tmpfs even for root (a container without CAP_SYS_ADMIN)');
}

const mounts: string[] = [];
afterEach(() => {
  while (mounts.length) {
    try {
      execFileSync('umount', [mounts.pop()!], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
});

describe(
  'bad input: each ends with a clear message, the right exit code, and nothing ' + 'deleted that should not be',
  () => {
    it('corrupt, empty and non-UTF-8 .meta.json: kept, named, with what to do; the rest of the pass goes on', () => {
      const home = tempDir();
      const { sessionsDir } = basicHome(home);
      writeFileSync(join(sessionsDir, 'corrupt.meta.json'), '{"key": "agent:main:x", "updated_at": ');
      writeFileSync(
        join(sessionsDir, 'corrupt.jsonl'),
        '{"role":"user","content":"x","created_at":"2020-01-01T00:00:00Z"}\n',
      );
      writeFileSync(join(sessionsDir, 'empty.meta.json'), '');
      writeFileSync(join(sessionsDir, 'latin1.meta.json'), Buffer.from('{"key":"caf\xe9"}', 'latin1'));
      const r = prune(home);
      expect(r.code, r.stderr).toBe(0);
      const kept = r.report!.sessions.filter((s: { reason: string }) => s.reason === 'unreadable_meta');
      expect(kept).toHaveLength(3);
      for (const k of kept) expect(k.detail).toMatch(/\.meta\.json: .*; kept \(/);
      expect(kept.map((k: { detail: string }) => k.detail).join('\n')).toContain(
        join(sessionsDir, 'corrupt.meta.json'),
      );
      expect(existsSync(join(sessionsDir, 'corrupt.jsonl'))).toBe(true);
      expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(false);
      const text = runCli(['prune', '--home', home]);
      expect(text.stdout).toContain('corrupt.meta.json');
      expect(text.stdout).toContain('not valid JSON');
    });

    it('a truncated last line and a 10 MB last line are read; an old session with them is still pruned whole', () => {
      const home = tempDir();
      const { sessionsDir } = basicHome(home);
      writeSession(sessionsDir, { key: 'sk_v1_torn', updated: daysAgo(80) });
      writeFileSync(
        join(sessionsDir, 'sk_v1_torn.jsonl'),
        `{"role":"user","content":"a","created_at":"${daysAgo(80)}"}\n{"role":"tool","content":"cut sh`,
      );
      writeSession(sessionsDir, { key: 'sk_v1_huge', updated: daysAgo(2) });
      const hugeAt = daysAgo(1);
      writeFileSync(
        join(sessionsDir, 'sk_v1_huge.jsonl'),
        `{"role":"tool","content":"${'x'.repeat(10 * 1024 * 1024 - 200)}","created_at":"${hugeAt}"}\n`,
      );
      const inv = runCli(['sessions', '--json', '--home', home]);
      const s = JSON.parse(inv.stdout).sessions;
      expect(s.find((x: { key: string }) => x.key === 'sk_v1_torn').issues).toEqual(['jsonl_truncated_last_line']);
      expect(s.find((x: { key: string }) => x.key === 'sk_v1_huge').timestamps.jsonl_last_line).toBe(hugeAt);
      const r = prune(home);
      expect(r.code).toBe(0);
      expect(existsSync(join(sessionsDir, 'sk_v1_torn.jsonl'))).toBe(false);
      expect(existsSync(join(sessionsDir, 'sk_v1_huge.jsonl'))).toBe(true);
    });

    it('a .jsonl without meta is listed and kept; a meta without .jsonl is a session (deleted when old)', () => {
      const home = tempDir();
      const { sessionsDir } = basicHome(home);
      writeFileSync(
        join(sessionsDir, 'agent_main_lost.jsonl'),
        '{"role":"user","content":"x","created_at":"2020-01-01T00:00:00Z"}\n',
      );
      writeSession(sessionsDir, { key: 'agent:main:metaonly', updated: daysAgo(60) });
      rmSync(join(sessionsDir, 'agent_main_metaonly.jsonl'));
      const r = prune(home);
      expect(r.code).toBe(0);
      expect(r.report!.orphan_jsonl.map((o: { path: string }) => o.path)).toEqual([
        join(sessionsDir, 'agent_main_lost.jsonl'),
      ]);
      expect(existsSync(join(sessionsDir, 'agent_main_lost.jsonl'))).toBe(true);
      expect(r.report!.sessions.find((s: { key: string }) => s.key === 'agent:main:metaonly').action).toBe('delete');
      expect(existsSync(join(sessionsDir, 'agent_main_metaonly.meta.json'))).toBe(false);
    });

    it('the same key in two agents: two sessions; a shared conversation goes only when both do', () => {
      const home = tempDir();
      const other = join(home, 'workspace-b', 'sessions');
      const config = { agents: { defaults: { context_manager: 'seahorse' }, list: [{ id: 'main' }, { id: 'b' }] } };
      const { dbPath } = handHome(
        home,
        [
          { key: 'agent:cron-dup', updated: daysAgo(50) },
          { key: 'agent:cron-dup', updated: daysAgo(5), agentDir: other },
          { key: 'sk_v1_new', updated: daysAgo(0) },
        ],
        { config },
      );
      const db = new (sqlite())(dbPath);
      addConversation(db, 'agent:cron-dup', [sqlDaysAgo(50)]);
      db.close();
      const r = prune(home, ['--max-age-days', '30']);
      expect(r.code).toBe(0);
      const dups = r.report!.sessions.filter((s: { key: string }) => s.key === 'agent:cron-dup');
      expect(dups.map((d: { agent: string; action: string }) => `${d.agent}:${d.action}`).sort()).toEqual([
        'b:keep',
        'main:delete',
      ]);
      const left = new (sqlite())(dbPath, { readonly: true });
      expect(
        left.prepare(`SELECT COUNT(*) AS n FROM conversations WHERE session_key = 'agent:cron-dup'`).get(),
      ).toEqual({
        n: 1,
      });
      left.close();
      const r2 = prune(home, ['--max-age-days', '1']);
      expect(r2.code).toBe(0);
      const after = new (sqlite())(dbPath, { readonly: true });
      expect(
        after.prepare(`SELECT COUNT(*) AS n FROM conversations WHERE session_key = 'agent:cron-dup'`).get(),
      ).toEqual({ n: 0 });
      after.close();
    });

    it(
      'symlinks named like sessions are never followed nor deleted through; a ' +
        'folder named x.jsonl is not a session',
      () => {
        const home = tempDir();
        const { sessionsDir } = basicHome(home);
        const outside = tempDir();
        writeSession(outside, { key: 'agent:main:outside', updated: daysAgo(200) });
        symlinkSync(join(outside, 'agent_main_outside.meta.json'), join(sessionsDir, 'agent_main_outside.meta.json'));
        symlinkSync(join(outside, 'agent_main_outside.jsonl'), join(sessionsDir, 'agent_main_outside.jsonl'));
        writeSession(sessionsDir, { key: 'agent:main:half', updated: daysAgo(200) });
        rmSync(join(sessionsDir, 'agent_main_half.jsonl'));
        symlinkSync(join(outside, 'agent_main_outside.jsonl'), join(sessionsDir, 'agent_main_half.jsonl'));
        mkdirSync(join(sessionsDir, 'x.jsonl'));
        const outsideBefore = snapshot(outside);
        const r = prune(home);
        expect(r.code).toBe(0);
        expect(snapshot(outside)).toEqual(outsideBefore);
        expect(r.report!.sessions.find((s: { key: string }) => s.key === 'agent:main:half')).toMatchObject({
          action: 'keep',
          reason: 'not_regular_file',
        });
        expect(r.report!.sessions.find((s: { key: string }) => s.key === 'agent:main:outside')).toBeUndefined();
        expect(readdirSync(sessionsDir).sort()).toEqual(
          expect.arrayContaining([
            'agent_main_half.jsonl',
            'agent_main_half.meta.json',
            'agent_main_outside.jsonl',
            'agent_main_outside.meta.json',
            'x.jsonl',
          ]),
        );
      },
    );

    it('files another user owns and this user cannot write are kept with the file named (run as nobody)', (ctx) => {
      requireRoot(ctx, 'chown files to another user and run the guard as nobody');
      const root = tempDir();
      chmodSync(root, 0o755);
      const home = join(root, 'home');
      const { sessionsDir } = basicHome(home);
      writeSession(sessionsDir, { key: 'sk_v1_rootowned', updated: daysAgo(70) });
      execFileSync('chown', ['-R', 'nobody:nogroup', root]);
      chownSync(join(sessionsDir, 'sk_v1_rootowned.jsonl'), 0, 0);
      chownSync(join(sessionsDir, 'sk_v1_rootowned.meta.json'), 0, 0);
      const res = spawnSync(
        process.execPath,
        [
          join(import.meta.dirname, '../../dist/src/cli.js'),
          'prune',
          '--apply',
          '--json',
          '--home',
          home,
          '--state-dir',
          join(root, 'state'),
        ],
        {
          uid: 65534,
          gid: 65534,
          encoding: 'utf8',
          env: { PATH: process.env.PATH, HOME: root, PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG },
        },
      );
      const report = JSON.parse(res.stdout);
      expect(res.status).toBe(7);
      const kept = report.sessions.find((s: { key: string }) => s.key === 'sk_v1_rootowned');
      expect(kept).toMatchObject({ action: 'keep', reason: 'not_writable' });
      expect(kept.detail).toContain(join(sessionsDir, 'sk_v1_rootowned.meta.json'));
      expect(existsSync(join(sessionsDir, 'sk_v1_rootowned.jsonl'))).toBe(true);
      expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(false);
    });

    it('a read-only file system: the pass is skipped (exit 6) and nothing is deleted anywhere', (ctx) => {
      requireMount(ctx);
      const mnt = tempDir();
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
      mounts.push(mnt);
      const home = join(mnt, 'home');
      basicHome(home);
      execFileSync('mount', ['-o', 'remount,ro', mnt]);
      const before = snapshot(home);
      const r = prune(home, [], {});
      expect(r.code).toBe(6);
      expect(r.report!.skipped).toMatch(/cannot be written|read-only|EROFS/);
      expect(r.report!.skipped).toContain(home);
      expect(snapshot(home)).toEqual(before);
    });

    it('seahorse.db missing: the JSONL stores are pruned on their own', () => {
      const home = tempDir();
      const { sessionsDir } = handHome(
        home,
        [
          { key: 'sk_v1_old', updated: daysAgo(90) },
          { key: 'sk_v1_new', updated: daysAgo(0) },
        ],
        { seahorse: false },
      );
      const r = prune(home);
      expect(r.code).toBe(0);
      expect(r.report!.database.present).toBe(false);
      expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(false);
    });

    it('seahorse.db locked by another writer past the busy timeout: skipped (exit 6), nothing deleted', () => {
      const home = tempDir();
      const { dbPath, sessionsDir } = basicHome(home);
      const holder = new (sqlite())(dbPath);
      holder.exec('BEGIN IMMEDIATE');
      holder.exec(`INSERT INTO conversations (session_key) VALUES ('writer')`);
      try {
        const before = snapshot(sessionsDir, (p) => p.includes('seahorse.db'));
        const r = prune(home, [], { PICOGUARD_BUSY_TIMEOUT_MS: '300' });
        expect(r.code).toBe(6);
        expect(r.report!.skipped).toMatch(/write lock/);
        expect(r.report!.skipped).toContain(dbPath);
        expect(snapshot(sessionsDir, (p) => p.includes('seahorse.db'))).toEqual(before);
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
    });

    it('seahorse.db that is not a database: exit 3, named, nothing deleted; a dry-run warns', () => {
      const home = tempDir();
      const { dbPath, sessionsDir } = basicHome(home);
      rmSync(`${dbPath}-wal`, { force: true });
      rmSync(`${dbPath}-shm`, { force: true });
      writeFileSync(dbPath, 'this is not sqlite '.repeat(100));
      const noLock = (p: string) => p.includes('.picoclaw-guard.lock');
      const before = snapshot(home, noLock);
      const r = prune(home);
      expect(r.code).toBe(3);
      expect(r.report!.skipped).toContain(dbPath);
      expect(r.report!.skipped).toMatch(/not a SQLite database|not a database/);
      expect(snapshot(home, noLock)).toEqual(before);
      const dry = runCli(['prune', '--home', home]);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toMatch(/--apply would skip/);
      expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    });

    it('FTS5 tables this SQLite cannot use (unknown tokenizer): exit 3, nothing deleted', () => {
      const home = tempDir();
      const { dbPath } = basicHome(home);
      // better-sqlite3 runs in defensive mode; Python's sqlite3 lets us rewrite the schema as an old or odd build would
      // have.
      const py =
        `import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute("PRAGMA ` +
        `writable_schema=ON")\nc.execute("UPDATE sqlite_master SET sql = replace(sql,` +
        ` 'trigram', 'icu_zh') WHERE name = 'messages_fts'")\nc.commit()\nc.close()\n`;
      execFileSync('python3', ['-c', py, dbPath]);
      const noLock = (p: string) => p.includes('.picoclaw-guard.lock');
      const before = snapshot(home, noLock);
      const r = prune(home);
      expect(r.code).toBe(3);
      expect(r.report!.skipped).toMatch(/FTS5/);
      expect(snapshot(home, noLock)).toEqual(before);
    });

    it(
      'not enough room for VACUUM (database file system or temp folder): VACUUM ' +
        'skipped with the reason, WAL truncated',
      async () => {
        for (const where of ['db', 'tmp'] as const) {
          const home = tempDir();
          const sessions = [];
          for (let i = 0; i < 40; i++)
            sessions.push({
              key: `sk_v1_s${i}`,
              updated: daysAgo(100 + i),
              seahorse: Array(8).fill(sqlDaysAgo(100 + i)),
            });
          sessions.push({ key: 'sk_v1_new', updated: daysAgo(0), seahorse: [sqlDaysAgo(0)] });
          sessions.push({ key: 'sk_v1_big', updated: daysAgo(99) });
          const { sessionsDir } = handHome(home, sessions);
          const db = new (sqlite())(join(sessionsDir, 'seahorse.db'));
          addConversation(db, 'sk_v1_big', Array(20).fill(sqlDaysAgo(99)), { contentBytes: 100_000 });
          db.close();
          // A full disk in-process: the pass's own free-space reader, as no environment variable can give one.
          // SQLite reads its temp folder from this process's environment (as the check does).
          const full = where === 'db' ? sessionsDir : sqliteTempDir(process.env);
          const freeSpace: FreeSpaceReader = (p) => {
            const real = statfsFreeSpace(p);
            return p.startsWith(full) ? { ...real, availableBytes: 1000 } : real;
          };
          const report = await runPrunePass({
            home,
            env: { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG },
            apply: true,
            clock: systemClock,
            freeSpace,
            stateDir: stateOf(home),
            probe: downGateway,
          });
          expect(report.exit_code, report.warnings.join(' | ')).toBe(0);
          const vacuum = report.database.vacuum;
          expect(vacuum).not.toBeNull();
          expect(vacuum!.ran).toBe(false);
          expect(vacuum!.reason).toMatch(where === 'db' ? new RegExp(`free in ${sessionsDir}`) : /temp folder/);
          expect(vacuum!.wal_checkpoint).toBe('truncate');
        }
      },
    );

    it('PICOGUARD_FAKE_FREE_BYTES claiming a full disk: prune --apply reads the real free space, VACUUMs', () => {
      // The variable rehearses a full disk for `health` alone (src/health/rehearsed-free-space.ts): were it read
      // here, the VACUUM would be refused for want of room on the database's and the temp folder's file systems.
      const home = tempDir();
      const sessions = [];
      for (let i = 0; i < 20; i++)
        sessions.push({ key: `sk_v1_s${i}`, updated: daysAgo(100 + i), seahorse: Array(8).fill(sqlDaysAgo(100 + i)) });
      sessions.push({ key: 'sk_v1_new', updated: daysAgo(0), seahorse: [sqlDaysAgo(0)] });
      sessions.push({ key: 'sk_v1_big', updated: daysAgo(99) });
      const { sessionsDir } = handHome(home, sessions);
      // Worth a VACUUM: the old conversation's rows are most of the file.
      const db = new (sqlite())(join(sessionsDir, 'seahorse.db'));
      addConversation(db, 'sk_v1_big', Array(20).fill(sqlDaysAgo(99)), { contentBytes: 100_000 });
      db.close();
      const r = prune(home, [], { PICOGUARD_FAKE_FREE_BYTES: '/=0' });
      expect(r.code, r.stderr).toBe(0);
      expect(r.report!.database.vacuum.ran, r.report!.database.vacuum.reason).toBe(true);
    });

    it('a real small file system for the temp folder: VACUUM refused, not attempted', (ctx) => {
      requireMount(ctx);
      const mnt = tempDir();
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]);
      mounts.push(mnt);
      const home = tempDir();
      const sessions = [];
      for (let i = 0; i < 30; i++)
        sessions.push({ key: `sk_v1_s${i}`, updated: daysAgo(100 + i), seahorse: Array(5).fill(sqlDaysAgo(100 + i)) });
      sessions.push({ key: 'sk_v1_new', updated: daysAgo(0), seahorse: [sqlDaysAgo(0)] });
      sessions.push({ key: 'sk_v1_big', updated: daysAgo(99) });
      const { sessionsDir } = handHome(home, sessions);
      const db = new (sqlite())(join(sessionsDir, 'seahorse.db'));
      addConversation(db, 'sk_v1_big', Array(20).fill(sqlDaysAgo(101)), { contentBytes: 100_000 });
      db.close();
      // PICOGUARD_FAKE_FREE_BYTES claiming room everywhere changes nothing: the pass reads the real file system.
      const r = prune(home, [], { SQLITE_TMPDIR: mnt, PICOGUARD_FAKE_FREE_BYTES: `/=${100 * 1024 ** 3}` });
      expect(r.code).toBe(0);
      expect(r.report!.database.vacuum.ran).toBe(false);
      expect(r.report!.database.vacuum.reason).toContain(mnt);
    });

    it.each([
      ['negative', { prune: { max_age_days: -3 } }, 'max_age_days'],
      ['string', { prune: { max_sessions: 'ten' } }, 'max_sessions'],
      ['unknown key', { prune: { max_age: 3 } }, 'max_age'],
      ['unknown section', { purge: {} }, 'purge'],
    ])('a guard config with a %s value: exit 2, file and key named, nothing read or deleted', (_name, cfg, key) => {
      const home = tempDir();
      basicHome(home);
      const cfgPath = join(tempDir(), 'guard.json');
      writeFileSync(cfgPath, JSON.stringify(cfg));
      const before = snapshot(home);
      const r = runCli(['prune', '--apply', '--home', home, '--config', cfgPath]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(cfgPath);
      expect(r.stderr).toContain(key);
      expect(r.stderr).toContain('what to do');
      expect(snapshot(home)).toEqual(before);
    });

    it('a bad value in the environment or on the command line: exit 2, named', () => {
      const home = tempDir();
      basicHome(home);
      const before = snapshot(home);
      const e = runCli(['prune', '--apply', '--home', home], { PICOCLAW_SESSION_PRUNE_MAX_AGE_DAYS: '-1' });
      expect(e.code).toBe(2);
      expect(e.stderr).toContain('PICOCLAW_SESSION_PRUNE_MAX_AGE_DAYS');
      const f = runCli(['prune', '--apply', '--home', home, '--max-sessions', 'many']);
      expect(f.code).toBe(2);
      expect(f.stderr).toContain('--max-sessions');
      expect(snapshot(home)).toEqual(before);
    });
  },
);
