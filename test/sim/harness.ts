import { execFileSync, spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  openSync,
  writeSync,
  closeSync,
  statSync,
  mkdtempSync,
  readdirSync,
  lstatSync,
  watch,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ExitCode, GuardError } from '../../src/errors.js';
import { fixedClock } from '../../src/io/clock.js';
import { tryLock } from '../../src/io/lock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { lockPathFor } from '../../src/state/pass-lock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { readArchiveFiles } from '../../src/archive/read.js';
import type { PruneReport } from '../../src/prune/report/report.js';
import { downGateway } from '../support/gateway-state.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { CLI_PATH, cliEnv } from '../support/crash.js';
import { AGENT_IDS, buildHome, filesOf, type BuiltHome, type BuiltSession } from './home.js';
import { modelGroups, modelVerdicts } from './model.js';
import { KNOWN_FAILING } from './classes.js';
import { scenarioArb, type Fault, type Scenario, type Shape, type SimEvent } from './scenario.js';

/**
 * The simulation: a scenario's home is built, a real pass (runPrunePass, in-process) runs on it with
 * the scenario's events at the pass's step hooks and its fault in place, and the invariants are
 * checked against the model (./model.ts). Returns the failures (empty: the scenario holds).
 *
 * Faults are real: ENOSPC is a tmpfs of 96 KiB (root only), a corrupt page is bytes written over a
 * page of seahorse.db, a held lock is the guard's own lock taken by another connection, a clock
 * ahead is the pass's clock five years on with sessions written under it (and the daemon's way
 * through it: a pass told of the jump, then one that is not).
 */

const DOCUMENTED_EXITS = new Set<number>(Object.values(ExitCode));
const PASS_TIMEOUT_MS = 30_000;
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };

export const isRoot = (): boolean => process.getuid?.() === 0;

function tmpfs(dir: string, size: string): string {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  return dir;
}

