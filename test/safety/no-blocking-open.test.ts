import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { CLI, NO_GUARD_CONFIG, assertBuilt } from '../support/cli.js';
import { board } from '../health/boards.js';
import { skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * no file the guard opens can block it.
 *
 * Invariant: for every path under a PicoClaw home, the guard's state folder, the archive folder
 * and the guard config that a command opens, a FIFO, a character device (a symlink to /dev/null)
 * or a symlink to a FIFO put there instead never hangs the command: it ends within the timeout,
 * with a documented exit code and no stack, and when it ends otherwise than with the regular
 * file, what it prints names the file.
 *
 * The paths are not picked by hand: each command is run once under strace(1) on a home where
 * every file exists (seahorse.db with its -wal and -shm open by a "gateway" connection, archives,
 * history, holds, the owed VACUUM, samples, the PID file, gateway.log, config.json, the guard
 * config), and every open(2) of a path in those folders, successful or not, is a path to try.
 * SQLite's own opens (seahorse.db, -wal, -shm, -journal, the lock) are in that list too.
 */
const TIMEOUT_MS = 15_000;
const DOCUMENTED = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11]);
const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;

interface Cmd {
  name: string;
  args: (r: Roots) => string[];
  /** A daemon: it has done its part when stdout matches this, and is then stopped with SIGTERM (exit 0). */
  until?: RegExp;
}
interface Roots {
  root: string;
  home: string;
  state: string;
  archive: string;
  config: string;
}

const roots = (root: string): Roots => ({
  root,
  home: join(root, 'home'),
  state: join(root, 'state'),
  archive: join(root, 'archive'),
  config: join(root, 'guard.json'),
});

const policy = ['--max-age-days', '20', '--max-sessions', '6', '--max-db-size-mb', '0'];
const COMMANDS: Cmd[] = [
  { name: 'sessions', args: (r) => ['sessions', '--home', r.home] },
  { name: 'prune', args: (r) => ['prune', '--home', r.home, '--config', r.config, '--state-dir', r.state, ...policy] },
  {
    name: 'prune --apply',
    args: (r) => [
      'prune',
      '--apply',
      '--home',
      r.home,
      '--config',
      r.config,
      '--state-dir',
      r.state,
      '--archive',
      r.archive,
      ...policy,
    ],
  },
  { name: 'health', args: (r) => ['health', '--home', r.home, '--config', r.config, '--state-dir', r.state] },
  { name: 'startup', args: (r) => ['startup', '--home', r.home, '--state-dir', r.state] },
  { name: 'restore --list', args: (r) => ['restore', '--list', r.archive, '--home', r.home, '--state-dir', r.state] },
  {
    // The daemon's pass: its first pass at start, in its child process, with the guard config's policy.
    name: "run's pass",
    args: (r) => {
      const b = board('pi4');
      return ['run', '--home', r.home, '--config', r.config, '--state-dir', r.state, '--port', '0'].concat(
        ['--sys-root', b.sys, '--proc-root', b.proc],
        b.vcgencmd ? ['--vcgencmd', b.vcgencmd] : [],
      );
    },
    until: /"msg":"prune pass"/,
  },
];

const env = (): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: '/nowhere',
  PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
  PICOGUARD_NO_SYSTEM_STATE: '1',
});

/** A home where every file a command may open exists. */
function buildFixture(root: string): Roots {
  const r = roots(root);
  const sample = buildSampleHome({
    dir: r.home,
    seed: 26,
    sessions: 14,
    agents: 2,
    now: Date.now(),
    restarts: 2,
    logLevel: 'info',
    logEvents: true,
    pidFile: 'stale',
  });
  writeFileSync(
    r.config,
    JSON.stringify({
      prune: { enabled: true, max_sessions: 6, max_age_days: 20, max_db_size_mb: 0, archive_dir: r.archive },
    }),
  );
  // A first pass: archives, the history, an owed VACUUM record; then a restore: the holds.
  const first = spawnSync(
    process.execPath,
    [CLI, 'prune', '--apply', '--home', r.home, '--state-dir', r.state, '--archive', r.archive, ...policy],
    { env: env(), encoding: 'utf8' },
  );
  if (first.status !== 0) throw new Error(`fixture pass exited ${first.status}: ${first.stderr}`);
  const archives = readdirSync(r.archive).filter((n) => n.endsWith('.tar.gz'));
  if (archives.length < 2) throw new Error('the fixture pass archived fewer than two sessions');
  const restored = spawnSync(
    process.execPath,
    [CLI, 'restore', join(r.archive, archives[0]!), '--home', r.home, '--state-dir', r.state],
    { env: env(), encoding: 'utf8' },
  );
  if (restored.status !== 0) throw new Error(`fixture restore exited ${restored.status}: ${restored.stderr}`);
  for (const f of ['vacuum-owed.json', 'bootstrap-samples.json'])
    if (!existsSync(join(r.state, f))) writeFileSync(join(r.state, f), '[]\n');
  // A "gateway" that has seahorse.db open in WAL mode leaves -wal and -shm beside it (copied as they are).
  const db = sample.seahorsePath!;
  execFileSync('python3', [
    '-c',
    `import sqlite3,shutil;c=sqlite3.connect(${JSON.stringify(db)});c.execute('pragma journal_mode=wal');` +
      `c.execute('create table if not exists _t(x)');c.commit();` +
      `shutil.copy(${JSON.stringify(db)},${JSON.stringify(db + '.keep')});` +
      `shutil.copy(${JSON.stringify(db + '-wal')},${JSON.stringify(db + '-wal.keep')});` +
      `shutil.copy(${JSON.stringify(db + '-shm')},${JSON.stringify(db + '-shm.keep')})`,
  ]);
  for (const s of ['', '-wal', '-shm']) execFileSync('mv', [`${db}${s}.keep`, `${db}${s}`]);
  return r;
}

