/**
 * The memory shape: peak RSS of each command at 2,000, 20,000, 50,000 and
 * 100,000 sessions and on homes whose seahorse message ids are sparse, for two builds in the
 * same rounds (today's and the new one, runs alternating), the growth from the smallest size
 * to the largest, the wall time at 20,000 sessions as a ratio, and one verdict line per goal.
 * Each figure comes from a separate CLI process (GNU time %M, else VmHWM polled); `prune
 * --apply` and the daemon's pass run on a fresh copy of the home each time.
 *
 * The final round, after the redesign merges (today's build in /tmp/pcg-base, see below):
 *
 *   npm run -s build:all
 *   node dist/bench/memory-shape.js --cli /tmp/pcg-base/dist/src/cli.js --homes /var/tmp/pcg-homes \
 *     --sessions 2000,20000,50000,100000 --sparse 20000:15000000,20000:100000000 --runs 3 --big-runs 2 \
 *     --apply-max 20000 --md /tmp/mem.md --json /tmp/mem.json
 *   node dist/bench/memory-shape.js --cli /tmp/pcg-base/dist/src/cli.js --homes /var/tmp/pcg-homes \
 *     --sessions '' --sparse '' --held-out random --held-sizes 5000,50000 --runs 2 --apply-max 5000 \
 *     --md /tmp/mem-held.md --json /tmp/mem-held.json
 *
 * (the second prints its seed; a round in parts renders as one with --from A.json,B.json --md FILE).
 *
 * Today's build: mkdir /tmp/pcg-base && git archive 84cd951 | tar -x -C /tmp/pcg-base,
 * ln -s /work/main/node_modules /tmp/pcg-base/node_modules, then in it
 * `npx tsc -p tsconfig.json && node scripts/postbuild.mjs`.
 *
 * Options: --cli OLD (today's build), --new NEW (default: this tree's dist/src/cli.js), --sessions
 * LIST ('' for none), --sparse LIST of SESSIONS:MAXID (a copy of that size's home with its message
 * ids spread up to MAXID; '' for none), --runs N, --big-runs N (runs at 50,000 sessions and
 * more), --only "sessions,prune --json", --no-daemon, --apply-max N (prune --apply and the daemon's
 * pass only on homes of at most N sessions: their time grows with what they delete), --held-out
 * SEED (or "random"), --held-sizes LIST, --homes DIR (homes kept between runs), --tmp DIR (the
 * copies for --apply), --md FILE,
 * --json FILE, --from FILE[,FILE...] (render saved --json runs again, merged: a round done in parts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { buildHome, CLI, cliEnv, hasGnuTime, machine, machineLine, markdownTable, renderTable, ROOT } from './lib.js';
import { runChild, setTmpBase, tmpBase, treeBytes, type BenchContext, type BuiltHome } from './lib.js';
import {
  DAEMON_OWN,
  heldOutShape,
  mergeRuns,
  parseRun,
  tables,
  verdicts,
  type Build,
  type HeldShape,
  type HomeInfo,
  type Sample,
  type ShapeRun,
} from './memory-shape-lib.js';
import { spreadMessageIds } from './sparse-ids.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : def;
}
const list = (s: string) => s.split(',').filter(Boolean);

function render(run: ShapeRun, md: string): void {
  const ts = tables(run);
  const vs = verdicts(run);
  for (const t of ts) process.stdout.write('\n' + renderTable(t) + '\n');
  process.stdout.write('\n');
  for (const v of vs) process.stdout.write(`verdict: ${v.status.toUpperCase()}: ${v.goal}: ${v.detail}\n`);
  const notes = [
    run.machine,
    `measured by ${run.measuredBy}; ${run.runs} run(s) a cell (fewer at 50,000 sessions and more when --big-runs says so)`,
    `today = ${run.clis.old}; new = ${run.clis.new}; runs alternate between the two in each round`,
    `round took ${(run.durationMs / 60_000).toFixed(1)} min, started ${run.started}`,
    ...(run.heldOut ? [`held-out seed ${run.heldOut.seed}: ${JSON.stringify(run.heldOut.shape)}`] : []),
  ];
  for (const n of notes) process.stdout.write(`note: ${n}\n`);
  if (md)
    writeFileSync(
      md,
      ts.map((t) => `**${t.title}**\n\n${markdownTable(t)}\n`).join('\n') +
        '\n' +
        vs.map((v) => `- **${v.status}**: ${v.goal}: ${v.detail}`).join('\n') +
        '\n\n' +
        notes.map((n) => `- ${n}`).join('\n') +
        '\n',
    );
}

const from = arg('from', '');
if (from) {
  render(mergeRuns(list(from).map((f) => parseRun(readFileSync(f, 'utf8')))), arg('md', ''));
  process.exit(0);
}

const OLD = resolve(arg('cli', CLI));
const NEW = resolve(arg('new', CLI));
const SIZES = list(arg('sessions', '2000,20000,50000,100000')).map(Number);
const SPARSE = list(arg('sparse', '20000:15000000,20000:100000000')).map((s) => {
  const [n, m] = s.split(':').map(Number);
  if (!n || !m) throw new Error(`--sparse wants SESSIONS:MAXID, got ${s}`);
  return { sessions: n, maxId: m };
});
const RUNS = Number(arg('runs', '2'));
const BIG_RUNS = Number(arg('big-runs', String(RUNS)));
const ONLY = list(arg('only', ''));
const DAEMON = !process.argv.includes('--no-daemon');
/** The writing runs (prune --apply, the daemon's pass) only on homes of at most this many sessions. */
const APPLY_MAX = Number(arg('apply-max', 'Infinity'));
const heldArg = arg('held-out', '');
const HELD_SEED = heldArg === '' ? null : heldArg === 'random' ? randomInt(1, 2 ** 31 - 1) : Number(heldArg);
const HELD_SIZES = list(arg('held-sizes', '5000,50000')).map(Number);
const HOMES = arg('homes', '');
setTmpBase(arg('tmp', '/var/tmp'));
const ctx: BenchContext = {
  quick: false,
  runs: RUNS,
  tmp: tmpBase(),
  keep: false,
  cold: false,
  log: (l) => process.stderr.write(l + '\n'),
};
/** The shape of bench/memory.ts's homes (BENCHMARKS.md section 10): the same cache folders. */
const SHAPE = {
  agents: 3,
  messagesPerSession: 12,
  seahorse: true,
  seahorseContentBytes: 1024,
  spanDays: 120,
  toolResultBytes: 4500,
  restarts: 40,
} as const;
const BOARD = join(ROOT, 'test/fixtures/boards/pi4');

