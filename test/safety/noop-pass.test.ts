import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, lstatSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { sqlite } from '../../src/io/sqlite.js';
import { dbKeyOf } from '../../src/prune/pass-safety.js';
import { writeOwedVacuum } from '../../src/state/vacuum-owed.js';
import { CLI, assertBuilt } from '../support/cli.js';
import { isRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * A pass with nothing to do does nothing (src/prune/pass-noop.ts).
 *
 * Invariant: on a PicoClaw home within policy, whatever its shape (agents, alias groups, undated
 * sessions, pins, with or without seahorse.db, and the -wal/-shm a gateway leaves when it stops
 * with its WAL checkpointed, half-checkpointed or truncated), the pre-start pass run through the
 * built CLI leaves every entry under the home exactly as it was: the same paths, types, sizes,
 * inodes, mtimes and ctimes (a transient file in a folder moves that folder's mtime and ctime),
 * and appends one bounded line to the guard's history. Under strace(1), when there is one, it
 * also makes no fsync, write, truncate, unlink, rename or mkdir there, and opens nothing there for
 * writing but the one open SQLite makes of a -wal it reads (read-write by SQLite's design, never
 * written: the snapshot says so); nor does it load the deleter's, the archiver's or the startup
 * model's learning modules, which only work needs. The converse: a home with work still has it done.
 *
 * As root, the CLI runs as `nobody` (the pre-start unit runs as the gateway's user, never root):
 * SQLite, run as root, sets the owner of a -wal and -shm it opens to the database's owner (a chown
 * to the same owner, which still moves their ctime).
 */
const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
const NOBODY = 65534;

type Wal = 'none' | 'frames' | 'checkpointed' | 'truncated';

interface Shape {
  seed: number;
  sessions: number;
  agents: number;
  seahorse: boolean;
  wal: Wal;
  pin: boolean;
  sizeLimit: boolean;
}

interface Entry {
  type: string;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
}

/** Every entry under dir, recursively, with what a write, a transient file or a rename would change. */
function snapshot(dir: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (p: string) => {
    const st = lstatSync(p, { bigint: true });
    const type = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : 'other';
    out.set(p, { type, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino });
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(dir);
  return out;
}

function changes(a: Map<string, Entry>, b: Map<string, Entry>): string[] {
  const out: string[] = [];
  for (const [p, e] of a) {
    const f = b.get(p);
    if (!f) out.push(`removed ${p}`);
    else
      for (const k of ['type', 'size', 'mtimeNs', 'ctimeNs', 'ino'] as const)
        if (e[k] !== f[k]) out.push(`${p}: ${k} ${String(e[k])} -> ${String(f[k])}`);
  }
  for (const p of b.keys()) if (!a.has(p)) out.push(`created ${p}`);
  return out;
}

function chownTree(p: string): void {
  chownSync(p, NOBODY, NOBODY);
  if (lstatSync(p).isDirectory()) for (const n of readdirSync(p)) chownTree(join(p, n));
}

interface Roots {
  root: string;
  home: string;
  state: string;
  config: string;
}

function env(r: Roots): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: '/nowhere',
    PICOCLAW_GUARD_CONFIG: r.config,
    PICOGUARD_NO_SYSTEM_STATE: '1',
    PICOGUARD_FAKE_FREE_BYTES: `/=${100 * 1024 ** 3}`,
  };
}

/** The built CLI, as `nobody` when this runs as root, under strace when a trace file is given. */
function cli(r: Roots, args: string[], trace?: string): { code: number; stdout: string; stderr: string } {
  const asNobody = isRoot();
  const [cmd, argv] = trace
    ? [
        'strace',
        [
          ...(asNobody ? ['-u', 'nobody'] : []),
          '-f',
          '-qq',
          '-y',
          '-e',
          'trace=open,openat,creat,fsync,fdatasync,sync_file_range,write,pwrite64,writev,ftruncate,truncate,' +
            'unlink,unlinkat,rename,renameat,renameat2,mkdir,mkdirat,rmdir,link,linkat,symlink,symlinkat,' +
            'chown,fchown,lchown,fchownat,chmod,fchmod,fchmodat,utimensat',
          '-o',
          trace,
          process.execPath,
          CLI,
          ...args,
        ],
      ]
    : [process.execPath, [CLI, ...args]];
  const res = spawnSync(cmd, argv, {
    env: env(r),
    encoding: 'utf8',
    timeout: 120_000,
    ...(asNobody && !trace ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  return { code: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

const WAL_ONLY_KEY = 'agent:main:wal-only-conversation';

/**
 * The -wal and -shm of a gateway that stopped without removing them: a conversation written (an
 * orphan within policy, so the pass must read the -wal to know of it), then checkpointed as asked,
 * the three files copied while the connection is open, and put back once it has closed.
 */
function leaveWal(db: string, wal: Wal): void {
  if (wal === 'none') return;
  const Database = sqlite();
  const c = new Database(db);
  c.pragma('wal_autocheckpoint = 0');
  const at = new Date(Date.now() - 3_600_000).toISOString().replace('T', ' ').slice(0, 19);
  const id = Number(
    c
      .prepare(`INSERT INTO conversations (session_key, created_at, updated_at) VALUES (?, ?, ?)`)
      .run(WAL_ONLY_KEY, at, at).lastInsertRowid,
  );
  c.prepare(
    `INSERT INTO messages (conversation_id, role, content, token_count, created_at) VALUES (?, 'user', 'x', 1, ?)`,
  ).run(id, at);
  if (wal === 'checkpointed') c.pragma('wal_checkpoint(PASSIVE)');
  if (wal === 'truncated') c.pragma('wal_checkpoint(TRUNCATE)');
  for (const s of ['', '-wal', '-shm']) writeFileSync(`${db}${s}.keep`, readFileSync(`${db}${s}`));
  c.close();
  for (const s of ['', '-wal', '-shm']) renameSync(`${db}${s}.keep`, `${db}${s}`);
}

function build(s: Shape): Roots & { seahorse: string | null; key: string } {
  const root = tempDir('pcg-noop-');
  const r: Roots = { root, home: join(root, 'home'), state: join(root, 'state'), config: join(root, 'guard.json') };
  const sample = buildSampleHome({
    dir: r.home,
    seed: s.seed,
    sessions: s.sessions,
    agents: s.agents,
    seahorse: s.seahorse,
    now: Date.now(),
    spanDays: 20,
  });
  // Within policy: the sessions span 20 days and the orphan conversations 50; no count or size limit is met.
  writeFileSync(
    r.config,
    JSON.stringify({
      prune: { enabled: true, max_age_days: 90, max_sessions: 1000, max_db_size_mb: s.sizeLimit ? 512 : 0 },
    }),
  );
  if (isRoot()) chownTree(root);
  return { ...r, seahorse: sample.seahorsePath, key: sample.sessions[0]!.key };
}

const preStart = (r: Roots) => [
  'prune',
  '--apply',
  '--if-enabled',
  '--pre-start',
  '--home',
  r.home,
  '--state-dir',
  r.state,
];

function historyLines(r: Roots): string[] {
  const p = join(r.state, 'prune-history.jsonl');
  return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean) : [];
}

/** The modules of the deleter, the archiver and the startup model's learning that the trace shows opened. */
function heavyModules(trace: string): string[] {
  const heavy =
    /dist\/src\/(prune\/apply\/apply|prune\/apply\/group|archive\/archive|archive\/tar|startup\/|startup-model\/learn)[^"]*\.js"/;
  return readFileSync(trace, 'utf8')
    .split('\n')
    .filter((l) => heavy.test(l))
    .map((l) => heavy.exec(l)![0]);
}

/** What the trace shows the pass doing to the home beyond reading it. */
function writesIn(trace: string, home: string, wal: Wal): string[] {
  const under = (p: string) => p === home || p.startsWith(home + sep);
  const out: string[] = [];
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    const call = /^\d+\s+(\w+)\((.*)$/.exec(line);
    if (!call) continue;
    const [, name, rest] = call as unknown as [string, string, string];
    if (/ = -1 /.test(line)) continue;
    const quoted = [...rest.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
    const fds = [...rest.matchAll(/<([^>]*)>/g)].map((m) => m[1]!);
    if (name === 'open' || name === 'openat' || name === 'creat') {
      const p = quoted[0];
      if (!p || !under(p)) continue;
      const writable = name === 'creat' || /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND/.test(rest);
      // SQLite opens a -wal read-write on a read-only connection too (sqlite3WalOpen); never written (below).
      const sqliteWal = p.endsWith('.db-wal') && (wal === 'frames' || wal === 'checkpointed');
      if (writable && !sqliteWal) out.push(line);
    } else if (quoted.some(under) || fds.some(under)) out.push(line);
  }
  return out;
}

describe('a pass with nothing to do does nothing', () => {
  it('on homes within policy of any shape: nothing under the home changes, one history line', async () => {
    assertBuilt();
    const shape = fc.record({
      seed: fc.integer({ min: 1, max: 1_000_000 }),
      sessions: fc.integer({ min: 6, max: 40 }),
      agents: fc.integer({ min: 1, max: 3 }),
      seahorse: fc.boolean(),
      wal: fc.constantFrom<Wal>('none', 'frames', 'checkpointed', 'truncated'),
      pin: fc.boolean(),
      sizeLimit: fc.boolean(),
    });
    // A -wal of each kind the pass must read, whatever the draw (8 random runs missed them all 2% of the time).
    const WAL_EXAMPLES = (['frames', 'checkpointed', 'truncated'] as const).map((wal, i): [Shape] => [
      { seed: 11 + i, sessions: 12, agents: 2, seahorse: true, wal, pin: i === 1, sizeLimit: i === 2 },
    ]);
    const RUNS = WAL_EXAMPLES.length + 8;
    let traced = 0;
    let walRead = 0;
    await fc.assert(
      fc.asyncProperty(shape, async (s) => {
        const r = build(s);
        if (s.pin) expect(cli(r, ['pin', r.key, '--home', r.home, '--state-dir', r.state]).code).toBe(0);
        // The first pass after the build: whatever it owes (a VACUUM, the orphan conversations) is done here.
        const first = cli(r, preStart(r));
        expect(first.code, first.stderr).toBe(0);
        if (r.seahorse) leaveWal(r.seahorse, s.wal);
        if (isRoot()) chownTree(r.root);
        const lines = historyLines(r).length;
        const before = snapshot(r.home);
        const trace = hasStrace ? join(tempDir('pcg-noop-trace-'), 'trace') : undefined;
        const run = cli(r, [...preStart(r), '--json'], trace);
        expect(run.code, run.stderr).toBe(0);
        const after = snapshot(r.home);
        expect(changes(before, after)).toEqual([]);
        const report = JSON.parse(run.stdout) as {
          mode: string;
          totals: { deleted_sessions: number; deleted_orphan_conversations: number };
          orphans: { key: string; action: string }[];
        };
        expect(report.mode).toBe('apply');
        expect(report.totals.deleted_sessions).toBe(0);
        // A conversation only the -wal holds: the pass read the -wal, not just the file.
        if (r.seahorse && s.wal !== 'none') {
          expect(report.orphans.map((o) => o.key)).toContain(WAL_ONLY_KEY);
          walRead++;
        }
        const history = historyLines(r);
        expect(history.length).toBe(lines + 1);
        expect(Buffer.byteLength(history.at(-1)!)).toBeLessThan(1024);
        expect(JSON.parse(history.at(-1)!)).toMatchObject({ mode: 'apply', deleted_sessions: 0 });
        if (trace) {
          expect(writesIn(trace, r.home, s.wal)).toEqual([]);
          // The trace saw the pass read the home (or it proves nothing).
          expect(readFileSync(trace, 'utf8')).toContain(`${r.home}${sep}config.json`);
          // Nor does it load what only work needs: the deleter, the archiver, the startup model's fit and log analysis.
          expect(heavyModules(trace)).toEqual([]);
          traced++;
        }
      }),
      {
        // fast-check counts the examples in numRuns: three of them and eight random homes.
        numRuns: RUNS,
        examples: WAL_EXAMPLES,
      },
    );
    expect(walRead).toBeGreaterThanOrEqual(WAL_EXAMPLES.length);
    if (!hasStrace) console.warn('noop-pass: no strace(1): only the snapshots were compared');
    else expect(traced).toBe(RUNS);
  }, 600_000);

  it('the converse: a home with work still has it done, under the lock', () => {
    assertBuilt();
    const r = build({ seed: 9, sessions: 30, agents: 2, seahorse: true, wal: 'none', pin: false, sizeLimit: false });
    // Sessions span 20 days: a 10-day limit leaves the older ones to delete.
    writeFileSync(r.config, JSON.stringify({ prune: { enabled: true, max_age_days: 10, max_sessions: 1000 } }));
    if (isRoot()) chownTree(r.root);
    const before = snapshot(r.home);
    const run = cli(r, [...preStart(r), '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { totals: { deleted_sessions: number } };
    expect(report.totals.deleted_sessions).toBeGreaterThan(0);
    expect(changes(before, snapshot(r.home)).some((c) => c.startsWith('removed '))).toBe(true);
    // The lock was taken: its file sits in the home's root.
    expect(existsSync(join(r.home, '.picoclaw-guard.lock'))).toBe(true);
  }, 120_000);

  it('the converse: an owed VACUUM and nothing to delete is work: the real pass runs it', () => {
    assertBuilt();
    const r = build({ seed: 4, sessions: 20, agents: 1, seahorse: true, wal: 'none', pin: false, sizeLimit: false });
    expect(cli(r, preStart(r)).code).toBe(0);
    // An earlier online pass deferred its VACUUM to this, the next offline one.
    writeOwedVacuum(r.state, dbKeyOf(r.seahorse!).key, {
      db: r.seahorse!,
      since: new Date(Date.now() - 86_400_000).toISOString(),
      estimated_bytes_after: null,
      content_bytes: null,
      reason: 'rows deleted while the gateway ran',
    });
    if (isRoot()) chownTree(r.root);
    const before = snapshot(r.home);
    const run = cli(r, [...preStart(r), '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { totals: { deleted_sessions: number }; database: { vacuum: unknown } };
    expect(report.totals.deleted_sessions).toBe(0);
    expect(report.database.vacuum).toMatchObject({ reason: expect.stringContaining('owed since') as unknown });
    expect(changes(before, snapshot(r.home))).not.toEqual([]);
  }, 120_000);
});

/**
 * The pre-start pass on a home as the last quiet pass left it (src/prune/pass-quiet.ts): answered from the
 * record, without reading the home. A record is made only of a home still for the settle time before the
 * pass, so the passes run until one takes the fast path: the event this waits for, with a bound far above
 * the settle time, so that a loaded machine (slow passes, or fast ones that need many) does not fail it.
 */
describe('the quiet fast path of the pre-start pass', () => {
  const FAST = /^nothing to do: the home is as the pass at \S+ left it \((\d+) sessions, /;
  const untilFast = (r: Roots): string => {
    const until = performance.now() + 90_000;
    while (performance.now() < until) {
      const run = cli(r, preStart(r));
      expect(run.code, run.stderr).toBe(0);
      if (FAST.test(run.stdout)) return run.stdout;
    }
    throw new Error('no pre-start pass took the fast path');
  };

  it('an unchanged home: the fast path, the home untouched, one history line; a new session: the full path', () => {
    assertBuilt();
    const r = build({ seed: 5, sessions: 24, agents: 2, seahorse: true, wal: 'none', pin: false, sizeLimit: true });
    untilFast(r);
    const lines = historyLines(r).length;
    const before = snapshot(r.home);
    const run = cli(r, preStart(r));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(FAST);
    expect(FAST.exec(run.stdout)![1]).toBe('24');
    expect(changes(before, snapshot(r.home))).toEqual([]);
    const history = historyLines(r);
    expect(history.length).toBe(lines + 1);
    expect(JSON.parse(history.at(-1)!)).toMatchObject({ mode: 'apply', deleted_sessions: 0, sessions_before: 24 });
    // A new session (PicoClaw's files: its .jsonl and its meta): the full path, which counts it.
    const dir = join(r.home, 'workspace', 'sessions');
    const at = new Date().toISOString();
    writeFileSync(join(dir, 'agent_main_quiet-new.jsonl'), `{"role":"user","content":"hi","created_at":"${at}"}\n`);
    writeFileSync(
      join(dir, 'agent_main_quiet-new.meta.json'),
      JSON.stringify({ key: 'agent:main:quiet-new', summary: '', skip: 0, count: 1, created_at: at, updated_at: at }),
    );
    if (isRoot()) chownTree(r.root);
    const full = cli(r, preStart(r));
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout).not.toMatch(FAST);
    expect(full.stdout).toContain('APPLY');
    expect(JSON.parse(historyLines(r).at(-1)!)).toMatchObject({ sessions_before: 25 });
  }, 120_000);

  it('never with --json: the JSON report stays complete', () => {
    assertBuilt();
    const r = build({ seed: 6, sessions: 12, agents: 1, seahorse: false, wal: 'none', pin: false, sizeLimit: false });
    untilFast(r);
    const run = cli(r, [...preStart(r), '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { mode: string; totals: { sessions: number } };
    expect(report).toMatchObject({ mode: 'apply', totals: { sessions: 12 } });
  }, 120_000);
});