function fill(dir: string): void {
  // The folder's filesystem left with no room: a file as large as it takes.
  const fd = openSync(join(dir, 'filler'), 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch {
    // ENOSPC: full
  } finally {
    closeSync(fd);
  }
}

function corruptPage(dbPath: string): void {
  const size = statSync(dbPath).size;
  const fd = openSync(dbPath, 'r+');
  // One page in the second half of the file (the schema on page 1 and the first tables stay whole): the
  // database opens and lists its tables; a read or a delete that reaches the page finds garbage.
  const pages = Math.floor(size / 4096);
  const garbage = Buffer.alloc(4096, 0xa5);
  writeSync(fd, garbage, 0, garbage.length, Math.max(1, Math.floor((pages * 2) / 3)) * 4096);
  closeSync(fd);
}

function writeAtomic(path: string, text: string | Buffer): void {
  const tmp = join(path, '..', `.tmp-${process.pid}-${process.hrtime.bigint()}`);
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export interface Outcome {
  failures: string[];
  /** Defect classes found (for the report): the class name and a line. */
  report: PruneReport | null;
}

interface Expect {
  /** Files that must exist with these bytes after the pass (written by events, or of a group an event joined). */
  files: Map<string, Buffer>;
}

/** The events at the pass's step hooks: each acts on the session the pass is deleting. */
function eventHook(b: BuiltHome, sc: Scenario, expect: Expect, kept: Set<string>) {
  let n = 0;
  const groups = modelGroups(b.model);
  const byPath = new Map(b.sessions.map((s) => [s.metaPath, s]));
  const byId = new Map(b.sessions.map((s) => [s.id, s]));
  const pending: SimEvent[] = [...sc.events].sort((x, y) => x.step - y.step);
  let fresh = 0;
  const groupFiles = (s: BuiltSession) => {
    for (const id of groups.get(s.id) ?? [s.id]) {
      const m = byId.get(id)!;
      for (const p of [m.metaPath, m.jsonlPath])
        if (existsSync(p) && statSync(p).isFile()) expect.files.set(p, readFileSync(p));
    }
  };
  return (
    _step: string,
    rec: { dir: string; base: string; key: string | null; files: { meta: { path: string } | null } },
  ) => {
    const at = n++;
    while (pending.length && pending[0]!.step <= at) {
      const e = pending.shift()!;
      const s = rec.files.meta ? byPath.get(rec.files.meta.path) : undefined;
      if (!s) continue;
      stats.events++;
      const line =
        JSON.stringify({ role: 'user', content: `event ${e.kind}`, created_at: new Date().toISOString() }) + '\n';
      switch (e.kind) {
        case 'append':
          if (existsSync(s.jsonlPath) && statSync(s.jsonlPath).isFile()) appendFileSync(s.jsonlPath, line);
          else if (!existsSync(s.jsonlPath)) appendFileSync(s.jsonlPath, line);
          groupFiles(s);
          break;
        case 'compact':
          if (existsSync(s.jsonlPath) && statSync(s.jsonlPath).isFile()) {
            writeAtomic(s.jsonlPath, readFileSync(s.jsonlPath));
            groupFiles(s);
          }
          break;
        case 'rewrite':
          if (existsSync(s.metaPath)) {
            const m = JSON.parse(readFileSync(s.metaPath, 'utf8') || '{}') as Record<string, unknown>;
            m.updated_at = new Date().toISOString();
            writeAtomic(s.metaPath, JSON.stringify(m, null, 2));
            groupFiles(s);
          }
          break;
        case 'alias': {
          // A kept session of the same folder lists the session being deleted as its alias.
          if (!rec.key) break;
          const k = b.sessions.find(
            (o) =>
              o.folder === s.folder &&
              kept.has(o.id) &&
              o.sim.meta === 'valid' &&
              o.id !== s.id &&
              existsSync(o.metaPath),
          );
          let path: string;
          if (k) {
            const m = JSON.parse(readFileSync(k.metaPath, 'utf8')) as { aliases?: string[] };
            m.aliases = [...(m.aliases ?? []), rec.key];
            writeAtomic(k.metaPath, JSON.stringify(m, null, 2));
            path = k.metaPath;
          } else {
            path = join(s.dir, `sk_v1_aliasing${fresh++}.meta.json`);
            writeAtomic(path, JSON.stringify({ key: `sk_v1_aliasing${fresh}`, aliases: [rec.key] }, null, 2));
          }
          expect.files.set(path, readFileSync(path));
          groupFiles(s);
          break;
        }
        case 'new': {
          const key = `sk_v1_new_during_pass_${fresh++}`;
          const meta = join(s.dir, `${key}.meta.json`);
          writeFileSync(join(s.dir, `${key}.jsonl`), line);
          writeAtomic(meta, JSON.stringify({ key, count: 1, updated_at: new Date().toISOString() }, null, 2));
          expect.files.set(meta, readFileSync(meta));
          expect.files.set(join(s.dir, `${key}.jsonl`), Buffer.from(line));
          break;
        }
      }
    }
  };
}

function checkWritten(expect: Expect, failures: string[]): void {
  for (const [p, bytes] of expect.files) {
    if (!existsSync(p)) failures.push(`(b) ${p}: written (or joined) during the pass, deleted`);
    else if (!readFileSync(p).equals(bytes) && !p.endsWith('.jsonl')) failures.push(`(b) ${p}: changed by the pass`);
  }
}

function rowsByKey(dbPath: string): Map<string, number> {
  const out = new Map<string, number>();
  try {
    const db = new (sqlite())(dbPath, { readonly: true });
    try {
      for (const r of db
        .prepare(
          `SELECT c.session_key AS k, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS n FROM conversations c`,
        )
        .all() as { k: string; n: number }[])
        out.set(r.k, r.n);
    } finally {
      db.close();
    }
  } catch {
    // a database the fault made unreadable: the rows check is skipped
  }
  return out;
}

async function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, rej) => {
    timer = setTimeout(
      () => rej(new Error(`${what} did not end within ${PASS_TIMEOUT_MS} ms (a hang)`)),
      PASS_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the scenarios did, over a run: a harness whose passes never complete or never delete tests nothing. */
export const stats = { scenarios: 0, completed: 0, deleted: 0, guardErrors: 0, events: 0 };

/** Run one scenario; the failures say which invariant broke and where. */
export async function runScenario(sc: Scenario, seed: string): Promise<string[]> {
  stats.scenarios++;
  const root = mkdtempSync(join(tmpdir(), 'pcg-sim-'));
  const mounts: string[] = [];
  let b: BuiltHome | null = null;
  const failures: string[] = [];
  try {
    b = buildHome(root, sc, seed, isRoot(), mounts);
    const before = filesOf(b);
    const rowsBefore = rowsByKey(b.dbPath);
    const trusted = sc.fault !== 'clock_ahead';
    const verdicts = modelVerdicts(b.model, sc.policy, b.nowMs, trusted);
    const kept = new Set([...verdicts].filter(([, v]) => v.action === 'keep').map(([id]) => id));
    let archiveDir: string | null = null;
    if (sc.policy.archive) {
      archiveDir = join(root, 'archive');
      if (sc.fault === 'enospc_archive') mounts.push(tmpfs(archiveDir, '96k'));
      else mkdirSync(archiveDir);
    }
    const stateDir = join(root, 'state');
    mkdirSync(stateDir);
    if (sc.fault === 'enospc_state') {
      mounts.push(tmpfs(stateDir, '64k'));
      fill(stateDir);
    }
    if (sc.fault === 'corrupt_page') corruptPage(b.dbPath);
    let held: ReturnType<typeof tryLock> | null = null;
    if (sc.fault === 'lock_held') {
      held = tryLock(lockPathFor(discoverHome({ home: b.home, env }), stateDir), 'another pass');
      if (!held.ok) throw new Error('could not take the lock for the scenario');
    }
    const expect: Expect = { files: new Map() };
    const flags = {
      max_age_days: sc.policy.max_age_days,
      max_sessions: sc.policy.max_sessions,
      max_db_size_mb: 0,
      vacuum: sc.policy.vacuum,
      archive_dir: archiveDir ?? undefined,
    };
    // A clock ahead is run the daemon's way (its monotonic clock saw the jump): the pass after it and
    // the next are told. With events the home after the first pass is no longer the one the model read:
    // one pass only. (A lone CLI pass has no monotonic clock: docs/bad-input.md#the-clock.)
    const jump = 'the wall clock jumped ahead by about 1825 days since the last pass';
    const passes: { skipAgeCheck?: string }[] =
      sc.fault !== 'clock_ahead'
        ? [{}]
        : sc.events.length > 0
          ? [{ skipAgeCheck: jump }]
          : [{ skipAgeCheck: jump }, { skipAgeCheck: `${jump}; not confirmed since` }];
    let report: PruneReport | null = null;
    const deleted = new Set<string>();
    for (const [i, extra] of passes.entries()) {
      let r: PruneReport;
      try {
        r = await withTimeout(
          runPrunePass({
            home: b.home,
            env,
            apply: true,
            clock: fixedClock(new Date(b.nowMs)),
            stateDir,
            probe: downGateway,
            flags,
            onStep: i === 0 ? (eventHook(b, sc, expect, kept) as never) : undefined,
            ...extra,
          }),
          'the pass',
        );
      } catch (err) {
        if (err instanceof GuardError) {
          stats.guardErrors++;
          if (!DOCUMENTED_EXITS.has(err.exitCode)) failures.push(`(f) exit code ${err.exitCode} is not documented`);
          if (err.message.includes('\n')) failures.push(`(f) the error is more than one line: ${err.message}`);
          break;
        }
        failures.push(
          `(f) the pass threw, not a GuardError (a stack for the user): ${String((err as Error).stack ?? err)
            .split('\n')
            .slice(0, 3)
            .join(' | ')}`,
        );
        break;
      }
      report = r;
      stats.completed++;
      // (b) nothing written after planning is deleted by the pass it was written during (a later pass plans anew).
      if (i === 0) checkWritten(expect, failures);
      stats.deleted += r.totals.deleted_sessions;
      if (!DOCUMENTED_EXITS.has(r.exit_code)) failures.push(`(f) exit code ${r.exit_code} is not documented`);
      for (const s of r.sessions) if (s.action === 'delete') deleted.add(`${s.agent}/${s.file}`);
    }
    if (held?.ok) held.lock.release();
    // Fault-specific ends.
    if (
      sc.fault === 'lock_held' &&
      report &&
      (report.exit_code !== ExitCode.LOCKED || report.totals.deleted_sessions !== 0)
    )
      failures.push(
        `lock held by another: exit ${report.exit_code}, ${report.totals.deleted_sessions} deleted (want exit 4, none)`,
      );
    // A damaged database: nothing is deleted, and the pass ends with exit 3 (quick_check before the first
    // deletion, or the damaged page met while reading), or 0 when it reaches no deletion at all (quick_check
    // reads the whole file, so it runs only before a deletion; a damage it never meets costs nothing).
    if (
      sc.fault === 'corrupt_page' &&
      report &&
      (report.totals.deleted_sessions > 0 || (report.exit_code !== ExitCode.DATA && report.exit_code !== ExitCode.OK))
    )
      failures.push(
        `corrupt page: exit ${report.exit_code}, ${report.totals.deleted_sessions} session(s) deleted (want exit 3 before any deletion; 0 only when nothing is to go)`,
      );
    const after = filesOf(b);
    const rowsAfter = rowsByKey(b.dbPath);
    // (a) every session the model keeps is byte-identical, files and rows.
    for (const s of b.sessions) {
      if (!kept.has(s.id)) continue;
      for (const p of [s.metaPath, s.jsonlPath]) {
        const was = expect.files.get(p) ?? before.get(p);
        const now = after.get(p);
        if (was && !now) {
          const e = report?.sessions.find((x) => x.file === s.base);
          failures.push(
            `(a) ${p}: kept by the model (${verdicts.get(s.id)!.why}; ${JSON.stringify(s.sim.when)}), deleted (the pass: ${e?.reason ?? '?'}, last activity ${e?.last_activity}${e?.detail ? `, ${e.detail}` : ''})`,
          );
        } else if (was && now && !was.equals(now) && !expect.files.has(p) && !sc.events.length)
          failures.push(`(a) ${p}: kept by the model, changed`);
      }
      if (s.conversation && sc.fault !== 'corrupt_page') {
        const n0 = rowsBefore.get(s.conversation) ?? 0;
        const n1 = rowsAfter.get(s.conversation) ?? 0;
        if (n1 < n0) failures.push(`(a) seahorse ${s.conversation}: kept by the model, ${n0 - n1} message(s) deleted`);
      }
    }
    // (a') with no event and no fault, and the age check applied, the guard deletes what the model deletes.
    if (report && sc.events.length === 0 && sc.fault === 'none' && report.age_check !== 'refused_clock') {
      const want = b.sessions
        .filter((s) => verdicts.get(s.id)?.action === 'delete')
        .map((s) => s.metaPath)
        .sort();
      const got = b.sessions
        .filter((s) => before.has(s.metaPath) && !existsSync(s.metaPath))
        .map((s) => s.metaPath)
        .sort();
      if (JSON.stringify(want) !== JSON.stringify(got))
        failures.push(
          `(a') the model deletes ${want.length} session(s), the pass ${got.length}: ` +
            `only the model: ${want
              .filter((x) => !got.includes(x))
              .slice(0, 3)
              .join(', ')}; ` +
            `only the pass: ${got
              .filter((x) => !want.includes(x))
              .slice(0, 3)
              .join(', ')}`,
        );
    }
    // A clock that cannot be trusted deletes nothing by age.
    if (sc.fault === 'clock_ahead' && report)
      for (const s of b.sessions)
        if (kept.has(s.id) && before.has(s.metaPath) && !existsSync(s.metaPath))
          failures.push(`clock ahead: ${s.metaPath} deleted although the clock is 5 years ahead`);
    // (c) every deleted session has an archive that gives its files back byte for byte.
    if (report && archiveDir) {
      const held = new Map<string, Buffer>();
      for (const name of readdirSync(archiveDir).filter((n) => n.endsWith('.tar.gz'))) {
        try {
          // The reader hands each session file's bytes to a sink as they stream (by role); the archive's
          // info names the file they belong to once it is read whole.
          const parts: Record<'jsonl' | 'meta', Buffer[]> = { jsonl: [], meta: [] };
          const started = new Set<'jsonl' | 'meta'>();
          const info = await readArchiveFiles(join(archiveDir, name), (role) => {
            started.add(role);
            return { write: (chunk: Buffer) => void parts[role].push(Buffer.from(chunk)) };
          });
          if (info.base !== null)
            for (const role of started)
              held.set(
                `${name}\0session/${info.base}${role === 'jsonl' ? '.jsonl' : '.meta.json'}`,
                Buffer.concat(parts[role]),
              );
        } catch (err) {
          failures.push(`(c) ${name}: cannot be read back (${(err as Error).message})`);
        }
      }
      const inSome = (file: string, bytes: Buffer) =>
        [...held].some(([k, v]) => k.endsWith(`\0session/${file}`) && v.equals(bytes));
      for (const e of report.sessions) {
        if (e.action !== 'delete') continue;
        if (!e.archive || !existsSync(e.archive)) {
          failures.push(`(c) ${e.file}: deleted without an archive`);
          continue;
        }
        const s = b.sessions.find((x) => x.base === e.file && before.has(x.metaPath) && !existsSync(x.metaPath));
        if (!s) continue;
        for (const p of [s.metaPath, s.jsonlPath]) {
          const bytes = before.get(p);
          const file = p.slice(p.lastIndexOf('/') + 1);
          if (bytes && !inSome(file, bytes))
            failures.push(`(c) ${file}: deleted, and no archive gives it back byte for byte`);
        }
        // The report names the archive that holds this session (not only its group's last one).
        const name = e.archive.slice(e.archive.lastIndexOf('/') + 1);
        if (![...held.keys()].some((k) => k === `${name}\0session/${e.file}.meta.json`))
          failures.push(`(e) ${e.file}: the report names ${name} as its archive, which does not hold it`);
      }
    }
    // (e) the report matches the disk.
    if (report)
      for (const e of report.sessions) {
        // The file in the entry's agent's folder: two agents' folders can each hold a file of one name (a
        // 'collide' key beside a legacy one), and the other one's is not this entry's.
        const folder = b.sessions.find((x) => AGENT_IDS[x.agent] === e.agent)?.folder;
        const s = b.sessions.find(
          (x) => x.base === e.file && before.has(x.metaPath) && (folder === undefined || x.folder === folder),
        );
        if (!s) continue;
        if (e.action === 'delete' && existsSync(s.metaPath) && !expect.files.has(s.metaPath))
          failures.push(`(e) ${e.file}: reported deleted, still on disk`);
      }
    void deleted;
  } catch (err) {
    failures.push(
      `the harness could not run the scenario: ${(err as Error).stack?.split('\n').slice(0, 3).join(' | ')}`,
    );
  } finally {
    for (const m of mounts.reverse()) {
      try {
        execFileSync('umount', [m], { stdio: 'ignore' });
      } catch {
        execFileSync('umount', ['-l', m], { stdio: 'ignore' });
      }
    }
    rmSync(root, { recursive: true, force: true });
  }
  return failures;
}

export interface SimRun {
  seed: number;
  runs: number;
  failure: { scenario: Scenario; failures: string[] } | null;
}

/** Shrink steps after the first failure (each runs a scenario): the shrunk scenario is small, not minimal. */
const SHRINK_BUDGET = Number(process.env.PCG_SIM_SHRINK ?? 40);

/** fast-check over `runs` scenarios of a shape; a failure is shrunk (within SHRINK_BUDGET) to a smaller one. */
export async function simulate(seed: number, runs: number, shape: Shape, shrink = SHRINK_BUDGET): Promise<SimRun> {
  let failedOnce = false;
  let shrinks = 0;
  const res = await fc.check(
    fc.asyncProperty(scenarioArb(shape), async (sc) => {
      // Past the budget every candidate "holds": fast-check stops at the smallest failure seen so far.
      if (failedOnce && ++shrinks > shrink) return true;
      const f = await runScenario(sc, String(seed));
      if (f.length > 0) failedOnce = true;
      return f.length === 0;
    }),
    { seed, numRuns: runs, endOnFailure: false },
  );
  if (!res.failed) return { seed, runs: res.numRuns, failure: null };
  const scenario = res.counterexample![0];
  const failures = await runScenario(scenario, String(seed));
  return { seed, runs: res.numRuns, failure: { scenario, failures } };
}

export function describeFailure(r: SimRun, cls: string): string {
  if (!r.failure) return '';
  return (
    `simulation class ${cls} failed (seed ${r.seed}; rerun: npm run simulate -- --seed ${r.seed} --class ${cls}):\n` +
    r.failure.failures.map((f) => `  - ${f}`).join('\n') +
    `\nshrunk scenario:\n${JSON.stringify(r.failure.scenario)}`
  );
}

export type { Fault };

// --- Kills: the built CLI, SIGKILLed at the nth change in a sessions folder -----------------------

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
}

function runCli(args: string[], killAt: number | null, dirs: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.resume();
    let n = 0;
    const watchers =
      killAt === null
        ? []
        : dirs.map((d) =>
            watch(d, () => {
              if (++n === killAt) child.kill('SIGKILL');
            }),
          );
    const timer = setTimeout(() => child.kill('SIGKILL'), PASS_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      for (const w of watchers) w.close();
      resolve({ code, signal, stdout: out });
    });
  });
}