interface Home {
  info: HomeInfo;
  built: BuiltHome;
}

/** A copy of a home; config.json names its workspaces by absolute path, so they are pointed at the copy. */
function copyHome(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
  const cfg = join(to, 'config.json');
  writeFileSync(
    cfg,
    readFileSync(cfg, 'utf8').split(JSON.stringify(from).slice(1, -1)).join(JSON.stringify(to).slice(1, -1)),
  );
}

function maxIdOf(b: BuiltHome): number {
  if (!b.seahorsePath) return 0;
  const r = spawnSyncNode(
    `const D=require('better-sqlite3');const d=new D(${JSON.stringify(b.seahorsePath)},{readonly:true});` +
      `console.log(d.prepare('SELECT MAX(message_id) m FROM messages').get().m??0)`,
  );
  return Number(r);
}

/** In a child, so that the measuring process never opens a database it measures on. */
function spawnSyncNode(code: string): string {
  return execFileSync(process.execPath, ['-e', code], { cwd: ROOT, encoding: 'utf8' }).trim();
}

const cacheDir = (name: string) => (HOMES ? join(HOMES, name) : mkdtempSync(join(tmpBase(), `${name}-`)));

function infoOf(id: string, kind: HomeInfo['kind'], b: BuiltHome): HomeInfo {
  return {
    id,
    kind,
    sessions: b.sessions,
    messages: b.messages,
    maxId: maxIdOf(b),
    diskBytes: treeBytes(b.home).bytes,
  };
}