/**
 * A copy of the fixture at root: the paths the fixture's files hold (config.json's workspaces, the
 * state's home keys) made to point at the copy, so that no run touches the fixture or another copy.
 */
function copyFixture(fixture: Roots, root: string): Roots {
  cpSync(fixture.root, root, { recursive: true });
  const r = roots(root);
  const texts = [r.config, join(r.home, 'config.json'), ...readdirSync(r.state).map((n) => join(r.state, n))];
  for (const f of texts) {
    if (!lstatSync(f).isFile()) continue;
    const t = readFileSync(f, 'utf8');
    if (t.includes(fixture.root)) writeFileSync(f, t.replaceAll(fixture.root, root));
  }
  return r;
}

/** Every path under the fixture's folders that `cmd` opens (strace), relative to the root; directories left out. */
async function tracedPaths(fixture: Roots, cmd: Cmd): Promise<Set<string>> {
  const root = tempDir('pcg-trace-');
  const r = copyFixture(fixture, root);
  const out = join(tempDir('pcg-strace-'), 'trace');
  await runAsync(cmd.args(r), cmd.until, ['strace', '-f', '-qq', '-e', 'trace=open,openat,creat', '-o', out], out);
  const paths = new Set<string>();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /open(?:at)?\((?:[A-Z_]+|\d+), "([^"]+)", ([A-Z_|]+)/.exec(line) ?? /creat\("([^"]+)"/.exec(line);
    if (!m) continue;
    const p = m[1]!;
    if (!p.startsWith(root + sep) || (m[2] ?? '').includes('O_DIRECTORY')) continue;
    const rel = relative(root, p);
    // A name of the guard's own making for one run (a temp file with a pid or a random part) cannot be
    // put in place before the run.
    if (/tmp-|\.tmp$|-journal$/.test(rel) && !existsSync(join(fixture.root, rel))) continue;
    // The deletion journal is named from the home's inode, which every copy has its own: a file put at the
    // name one copy used is at no name another copy opens. Its reader is the small-file reader (no follow).
    if (/deleting-[0-9a-f]{16}\.json$/.test(rel)) continue;
    try {
      if (lstatSync(join(fixture.root, rel)).isDirectory()) continue;
    } catch {
      // absent in the fixture: the command tried it (or made it); a FIFO may still sit there
    }
    paths.add(rel);
  }
  // One file of each kind per folder (a session's .jsonl, its .meta.json, an archive): the others of the
  // folder are opened by the same code, and trying each would multiply the runs, not the cases.
  const kinds = new Map<string, string>();
  for (const rel of [...paths].sort()) {
    const m = /\.(jsonl|meta\.json|tar\.gz|json\.gz)$/.exec(rel);
    const kind = m ? `${dirname(rel)}/*.${m[1]}` : rel;
    if (!kinds.has(kind)) kinds.set(kind, rel);
  }
  return new Set(kinds.values());
}

type Kind = 'fifo' | 'devnull-symlink' | 'symlink-to-fifo';
const KINDS: Kind[] = ['fifo', 'devnull-symlink', 'symlink-to-fifo'];

