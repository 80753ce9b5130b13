import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type DatabaseT from 'better-sqlite3';
import { sqlite, type Database } from '../../src/io/sqlite.js';
import { formatGoTime, formatSqliteTime, parseGoTime } from '../../src/picoclaw/time.js';
import { buildSampleHome, type SampleHome } from '../../dev/sample/builder.js';
import { goJson } from '../../dev/sample/messages.js';
import { Rng } from '../../dev/sample/random.js';
import { assertBuilt } from './cli.js';
import { cliEnv, CLI_PATH, danglingRows, dump, killRunningPasses, repoRoot, type PruneJson } from './crash.js';
import { integrity } from './home.js';
import { ONLINE_QUIET_MS } from '../../src/prune/apply/write-lock.js';

/**
 * The "live gateway" harness.
 *
 * The simulator is a process of its own (`node dist/test/support/gateway-sim.js
 * <config json>`) that writes like a running PicoClaw gateway (docs/picoclaw.md#the-jsonl-file,
 * docs/picoclaw.md#temp-files-and-other-files-in-a-sessions-folder, docs/picoclaw.md#seahorsedb): it serves /ready
 * (200) and /health on a loopback port and writes
 * the PID file, so the guard sees a ready gateway and runs online passes; then, turn
 * after turn, it picks a session (mostly recent ones, now and then an old one a pass
 * may be deleting), appends a JSONL line (O_APPEND, fsync), rewrites the .meta.json
 * atomically (`.tmp-<pid>-<unixnano>` in the same folder, fsync, chmod, rename, fsync
 * the folder), and ingests the message into seahorse.db on its own connection with
 * busy_timeout 5000, the way pkg/seahorse does: GetOrCreateConversation (autocommit
 * SELECT, INSERT), AddMessageWithParts (deferred BEGIN; INSERT messages and
 * message_parts, which fires the FTS trigger; COMMIT), then appendContextItems
 * (deferred BEGIN; SELECT MAX(ordinal), SELECT token_count; INSERT context_items;
 * COMMIT). Every step's start, duration and error goes to a JSON-lines log.
 *
 * runLiveGateway (the test and bench/live-gateway-soak.ts) builds a home, starts the
 * simulator, runs `prune --apply` passes one after another against the same home
 * with a falling max_age_days (each pass has old sessions to delete), stops the
 * simulator and checks the log against the passes' reports and the final files.
 */

export interface SimConfig {
  home: string;
  dbPath: string;
  sessionsDirs: string[];
  log: string;
  seed: number;
  /** Pause between turns (ms). */
  turnGapMs: number;
  /** Share of turns that go to an old session (a likely prune victim). */
  oldShare: number;
  /** A session whose meta.updated_at is older than this many days is "old". */
  oldDays: number;
  /** The simulator stops by itself after this long (a leftover is never left running). */
  maxRunMs: number;
}

export interface StepLog {
  /** Start, epoch ms (fractional, performance.timeOrigin based). */
  t0: number;
  ms: number;
  err: string | null;
  code: string | null;
}

export interface TurnLog {
  kind: 'turn';
  seq: number;
  key: string;
  /** The session's folder and file base name. */
  dir: string;
  base: string;
  old: boolean;
  t: number;
  tEnd: number;
  line: string;
  jsonl: StepLog & { created: boolean; unlinkedUnder: boolean };
  meta: StepLog & { recreated: boolean };
  conv: StepLog & { id: number | null; created: boolean };
  msg: StepLog & { id: number | null };
  ctx: StepLog;
}

type SimLog =
  | TurnLog
  | { kind: 'start'; t: number; pid: number; port: number; sessions: number; old: number }
  | { kind: 'stop'; t: number; turns: number };

const clock = () => performance.timeOrigin + performance.now();

// --- The simulator process ----------------------------------------------------------

interface SimSession {
  key: string;
  dir: string;
  base: string;
}