async function cached(name: string, kind: HomeInfo['kind'], make: (home: string) => Promise<BuiltHome>): Promise<Home> {
  const dir = cacheDir(name);
  const file = join(dir, 'built.json');
  const infoFile = join(dir, 'shape-info.json');
  let built: BuiltHome;
  if (existsSync(file)) built = JSON.parse(readFileSync(file, 'utf8')) as BuiltHome;
  else {
    mkdirSync(dir, { recursive: true });
    rmSync(join(dir, 'home'), { recursive: true, force: true });
    built = await make(join(dir, 'home'));
    writeFileSync(file, JSON.stringify(built));
  }
  let info: HomeInfo;
  if (existsSync(infoFile)) info = JSON.parse(readFileSync(infoFile, 'utf8')) as HomeInfo;
  else {
    info = infoOf(name, kind, built);
    if (HOMES) writeFileSync(infoFile, JSON.stringify(info));
  }
  ctx.log(
    `  home ${name}: ${info.sessions} sessions, ${info.messages} messages, max id ${info.maxId}, ` +
      `${(info.diskBytes / 2 ** 20).toFixed(0)} MiB on disk`,
  );
  return { info: { ...info, id: name, kind }, built };
}

const sizeHome = (n: number) =>
  cached(`h${n}`, 'size', (home) => buildHome(ctx, `memory-${n}`, { ...SHAPE, sessions: n }, home));

/** A copy of a size step's home, its message ids spread up to about maxId. */
async function sparseHome(n: number, maxId: number, base: Home, kind: HomeInfo['kind'] = 'sparse', name?: string) {
  return cached(name ?? `sparse-h${n}-max${maxId}`, kind, async (home) => {
    ctx.log(`  spreading the message ids of ${base.info.id} up to ${maxId} ...`);
    copyHome(base.built.home, home);
    const sp = spreadMessageIds(join(home, 'workspace', 'sessions', 'seahorse.db'), maxId, n ^ maxId);
    ctx.log(`  ${sp.messages} messages, max id ${sp.denseMaxId} → ${sp.maxId}`);
    return {
      ...base.built,
      home,
      seahorsePath: join(home, 'workspace', 'sessions', 'seahorse.db'),
    };
  });
}

async function heldHome(seed: number, shape: HeldShape, n: number): Promise<Home> {
  const name = `held-${seed}-h${n}`;
  const dense = await cached(`${name}-dense`, 'held', (home) =>
    buildHome(ctx, `held-${seed}-${n}`, { ...shape.build, sessions: n }, home),
  );
  if (shape.idGap <= 1) return { ...dense, info: { ...dense.info, id: name } };
  return sparseHome(n, Math.round(dense.info.messages * shape.idGap), dense, 'held', name);
}

// ---------------------------------------------------------------------------------------------
// Runs

interface Cmd {
  name: string;
  args: (home: string, state: string) => string[];
  /** Runs on a fresh copy of the home (it deletes). */
  writes?: boolean;
  okCodes?: number[];
}

const CMDS: Cmd[] = [
  { name: 'sessions', args: (h) => ['sessions', '--home', h] },
  { name: 'sessions --json', args: (h) => ['sessions', '--home', h, '--json'] },
  { name: 'prune', args: (h, s) => ['prune', '--home', h, '--state-dir', s] },
  { name: 'prune --json', args: (h, s) => ['prune', '--home', h, '--state-dir', s, '--json'] },
  { name: 'prune --wide', args: (h, s) => ['prune', '--home', h, '--state-dir', s, '--wide'] },
  // Exit 7: the pass stopped between two sessions (its memory budget): marked in the table.
  {
    name: 'prune --apply',
    args: (h, s) => ['prune', '--apply', '--home', h, '--state-dir', s],
    writes: true,
    okCodes: [0, 7],
  },
];

const samples: Sample[] = [];