function sessionState(b: BuiltHome, home: string): string[] {
  const out: string[] = [];
  for (const d of new Set(b.sessions.map((s) => s.dir.replace(b.home, home))))
    for (const name of readdirSync(d).sort())
      if (name.endsWith('.jsonl') || name.endsWith('.meta.json')) {
        const p = join(d, name);
        out.push(
          `${p.replace(home, '')} ${lstatSync(p).isFile() ? readFileSync(p).toString('base64').slice(0, 40) : 'special'}`,
        );
      }
  const db = new (sqlite())(join(b.dirs[0]!.replace(b.home, home), 'seahorse.db'), { readonly: true });
  try {
    for (const r of db
      .prepare(
        `SELECT c.session_key AS k, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS n FROM conversations c ORDER BY 1`,
      )
      .all() as { k: string; n: number }[])
      out.push(`seahorse ${r.k} ${r.n}`);
  } finally {
    db.close();
  }
  return out;
}

/**
 * (d) A pass killed at the nth change it makes to a sessions folder, then run again, converges to the
 * state an uninterrupted pass reaches (files, rows), and archives no session twice.
 */
export async function runKillScenario(sc: Scenario, seed: string, killAt: number): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), 'pcg-simkill-'));
  const failures: string[] = [];
  const plain: Scenario = { ...sc, share: sc.share === 'bind' ? 'none' : sc.share, events: [], fault: 'none' };
  try {
    const b = buildHome(join(root, 'a'), plain, seed, isRoot());
    execFileSync('cp', ['-a', join(root, 'a'), join(root, 'b')]);
    const homeB = b.home.replace(join(root, 'a'), join(root, 'b'));
    // The copy's config and workspace links name its own folders, not the original's.
    const cfg = join(homeB, 'config.json');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').split(join(root, 'a')).join(join(root, 'b')));
    const args = (home: string, tag: string) => [
      'prune',
      '--apply',
      '--json',
      '--trust-clock',
      '--home',
      home,
      '--state-dir',
      join(root, `state-${tag}`),
      '--archive',
      join(root, `archive-${tag}`),
      '--max-age-days',
      String(plain.policy.max_age_days),
      '--max-sessions',
      String(plain.policy.max_sessions),
      '--max-db-size-mb',
      '0',
    ];
    const ref = await runCli(args(b.home, 'a'), null, []);
    if (ref.signal || ref.code === null || ref.code === 1)
      failures.push(`(f) the uninterrupted pass ended ${ref.signal ?? ref.code}`);
    const dirsB = [...new Set(b.sessions.map((s) => s.dir.replace(b.home, homeB)))];
    const killed = await runCli(args(homeB, 'b'), killAt, dirsB);
    const again = await runCli(args(homeB, 'b'), null, []);
    if (again.signal || again.code === 1)
      failures.push(`(d) the pass after the kill ended ${again.signal ?? again.code}`);
    const want = sessionState(b, b.home);
    const got = sessionState(b, homeB);
    const onlyRef = want.filter((x) => !got.includes(x));
    const onlyKilled = got.filter((x) => !want.includes(x));
    if (onlyRef.length || onlyKilled.length)
      failures.push(
        `(d) killed at change ${killAt}${killed.signal ? '' : ' (it finished first)'} and run again, the home differs from an ` +
          `uninterrupted pass: only uninterrupted: ${onlyRef.slice(0, 3).join('; ')}; only killed: ${onlyKilled.slice(0, 3).join('; ')}`,
      );
    const count = (d: string) => (existsSync(d) ? readdirSync(d).filter((n) => n.endsWith('.tar.gz')).length : 0);
    const archivesRef = count(join(root, 'archive-a'));
    const archivesKilled = count(join(root, 'archive-b'));
    if (archivesKilled > archivesRef && !KNOWN_FAILING['archive-redone-after-kill'])
      failures.push(
        `(d) the kill and the next pass wrote ${archivesKilled} archives, an uninterrupted pass ${archivesRef}: a deletion was redone`,
      );
  } catch (err) {
    failures.push(
      `the harness could not run the kill scenario: ${(err as Error).stack?.split('\n').slice(0, 3).join(' | ')}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return failures;
}

/** fast-check over kill scenarios (each spawns the CLI three times). */
export async function simulateKills(
  seed: number,
  runs: number,
  root: boolean,
  shrink = SHRINK_BUDGET / 4,
): Promise<SimRun> {
  let failedOnce = false;
  let shrinks = 0;
  const res = await fc.check(
    fc.asyncProperty(scenarioArb({ root }), fc.integer({ min: 1, max: 40 }), async (sc, k) => {
      if (failedOnce && ++shrinks > shrink) return true;
      const f = await runKillScenario(sc, String(seed), k);
      if (f.length > 0) failedOnce = true;
      return f.length === 0;
    }),
    { seed, numRuns: runs, endOnFailure: false },
  );
  if (!res.failed) return { seed, runs: res.numRuns, failure: null };
  const [scenario, k] = res.counterexample as [Scenario, number];
  return { seed, runs: res.numRuns, failure: { scenario, failures: await runKillScenario(scenario, String(seed), k) } };
}