function goMetaJson(meta: Record<string, unknown>): string {
  return JSON.stringify(meta, null, 2).replace(
    /[<>&\u2028\u2029]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'),
  );
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function errInfo(err: unknown): { err: string; code: string | null } {
  const e = err as { message?: unknown; code?: unknown };
  return { err: String(e?.message ?? err), code: typeof e?.code === 'string' ? e.code : null };
}

let nanoSeq = 0;

/**
 * pkg/fileutil WriteFileAtomic: temp file `.tmp-<pid>-<unixnano>` in the same folder, fsync, chmod, close, rename,
 * fsync the folder.
 */
function writeFileAtomicGo(path: string, data: string, dir: string): void {
  const nanos = BigInt(Math.floor(clock())) * 1_000_000n + BigInt(nanoSeq++ % 1_000_000);
  const tmp = join(dir, `.tmp-${process.pid}-${nanos}`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
    fchmodSync(fd, 0o644);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  fsyncDir(dir);
}

class Simulator {
  private readonly cfg: SimConfig;
  private readonly rng: Rng;
  private readonly db: Database;
  private readonly logFd: number;
  private readonly recent: SimSession[] = [];
  private readonly old: (SimSession & { updatedMs: number })[] = [];
  /**
   * Sessions older than this (epoch ms) are the next pass's victims (told by the harness); old picks go there first.
   */
  victimsBefore: number | null = null;
  private seq = 0;
  private stopping = false;
  private readonly q: Record<string, DatabaseT.Statement<unknown[]>>;

  constructor(cfg: SimConfig) {
    this.cfg = cfg;
    this.rng = new Rng(cfg.seed);
    this.logFd = openSync(cfg.log, 'a');
    // pkg/seahorse/short_engine.go NewEngine: journal_mode WAL, busy_timeout 5000, synchronous NORMAL.
    // modernc leaves foreign_keys off (SQLite's default); better-sqlite3 turns it on, so turn it off.
    this.db = new (sqlite())(cfg.dbPath, { timeout: 5000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = OFF');
    this.q = {
      getConv: this.db.prepare('SELECT conversation_id AS id FROM conversations WHERE session_key = ?'),
      addConv: this.db.prepare('INSERT INTO conversations (session_key) VALUES (?)'),
      addMsg: this.db.prepare(
        'INSERT INTO messages (conversation_id, role, content, model_name, reasoning_content,' +
          ' token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      addPart: this.db.prepare(
        `INSERT INTO message_parts (message_id, type, text, name, arguments, tool_call_id,` +
          ` media_uri, mime_type, ordinal) VALUES (?, 'text', ?, '', '', '', '', ` +
          `'', 0)`,
      ),
      maxOrd: this.db.prepare('SELECT COALESCE(MAX(ordinal), 0) AS m FROM context_items WHERE conversation_id = ?'),
      tokens: this.db.prepare('SELECT token_count AS n FROM messages WHERE message_id = ?'),
      addCtx: this.db.prepare(
        `INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id,` +
          ` message_id, token_count) VALUES (?, ?, 'message', NULL, ?, ?)`,
      ),
    };
    const cutoff = Date.now() - cfg.oldDays * 86_400_000;
    for (const dir of cfg.sessionsDirs) {
      for (const name of readdirSync(dir).sort()) {
        if (!name.endsWith('.meta.json') || name.startsWith('.')) continue;
        try {
          const meta = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { key?: unknown; updated_at?: unknown };
          if (typeof meta.key !== 'string') continue;
          const s = { key: meta.key, dir, base: name.slice(0, -'.meta.json'.length) };
          const updated = parseGoTime(meta.updated_at);
          // Undated sessions are never pruned: they count as recent here.
          if (updated !== null && updated >= Date.UTC(2024, 0, 1) && updated < cutoff)
            this.old.push({ ...s, updatedMs: updated });
          else this.recent.push(s);
        } catch {
          // unreadable meta: PicoClaw's ListSessions skips it too
        }
      }
    }
  }

  log(rec: SimLog): void {
    writeSync(this.logFd, JSON.stringify(rec) + '\n');
  }

  counts(): { sessions: number; old: number } {
    return { sessions: this.recent.length + this.old.length, old: this.old.length };
  }

  private pick(): { s: SimSession; old: boolean } | null {
    if (this.old.length > 0 && this.rng.chance(this.cfg.oldShare)) {
      // An old session a pass may be deleting right now: one the running pass would delete if
      // the harness said which, else any old one. Those already gone are dropped.
      for (let tries = 0; tries < 8 && this.old.length > 0; tries++) {
        const before = this.victimsBefore;
        const pool =
          before === null ? this.old.map((_, i) => i) : this.old.flatMap((x, i) => (x.updatedMs < before ? [i] : []));
        if (pool.length === 0) break;
        const i = pool[this.rng.int(0, pool.length - 1)]!;
        const s = this.old[i]!;
        this.old.splice(i, 1);
        if (existsSync(join(s.dir, `${s.base}.meta.json`))) {
          this.recent.push({ key: s.key, dir: s.dir, base: s.base });
          return { s, old: true };
        }
      }
    }
    if (this.recent.length === 0) return null;
    // Mostly the most active sessions: a few chats carry most of the traffic.
    const i = this.rng.chance(0.7)
      ? this.rng.int(Math.max(0, this.recent.length - 20), this.recent.length - 1)
      : this.rng.int(0, this.recent.length - 1);
    return { s: this.recent[i]!, old: false };
  }

  /** One turn: pkg/memory/jsonl.go addMsg (append + fsync, then the meta), then seahorse Ingest. */
  turn(): void {
    const p = this.pick();
    if (!p) return;
    const { s } = p;
    const seq = this.seq++;
    const t = clock();
    const nowMs = Date.now();
    const content = `sim turn ${seq} in ${s.key}: ${this.rng.hex(12)}`;
    const line = goJson({ role: 'user', content, created_at: formatGoTime(nowMs, this.rng.int(0, 999_999)) });
    const rec: TurnLog = {
      kind: 'turn',
      seq,
      key: s.key,
      dir: s.dir,
      base: s.base,
      old: p.old,
      t,
      tEnd: 0,
      line,
      jsonl: { t0: t, ms: 0, err: null, code: null, created: false, unlinkedUnder: false },
      meta: { t0: 0, ms: 0, err: null, code: null, recreated: false },
      conv: { t0: 0, ms: 0, err: null, code: null, id: null, created: false },
      msg: { t0: 0, ms: 0, err: null, code: null, id: null },
      ctx: { t0: 0, ms: 0, err: null, code: null },
    };
    // 1. JSONL: O_CREATE|O_APPEND, write, fsync, close. nlink 0 afterwards: the file was unlinked under the append.
    try {
      const fd = openSync(join(s.dir, `${s.base}.jsonl`), 'a', 0o644);
      try {
        rec.jsonl.created = fstatSync(fd).size === 0;
        writeSync(fd, line + '\n');
        fsyncSync(fd);
        rec.jsonl.unlinkedUnder = fstatSync(fd).nlink === 0;
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      Object.assign(rec.jsonl, errInfo(err));
    }
    rec.jsonl.ms = clock() - rec.jsonl.t0;
    // 2. The meta, re-read and rewritten atomically (a missing one starts from a zeroed meta).
    rec.meta.t0 = clock();
    try {
      const path = join(s.dir, `${s.base}.meta.json`);
      let meta: Record<string, unknown>;
      try {
        meta = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      } catch {
        rec.meta.recreated = true;
        meta = {
          key: s.key,
          summary: '',
          skip: 0,
          count: 0,
          created_at: formatGoTime(nowMs),
          updated_at: formatGoTime(nowMs),
        };
      }
      meta.count = (typeof meta.count === 'number' ? meta.count : 0) + 1;
      meta.updated_at = formatGoTime(nowMs, this.rng.int(0, 999_999));
      writeFileAtomicGo(path, goMetaJson(meta), s.dir);
    } catch (err) {
      Object.assign(rec.meta, errInfo(err));
    }
    rec.meta.ms = clock() - rec.meta.t0;
    // 3. seahorse Ingest (pkg/seahorse/short_engine.go, store.go).
    const db = this.db;
    rec.conv.t0 = clock();
    try {
      const row = this.q.getConv!.get(s.key) as { id: number } | undefined;
      if (row) rec.conv.id = row.id;
      else {
        rec.conv.id = Number(this.q.addConv!.run(s.key).lastInsertRowid);
        rec.conv.created = true;
      }
    } catch (err) {
      Object.assign(rec.conv, errInfo(err));
    }
    rec.conv.ms = clock() - rec.conv.t0;
    if (rec.conv.id !== null) {
      rec.msg.t0 = clock();
      try {
        db.exec('BEGIN');
        const id = Number(
          this.q.addMsg!.run(
            rec.conv.id,
            'user',
            content,
            '',
            '',
            Math.ceil(content.length / 4),
            formatSqliteTime(nowMs),
          ).lastInsertRowid,
        );
        this.q.addPart!.run(id, content);
        db.exec('COMMIT');
        rec.msg.id = id;
      } catch (err) {
        Object.assign(rec.msg, errInfo(err));
        if (db.inTransaction) db.exec('ROLLBACK');
      }
      rec.msg.ms = clock() - rec.msg.t0;
    }
    if (rec.msg.id !== null) {
      rec.ctx.t0 = clock();
      try {
        db.exec('BEGIN');
        const m = (this.q.maxOrd!.get(rec.conv.id) as { m: number }).m;
        const tok = (this.q.tokens!.get(rec.msg.id) as { n: number } | undefined)?.n ?? 0;
        this.q.addCtx!.run(rec.conv.id, m + 100, rec.msg.id, tok);
        db.exec('COMMIT');
      } catch (err) {
        Object.assign(rec.ctx, errInfo(err));
        if (db.inTransaction) db.exec('ROLLBACK');
      }
      rec.ctx.ms = clock() - rec.ctx.t0;
    }
    rec.tEnd = clock();
    this.log(rec);
  }

  async run(): Promise<void> {
    const until = clock() + this.cfg.maxRunMs;
    while (!this.stopping && clock() < until) {
      this.turn();
      await new Promise((r) => setTimeout(r, this.cfg.turnGapMs));
    }
  }

  stop(): void {
    this.stopping = true;
  }

  close(): void {
    this.log({ kind: 'stop', t: clock(), turns: this.seq });
    closeSync(this.logFd);
    this.db.close();
  }
}

async function simMain(cfg: SimConfig): Promise<void> {
  const started = clock();
  const uptime = () => `${((clock() - started) / 1000).toFixed(6)}s`;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    res.setHeader('content-type', 'application/json');
    if (path === '/ready') res.end(JSON.stringify({ status: 'ready', uptime: uptime() }) + '\n');
    else if (path === '/health') res.end(JSON.stringify({ status: 'ok', uptime: uptime(), pid: process.pid }) + '\n');
    else {
      res.statusCode = 404;
      res.end('{"error":"not found"}\n');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  // pkg/pid/pidfile.go: 2-space JSON, mode 0600, via <pidfile>.tmp and rename.
  const pidPath = join(cfg.home, '.picoclaw.pid');
  const token = new Rng(cfg.seed ^ 0x5eed).hex(32);
  const tmp = `${pidPath}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  writeSync(fd, JSON.stringify({ pid: process.pid, token, version: 'gateway-sim', port, host: '127.0.0.1' }, null, 2));
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, pidPath);

  const sim = new Simulator(cfg);
  const c = sim.counts();
  sim.log({ kind: 'start', t: clock(), pid: process.pid, port, ...c });
  process.on('SIGTERM', () => sim.stop());
  // The harness says which sessions the next pass deletes; a lost parent stops the simulator.
  process.on('message', (m: { victimsBefore?: unknown }) => {
    if (typeof m?.victimsBefore === 'number') sim.victimsBefore = m.victimsBefore;
  });
  process.on('disconnect', () => sim.stop());
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid, port, ...c }) + '\n');
  await sim.run();
  sim.close();
  try {
    const pf = JSON.parse(readFileSync(pidPath, 'utf8')) as { pid?: number };
    if (pf.pid === process.pid) unlinkSync(pidPath);
  } catch {
    // gone already
  }
  server.close();
  server.closeAllConnections();
}

// --- The harness --------------------------------------------------------------------

export const SIM_PATH = join(repoRoot(), 'dist', 'test', 'support', 'gateway-sim.js');

export interface LiveOptions {
  dir: string;
  seed: number;
  sessions: number;
  agents: number;
  /** How long passes run, back to back with short pauses. */
  durationMs: number;
  /**
   * At least this many passes, even past durationMs: on a loaded machine each pass takes
   * longer, and the run gets longer instead of thinner (the last ones at the final max_age_days).
   */
  minPasses?: number;
  /** Simulator alone before the first pass and after the last (the no-pass baseline). */
  idleMs: number;
  /** max_age_days falls from the first to the last value over the run. */
  maxAgeDays: [number, number];
  /** Pause between passes (ms), drawn from this range. */
  passGapMs: [number, number];
  turnGapMs: number;
  oldShare: number;
  /**
   * seahorse.db converted to auto_vacuum INCREMENTAL before the run (as the pre-start pass's VACUUM
   * does with shrink_online): every online pass then gives the free pages back (src/prune/apply/shrink.ts).
   */
  shrink?: boolean;
  onPass?: (p: PassLog) => void;
}

export interface PassLog {
  i: number;
  maxAgeDays: number;
  start: number;
  end: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  report: PruneJson | null;
  deleted: { dir: string; base: string; key: string | null }[];
  changed: { dir: string; base: string; key: string | null; detail: string | null }[];
}

export interface LatencyStats {
  count: number;
  maxMs: number;
  p99Ms: number;
  p50Ms: number;
}

export interface LiveRun {
  home: SampleHome;
  passes: PassLog[];
  turns: TurnLog[];
  failures: string[];
  figures: {
    runMs: number;
    passes: number;
    passMs: number;
    deletedSessions: number;
    keptChangedSincePlan: number;
    longestGuardWriteMs: number;
    guardTransactions: number;
    turns: number;
    turnsDuringPasses: number;
    oldTurns: number;
    oldTurnsDuringPasses: number;
    writerFailures: Record<string, number>;
    /**
     * Context-item writes refused after the simulator paused at least ONLINE_QUIET_MS between its
     * message commit and that write (ms each): not a failure of the guard's rule, which is about a
     * turn that writes in one burst.
     */
    ctxRefusedAfterPauseMs: number[];
    seahorseWrite: { duringPasses: LatencyStats; noPass: LatencyStats };
    /** The slowest seahorse write of the run, and the pass it overlapped (with that pass's longest transaction). */
    slowestSeahorseWrite: { ms: number; step: string; pass: number | null; passLongestWriteMs: number | null };
    fileWrite: { duringPasses: LatencyStats; noPass: LatencyStats };
    /**
     * Lines appended to a session while a pass deleted it, and lost with it (the accepted race:
     * docs/picoclaw.md#rules-for-a-separate-pruner).
     */
    raceLostLines: number;
    raceAppendsIntoUnlinkedFile: number;
    /** Appends that came after a pass deleted the session: PicoClaw recreates it; the line is there. */
    recreatedAfterDelete: number;
    /** seahorse messages the simulator committed that a pass deleted with their conversation (same race). */
    raceLostSeahorseMessages: number;
    /** Kept (changed since plan) sessions whose seahorse conversation the pass had already deleted. */
    keptWithoutConversation: number;
    danglingRows: number;
    /** Online shrink over the run: passes that gave pages back, bytes, steps, the longest step's lock. */
    shrink: { passes: number; returnedBytes: number; steps: number; longestStepMs: number };
  };
}

function stats(xs: number[]): LatencyStats {
  if (xs.length === 0) return { count: 0, maxMs: 0, p99Ms: 0, p50Ms: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const r = (x: number) => Math.round(x * 10) / 10;
  return { count: s.length, maxMs: r(s[s.length - 1]!), p99Ms: r(q(0.99)), p50Ms: r(q(0.5)) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Children still running when a run is abandoned (a failed assertion, a timeout): killed by stopChildren. */
const running = new Set<ChildProcess>();

export function stopChildren(): void {
  for (const c of running) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  running.clear();
  killRunningPasses();
}

function startSim(cfg: SimConfig): Promise<{ child: ChildProcess; port: number }> {
  assertBuilt();
  if (!existsSync(SIM_PATH))
    throw new Error(`${SIM_PATH} is missing: run npm run build (tsc compiles it with bench/live-gateway-soak.ts)`);
  return new Promise((resolve, reject) => {
    // argv0 names it PicoClaw in /proc, where the guard checks that a silent PID is the gateway's.
    const child = spawn(process.execPath, [SIM_PATH, JSON.stringify(cfg)], {
      argv0: 'picoclaw-gateway-sim',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the gateway simulator did not start: ${err}`));
    }, 20_000);
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          const msg = JSON.parse(out.slice(0, nl)) as { ready?: boolean; port?: number };
          if (msg.ready && msg.port) resolve({ child, port: msg.port });
          else reject(new Error(`unexpected simulator output ${out}`));
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the gateway simulator exited (${code ?? signal}) before it was ready: ${err}`));
    });
  });
}

function runPass(
  home: string,
  stateDir: string,
  maxAgeDays: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        CLI_PATH,
        'prune',
        '--apply',
        '--json',
        '--home',
        home,
        '--state-dir',
        stateDir,
        '--max-age-days',
        String(maxAgeDays),
        '--max-sessions',
        '0',
        '--max-db-size-mb',
        '0',
      ],
      { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export async function runLiveGateway(o: LiveOptions): Promise<LiveRun> {
  const t0 = clock();
  mkdirSync(o.dir, { recursive: true });
  const home = buildSampleHome({
    dir: join(o.dir, 'home'),
    seed: o.seed,
    sessions: o.sessions,
    agents: o.agents,
    now: Date.now(),
    pidFile: 'none',
    spanDays: 120,
  });
  const stateDir = join(o.dir, 'state');
  const logPath = join(o.dir, 'gateway-sim.log');
  if (o.shrink) {
    const db = new (sqlite())(home.seahorsePath!);
    db.pragma('auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  const dirs = home.agents.map((a) => a.sessionsDir);
  const dirOfAgent = new Map(home.agents.map((a) => [a.id, a.sessionsDir]));
  const cfg: SimConfig = {
    home: home.home,
    dbPath: home.seahorsePath!,
    sessionsDirs: dirs,
    log: logPath,
    seed: o.seed,
    turnGapMs: o.turnGapMs,
    oldShare: o.oldShare,
    oldDays: o.maxAgeDays[1],
    maxRunMs: o.durationMs + 2 * o.idleMs + 120_000,
  };
  const passes: PassLog[] = [];
  const failures: string[] = [];
  // Each key's conversation before the run, to tell which kept sessions lost theirs.
  const convAtStart = new Map<string, number>();
  for (const c of dump(home.seahorsePath!).conversations!)
    convAtStart.set(String(c.session_key), Number(c.conversation_id));
  const { child: sim } = await startSim(cfg);
  running.add(sim);
  const simExit = new Promise<number | null>((resolve) => sim.on('exit', (code) => resolve(code)));
  let simErr = '';
  sim.stderr!.on('data', (c: string) => (simErr += c));
  try {
    await sleep(o.idleMs);
    const rng = new Rng(o.seed + 101);
    const begin = clock();
    for (let i = 0; clock() - begin < o.durationMs || i < (o.minPasses ?? 0); i++) {
      const f = Math.min(1, (clock() - begin) / o.durationMs);
      const age = Math.max(o.maxAgeDays[1], Math.round(o.maxAgeDays[0] - (o.maxAgeDays[0] - o.maxAgeDays[1]) * f));
      // Old turns now go to this pass's victims (sessions older than its cutoff).
      if (sim.connected) sim.send({ victimsBefore: Date.now() - age * 86_400_000 });
      const start = clock();
      const r = await runPass(home.home, stateDir, age);
      const end = clock();
      let report: PruneJson | null = null;
      try {
        report = JSON.parse(r.stdout) as PruneJson;
      } catch {
        report = null;
      }
      const where = (s: { agent: string; file: string }) => ({ dir: dirOfAgent.get(s.agent) ?? '?', base: s.file });
      const p: PassLog = {
        i,
        maxAgeDays: age,
        start,
        end,
        code: r.code,
        signal: r.signal,
        stderr: r.stderr.slice(0, 2000),
        report,
        deleted: (report?.sessions ?? [])
          .filter((s) => s.action === 'delete')
          .map((s) => ({ ...where(s), key: s.key })),
        changed: (report?.sessions ?? [])
          .filter((s) => s.reason === 'changed_since_plan')
          .map((s) => ({ ...where(s), key: s.key, detail: s.detail })),
      };
      passes.push(p);
      o.onPass?.(p);
      await sleep(rng.int(o.passGapMs[0], o.passGapMs[1]));
    }
    await sleep(o.idleMs);
  } finally {
    sim.kill('SIGTERM');
    const timer = setTimeout(() => sim.kill('SIGKILL'), 20_000);
    const code = await simExit;
    clearTimeout(timer);
    running.delete(sim);
    if (code !== 0) failures.push(`the gateway simulator exited ${code}: ${simErr.slice(0, 2000)}`);
  }
  const runMs = clock() - t0;

  // --- What the simulator did -----------------------------------------------------
  const turns: TurnLog[] = [];
  for (const l of readFileSync(logPath, 'utf8').split('\n')) {
    if (!l) continue;
    const rec = JSON.parse(l) as SimLog;
    if (rec.kind === 'turn') turns.push(rec);
  }
  const during = (a: number, b: number) => passes.some((p) => a <= p.end && b >= p.start);
  const passAt = (t: number) => passes.find((p) => t >= p.start && t <= p.end) ?? null;

  // The passes: each online (gateway ready), none with VACUUM, each ok or partial.
  let longest = 0;
  let txns = 0;
  const shrink = { passes: 0, returnedBytes: 0, steps: 0, longestStepMs: 0 };
  for (const p of passes) {
    const r = p.report;
    if (!r) {
      failures.push(`pass ${p.i} died (${p.signal ?? p.code}) without a report: ${p.stderr}`);
      continue;
    }
    if (r.skipped) failures.push(`pass ${p.i} was skipped: ${r.skipped}`);
    if (r.gateway?.state !== 'ready')
      failures.push(`pass ${p.i} saw the gateway ${r.gateway?.state} (${r.gateway?.reason}), not ready`);
    if (r.database.vacuum?.ran) failures.push(`pass ${p.i} ran VACUUM while the gateway was ready`);
    if (r.exit_code !== 0 && r.exit_code !== 7) failures.push(`pass ${p.i} exited ${r.exit_code}`);
    const other = r.sessions.filter(
      (s) =>
        s.action === 'keep' && ['delete_failed', 'not_writable', 'interrupted', 'archive_failed'].includes(s.reason),
    );
    for (const s of other.slice(0, 5)) failures.push(`pass ${p.i} kept ${s.key}: ${s.reason} ${s.detail ?? ''}`);
    longest = Math.max(longest, r.database.longest_write_ms ?? 0);
    txns += r.database.transactions ?? 0;
    const sh = r.database.shrink;
    if (sh?.ran) {
      shrink.passes++;
      shrink.returnedBytes += sh.returned_bytes;
      shrink.steps += sh.steps;
      shrink.longestStepMs = Math.max(shrink.longestStepMs, sh.longest_step_ms);
    }
  }
  if (o.shrink && shrink.passes === 0) failures.push('no pass gave space back online (shrink on)');
  if (shrink.longestStepMs >= 5000)
    failures.push(`an online shrink step held the write lock for ${shrink.longestStepMs} ms, past busy_timeout`);
  if (longest >= 5000)
    failures.push(`the guard held a write transaction for ${longest} ms, past the gateway's busy_timeout`);

  // Writer failures: any error in any step, but one. The guard takes seahorse.db's lock only once no
  // other connection has committed for ONLINE_QUIET_MS (src/prune/apply/write-lock.ts), so a context-item
  // write can meet it only when the simulator itself paused that long after its message commit (a
  // process descheduled on a loaded machine): such a refusal is counted apart, with its pause, and one
  // that came sooner after the commit is a failure.
  const writerFailures: Record<string, number> = {};
  const slowestFailure: Record<string, number> = {};
  const ctxAfterPause: number[] = [];
  let failedDuringPasses = 0;
  for (const t of turns) {
    for (const step of ['jsonl', 'meta', 'conv', 'msg', 'ctx'] as const) {
      const s = t[step];
      if (step === 'ctx' && s.err && String(s.code).startsWith('SQLITE_BUSY')) {
        const pause = s.t0 + s.ms - (t.msg.t0 + t.msg.ms);
        if (pause >= ONLINE_QUIET_MS) {
          ctxAfterPause.push(Math.round(pause * 10) / 10);
          continue;
        }
      }
      if (s.err) {
        const k = `${step}: ${s.code ?? 'error'}: ${s.err}`;
        writerFailures[k] = (writerFailures[k] ?? 0) + 1;
        slowestFailure[k] = Math.max(slowestFailure[k] ?? 0, s.ms);
        if (during(s.t0, s.t0 + s.ms)) failedDuringPasses++;
      }
    }
  }
  for (const [k, n] of Object.entries(writerFailures))
    failures.push(
      `writer failure x${n}: ${k} (each after at most ${Math.round(slowestFailure[k]! * 10) / 10}` +
        ` ms; ${failedDuringPasses} of all failures fell inside a pass)`,
    );

  // Latency: seahorse writes (conversation, message, context item) and file writes (append, meta).
  const sea = { duringPasses: [] as number[], noPass: [] as number[] };
  let slowest = { ms: 0, step: '', pass: null as number | null, passLongestWriteMs: null as number | null };
  const file = { duringPasses: [] as number[], noPass: [] as number[] };
  for (const t of turns) {
    for (const step of ['conv', 'msg', 'ctx'] as const) {
      const s = t[step];
      if (s.t0 === 0) continue;
      (during(s.t0, s.t0 + s.ms) ? sea.duringPasses : sea.noPass).push(s.ms);
      if (s.ms > slowest.ms) {
        const p = passes.find((q) => s.t0 <= q.end && s.t0 + s.ms >= q.start) ?? null;
        slowest = {
          ms: Math.round(s.ms * 10) / 10,
          step,
          pass: p?.i ?? null,
          passLongestWriteMs: p?.report?.database.longest_write_ms ?? null,
        };
      }
    }
    for (const step of ['jsonl', 'meta'] as const) {
      const s = t[step];
      (during(s.t0, s.t0 + s.ms) ? file.duringPasses : file.noPass).push(s.ms);
    }
  }

  // Lost appends: every line the simulator appended must be in the session's .jsonl at the end,
  // unless a pass deleted that session while the append was in flight (the accepted race).
  const finalLines = new Map<string, Set<string>>();
  const linesOf = (dir: string, base: string) => {
    const path = join(dir, `${base}.jsonl`);
    let set = finalLines.get(path);
    if (!set) {
      set = new Set(existsSync(path) ? readFileSync(path, 'utf8').split('\n') : []);
      finalLines.set(path, set);
    }
    return set;
  };
  const deletedBy = (p: PassLog, t: TurnLog) => p.deleted.some((d) => d.dir === t.dir && d.base === t.base);
  let raceLost = 0;
  let raceUnlinked = 0;
  let recreated = 0;
  for (const t of turns) {
    if (t.jsonl.err) continue;
    if (t.jsonl.unlinkedUnder) raceUnlinked++;
    const present = linesOf(t.dir, t.base).has(t.line);
    const p = passAt(t.t) ?? passAt(t.tEnd);
    const racing = p !== null && deletedBy(p, t);
    if (present) {
      if (racing) recreated++;
      continue;
    }
    if (racing) raceLost++;
    else
      failures.push(
        `lost append: turn ${t.seq} to ${t.key} (${relative(home.home, t.dir)}/${t.base}` +
          `.jsonl) at ${new Date(t.t).toISOString()} is not in the file, and no pass deleted that session while it was written`,
      );
  }
  // A deleted session must not have had a message before the pass that deleted it started
  // (the plan would then be stale), counting from its previous deletion.
  for (const p of passes) {
    for (const d of p.deleted) {
      const prev = passes
        .filter((q) => q.end < p.start && q.deleted.some((x) => x.dir === d.dir && x.base === d.base))
        .map((q) => q.end);
      const since = prev.length ? Math.max(...prev) : -Infinity;
      const stale = turns.filter(
        (t) => t.dir === d.dir && t.base === d.base && t.t > since && t.tEnd < p.start && !t.jsonl.err,
      );
      for (const t of stale.slice(0, 3))
        failures.push(`pass ${p.i} deleted ${d.key}, which received turn ${t.seq} before the pass started`);
    }
  }

  // seahorse: every committed message is still there, unless the same race took it.
  const dbPath = home.seahorsePath!;
  const finalDump = dump(dbPath);
  const msgIds = new Set(finalDump.messages!.map((m) => Number(m.message_id)));
  const convIds = new Set(finalDump.conversations!.map((c) => Number(c.conversation_id)));
  let raceLostMsgs = 0;
  for (const t of turns) {
    if (t.msg.id === null || t.msg.err || msgIds.has(t.msg.id)) continue;
    const p = passAt(t.msg.t0) ?? passAt(t.msg.t0 + t.msg.ms);
    if (p && (deletedBy(p, t) || p.changed.some((c) => c.dir === t.dir && c.base === t.base))) raceLostMsgs++;
    else
      failures.push(
        `lost seahorse message ${t.msg.id} (turn ${t.seq}, ${t.key}) outside any pass that touched that session`,
      );
  }
  // A session kept because it changed mid-pass may have lost its seahorse rows already
  // (rows go first, the files' re-check comes after): count those whose conversation is gone.
  let keptWithoutConversation = 0;
  for (const p of passes) {
    for (const c of p.changed) {
      if (c.key === null) continue;
      const before = turns.filter(
        (t) => t.dir === c.dir && t.base === c.base && t.conv.id !== null && t.conv.t0 < p.end,
      );
      const conv = before.length ? before[before.length - 1]!.conv.id! : convAtStart.get(c.key);
      if (conv !== undefined && !convIds.has(conv)) keptWithoutConversation++;
    }
  }
  const integ = integrity(dbPath);
  if (integ.ok !== 'ok') failures.push(`integrity_check after the run: ${integ.ok}`);
  if (!integ.ftsMessagesMatch || !integ.ftsSummariesMatch)
    failures.push(
      `FTS tables out of step after the run (messages ${integ.ftsMessagesMatch}, summaries ${integ.ftsSummariesMatch})`,
    );

  const passMs = passes.reduce((n, p) => n + (p.end - p.start), 0);
  return {
    home,
    passes,
    turns,
    failures,
    figures: {
      runMs: Math.round(runMs),
      passes: passes.length,
      passMs: Math.round(passMs),
      deletedSessions: passes.reduce((n, p) => n + p.deleted.length, 0),
      keptChangedSincePlan: passes.reduce((n, p) => n + p.changed.length, 0),
      longestGuardWriteMs: longest,
      guardTransactions: txns,
      turns: turns.length,
      turnsDuringPasses: turns.filter((t) => during(t.t, t.tEnd)).length,
      oldTurns: turns.filter((t) => t.old).length,
      oldTurnsDuringPasses: turns.filter((t) => t.old && during(t.t, t.tEnd)).length,
      writerFailures,
      ctxRefusedAfterPauseMs: ctxAfterPause,
      seahorseWrite: { duringPasses: stats(sea.duringPasses), noPass: stats(sea.noPass) },
      slowestSeahorseWrite: slowest,
      fileWrite: { duringPasses: stats(file.duringPasses), noPass: stats(file.noPass) },
      raceLostLines: raceLost,
      raceAppendsIntoUnlinkedFile: raceUnlinked,
      recreatedAfterDelete: recreated,
      raceLostSeahorseMessages: raceLostMsgs,
      keptWithoutConversation,
      danglingRows: danglingRows(finalDump).length,
      shrink,
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cfg = JSON.parse(process.argv[2] ?? '{}') as SimConfig;
  simMain(cfg).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`gateway-sim: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