/**
 * Each build runs as bin/picoclaw-guard runs it (and the units, through NODE_OPTIONS): gc exposed for the
 * collections at the end of a phase, a 2 MiB young generation, one V8 platform thread, one malloc arena.
 * An older build that exposed gc itself runs the same with the flag.
 */
const LAUNCHER_FLAGS = ['--expose-gc', '--max-semi-space-size=2', '--v8-pool-size=1'];
const launcherEnv = (state: string): NodeJS.ProcessEnv => ({ ...cliEnv(state), MALLOC_ARENA_MAX: '1' });

async function runCmd(build: Build, c: Cmd, h: Home): Promise<void> {
  const cli = build === 'old' ? OLD : NEW;
  const scratch = mkdtempSync(join(tmpBase(), 'run-'));
  const state = join(scratch, 'state');
  let home = h.built.home;
  if (c.writes) {
    home = join(scratch, 'home');
    copyHome(h.built.home, home);
  }
  const r = await runChild(process.execPath, [...LAUNCHER_FLAGS, cli, ...c.args(home, state)], {
    env: launcherEnv(state),
    capture: false,
    timeoutMs: 30 * 60_000,
  });
  rmSync(scratch, { recursive: true, force: true });
  if (r.code === null || !(c.okCodes ?? [0]).includes(r.code))
    throw new Error(`${c.name} (${cli}) on ${h.info.id} exited ${r.code ?? r.signal}: ${r.stderr.slice(-1500)}`);
  const s: Sample = { build, home: h.info.id, cmd: c.name, rssKb: r.rssKb, wallMs: r.wallMs, load: loadavg()[0]! };
  if (r.code === 7) s.stopped = true;
  samples.push(s);
  log(s);
}

async function warm(h: Home): Promise<void> {
  const scratch = mkdtempSync(join(tmpBase(), 'warm-'));
  const state = join(scratch, 'state');
  await runChild(process.execPath, [...LAUNCHER_FLAGS, OLD, ...CMDS[3]!.args(h.built.home, state)], {
    env: launcherEnv(state),
    capture: false,
    rss: false,
    timeoutMs: 30 * 60_000,
  });
  rmSync(scratch, { recursive: true, force: true });
}

function log(s: Sample): void {
  ctx.log(
    `  ${s.home.padEnd(26)} ${s.cmd.padEnd(38)} ${s.rssKb === null ? '-' : (s.rssKb / 1024).toFixed(1).padStart(7)} MiB` +
      ` ${(s.wallMs / 1000).toFixed(2).padStart(8)} s  load ${s.load.toFixed(2)}  ${s.build}`,
  );
}

function vmHwm(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const c = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
      if (c) out.push(...c.split(/\s+/).map(Number));
    }
  } catch {
    // gone
  }
  return out;
}

/** The daemon's first pass (prune enabled, at start): the pass child's VmHWM and the daemon's own. */
async function daemon(build: Build, h: Home): Promise<void> {
  const cli = build === 'old' ? OLD : NEW;
  const scratch = mkdtempSync(join(tmpBase(), 'daemon-'));
  const home = join(scratch, 'home');
  copyHome(h.built.home, home);
  writeFileSync(join(scratch, 'guard.json'), JSON.stringify({ prune: { enabled: true } }));
  const child = spawn(
    process.execPath,
    [
      ...LAUNCHER_FLAGS,
      cli,
      'run',
      '--home',
      home,
      '--state-dir',
      join(scratch, 'state'),
      '--config',
      join(scratch, 'guard.json'),
      '--port',
      '0',
      '--sys-root',
      join(BOARD, 'sys'),
      '--proc-root',
      join(BOARD, 'proc'),
      '--vcgencmd',
      join(BOARD, 'vcgencmd'),
    ],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PICOGUARD_NO_SYSTEM_STATE: '1', MALLOC_ARENA_MAX: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (out += d));
  let err = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (err = (err + d).slice(-1500)));
  let passHwm = 0;
  const poll = setInterval(() => {
    for (const c of childrenOf(child.pid!)) passHwm = Math.max(passHwm, vmHwm(c) ?? 0);
  }, 10);
  const t0 = performance.now();
  try {
    // The pass at start ends with a log line naming its outcome; its child is gone then.
    while (!/"msg":"prune pass"/.test(out) || childrenOf(child.pid!).length > 0) {
      if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}: ${out.slice(-1500)}${err}`);
      if (performance.now() - t0 > 30 * 60_000) throw new Error('no pass within 30 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    clearInterval(poll);
  }
  const wall = performance.now() - t0;
  const own = vmHwm(child.pid!);
  const passLine = out.split('\n').find((l) => l.includes('"msg":"prune pass"')) ?? '';
  const outcome = /"outcome":"(\w+)"/.exec(passLine)?.[1] ?? '?';
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(scratch, { recursive: true, force: true });
  if (outcome === 'failed') throw new Error(`the daemon's pass failed on ${h.info.id} (${cli}): ${passLine}`);
  const load = loadavg()[0]!;
  for (const s of [
    { build, home: h.info.id, cmd: "daemon's pass child", rssKb: passHwm || null, wallMs: wall, load },
    { build, home: h.info.id, cmd: DAEMON_OWN, rssKb: own, wallMs: wall, load },
  ]) {
    samples.push(s);
    log(s);
  }
}