function plant(root: string, rel: string, kind: Kind): void {
  const p = join(root, rel);
  rmSync(p, { force: true });
  mkdirSync(dirname(p), { recursive: true });
  if (kind === 'fifo') execFileSync('mkfifo', [p]);
  else if (kind === 'devnull-symlink') symlinkSync('/dev/null', p);
  else {
    const f = join(root, `fifo-${rel.replaceAll('/', '_')}`);
    execFileSync('mkfifo', [f]);
    symlinkSync(f, p);
  }
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Run the CLI (under `prefix`, e.g. strace, when given); a daemon is stopped with SIGTERM once its stdout
 * matches `until` (under strace, the traced daemon's pid is the first one of the trace file `trace`).
 */
function runAsync(args: string[], until?: RegExp, prefix: string[] = [], trace?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const [cmd, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
    const argv = prefix.length > 0 ? [...pre, process.execPath, CLI, ...args] : [CLI, ...args];
    const child = spawn(cmd!, argv, {
      // An interval of a second: the fixture's own pass a moment ago does not defer the daemon's first pass.
      env: { ...env(), PICOGUARD_INTERVAL_SECONDS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let stopped = false;
    const target = (): number => {
      if (!trace) return child.pid!;
      const first = /^(\d+)\s/.exec(readFileSync(trace, 'utf8'));
      return first ? Number(first[1]) : child.pid!;
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (until && !stopped && until.test(stdout)) {
        stopped = true;
        process.kill(target(), 'SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(target(), 'SIGKILL');
      } catch {
        // gone
      }
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    // 'close', not 'exit': the pipes may still hold the last lines when the process has exited.
    child.once('close', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

/** Run jobs two at a time (the machine has two cores). */
async function pool<T>(jobs: (() => Promise<T>)[], width = 2): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

describe('no file the guard opens can block it', () => {
  it('a FIFO, /dev/null or a symlink to a FIFO at every path a command opens: no hang, no stack', async (ctx) => {
    if (!hasStrace) return skipWithReason(ctx, 'needs strace(1) to list the paths each command opens');
    assertBuilt();
    const fixture = buildFixture(tempDir('pcg-fixture-'));
    const cases: { cmd: Cmd; rel: string; kind: Kind; baseline: number | null }[] = [];
    const baselines = new Map<string, number | null>();
    for (const cmd of COMMANDS) {
      const paths = await tracedPaths(fixture, cmd);
      const b = await runAsync(cmd.args(copyFixture(fixture, tempDir('pcg-base-'))), cmd.until);
      if (b.timedOut || b.code === null)
        throw new Error(`${cmd.name} on the fixture did not end: ${b.stderr} ${b.stdout.slice(-1500)}`);
      baselines.set(cmd.name, b.code);
      for (const rel of [...paths].sort()) for (const kind of KINDS) cases.push({ cmd, rel, kind, baseline: b.code });
    }
    const listed = [...new Set(cases.map((c) => c.rel))];
    console.info(`no-blocking-open: ${cases.length} runs over ${listed.length} paths: ${listed.join(' ')}`);
    // The list must reach the files that matter, or the test proves nothing.
    for (const must of [
      'home/config.json',
      'home/workspace/sessions/seahorse.db',
      'home/workspace/sessions/seahorse.db-wal',
      'home/workspace/sessions/seahorse.db-shm',
      'home/logs/gateway.log',
      'home/.picoclaw.pid',
      'guard.json',
    ])
      expect(listed, must).toContain(must);
    expect(listed.some((p) => p.startsWith('archive/'))).toBe(true);
    expect(listed.some((p) => p.startsWith('state/'))).toBe(true);

    const failures: string[] = [];
    await pool(
      cases.map((c) => async () => {
        const root = tempDir('pcg-fifo-');
        const rs = copyFixture(fixture, root);
        plant(root, c.rel, c.kind);
        const r = await runAsync(c.cmd.args(rs), c.cmd.until);
        const what = `${c.cmd.name} with ${c.kind} at ${c.rel}`;
        if (r.timedOut) failures.push(`${what}: hung (killed after ${TIMEOUT_MS} ms)`);
        else if (r.code === null || !DOCUMENTED.has(r.code)) failures.push(`${what}: exit ${r.code ?? r.signal}`);
        else if (/\n\s+at .+:\d+:\d+\)?\n/.test(r.stderr)) failures.push(`${what}: a stack on stderr`);
        else if (r.code !== c.baseline) {
          const name = c.rel.split('/').pop()!;
          if (!`${r.stderr}${r.stdout}`.includes(name))
            failures.push(
              `${what}: exit ${r.code} (not ${c.baseline}) without naming ${name}: ${r.stderr.slice(0, 300)}`,
            );
        }
        rmSync(root, { recursive: true, force: true });
      }),
    );
    expect(failures).toEqual([]);
  }, 900_000);
});