const t0 = performance.now();
const m = machine(tmpBase());
const measuredBy = hasGnuTime() ? 'GNU time %M' : 'VmHWM polled every 5 ms';
ctx.log(`memory shape: ${machineLine(m)}\nmeasured by ${measuredBy}; today ${OLD}; new ${NEW}`);
const homes: Home[] = [];
const sizeHomes = new Map<number, Home>();
for (const n of SIZES) {
  const h = await sizeHome(n);
  sizeHomes.set(n, h);
  homes.push(h);
}
for (const s of SPARSE) {
  const base = sizeHomes.get(s.sessions) ?? (await sizeHome(s.sessions));
  homes.push(await sparseHome(s.sessions, s.maxId, base));
}
let held: ShapeRun['heldOut'];
if (HELD_SEED !== null) {
  const shape = heldOutShape(HELD_SEED);
  held = { seed: HELD_SEED, shape };
  ctx.log(`held-out seed ${HELD_SEED}: ${JSON.stringify(shape)}`);
  for (const n of HELD_SIZES) homes.push(await heldHome(HELD_SEED, shape, n));
}
const want = (name: string) => !ONLY.length || ONLY.includes(name);
const maxRuns = Math.max(RUNS, BIG_RUNS);
for (let i = 0; i < maxRuns; i++) {
  // Alternate which build goes first, so that neither always runs on a warmer cache.
  const order: Build[] = i % 2 === 0 ? ['old', 'new'] : ['new', 'old'];
  for (const h of homes) {
    if (i >= (h.info.sessions >= 50_000 ? BIG_RUNS : RUNS)) continue;
    // The first read of a home fills the page cache: without this, whichever build ran first on
    // it paid that alone (several times the warm time on the large homes). Not recorded.
    if (i === 0) await warm(h);
    const writes = h.info.sessions <= APPLY_MAX;
    for (const c of CMDS) if (want(c.name) && (writes || !c.writes)) for (const b of order) await runCmd(b, c, h);
    if (DAEMON && writes && want("daemon's pass child")) for (const b of order) await daemon(b, h);
  }
}
const run: ShapeRun = {
  version: 1,
  started: m.date,
  durationMs: Math.round(performance.now() - t0),
  machine: machineLine(m),
  measuredBy,
  clis: { old: OLD, new: NEW },
  runs: RUNS,
  homes: homes.map((h) => h.info),
  samples,
  ...(held ? { heldOut: held } : {}),
};
render(run, arg('md', ''));
const json = JSON.stringify(run);
if (arg('json', '')) writeFileSync(arg('json', ''), json + '\n');
process.stdout.write(json + '\n');
rmSync(tmpBase(), { recursive: true, force: true });
if (!HOMES) for (const h of homes) rmSync(join(h.built.home, '..'), { recursive: true, force: true });
