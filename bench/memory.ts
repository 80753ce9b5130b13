/**
 * Peak memory of every command at 2,000 and 20,000 sessions (12 messages per session,
 * ~200k seahorse messages at 20,000), from the kernel (GNU time's %M, else VmHWM polled),
 * each run a separate CLI process. `prune --apply` runs on a fresh copy of the home each
 * time. The daemon is measured idle (after its first pass) and during a pass: its own
 * VmHWM, the pass child's VmHWM, and, where a cgroup v1 memory controller or a cgroup v2
 * folder can be created (root), the peak of the two together as the unit's MemoryMax
 * counts it (memory.max_usage_in_bytes / memory.peak).
 *
 *   npm run build
 *   node dist/bench/memory.js [--sessions 2000,20000] [--runs 2] [--cli dist/src/cli.js] [--homes DIR] [--tmp DIR]
 *   [--only "sessions,prune --json,daemon"]
 *   [--md FILE]
 *
 * --cli points at another build (an older commit) to compare "before" and "after" in the
 * same rounds; --homes keeps the built homes there between runs (built once per size).
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { makeCgroup, type Cgroup } from './cgroup.js';
import {
  buildHome,
  CLI,
  cliEnv,
  fmtInt,
  fmtMs,
  fmtRss,
  hasGnuTime,
  machine,
  machineLine,
  markdownTable,
  median,
  renderTable,
  ROOT,
  runChild,
  setTmpBase,
  tmpBase,
  type BenchContext,
  type BuiltHome,
  type Table,
} from './lib.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

const SIZES = arg('sessions', '2000,20000').split(',').map(Number);
const RUNS = Number(arg('runs', '2'));
/**
 * A CLI to measure: its path, or `SETTINGS::path`, where SETTINGS are Node flags and NAME=value
 * environment variables as the units and the launcher set them (e.g.
 * `--max-semi-space-size=2 MALLOC_ARENA_MAX=1::dist/src/cli.js`).
 */
const CLIS = arg('cli', CLI)
  .split(',')
  .map((p) => (p.includes('::') ? `${p.split('::')[0]}::${resolve(p.split('::')[1]!)}` : resolve(p)));
const cliPath = (c: string) => (c.includes('::') ? c.split('::')[1]! : c);
const settings = (c: string) => (c.includes('::') ? c.split('::')[0]!.split(' ').filter(Boolean) : []);
const isEnv = (t: string) => /^[A-Z_][A-Z0-9_]*=/.test(t);
const nodeArgs = (c: string) => settings(c).filter((t) => !isEnv(t));
const envOf = (c: string): Record<string, string> =>
  Object.fromEntries(
    settings(c)
      .filter(isEnv)
      .map((t) => [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)]),
  );
const HOMES = arg('homes', '');
const ONLY = arg('only', '');
setTmpBase(arg('tmp', tmpdir()));
const ctx: BenchContext = {
  quick: false,
  runs: RUNS,
  tmp: tmpBase(),
  keep: false,
  cold: false,
  log: (l) => process.stderr.write(l + '\n'),
};
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

async function homeOf(n: number): Promise<BuiltHome> {
  const dir = HOMES ? join(HOMES, `h${n}`) : mkdtempSync(join(tmpBase(), `mem-${n}-`));
  const info = join(dir, 'built.json');
  if (HOMES && existsSync(info)) return JSON.parse(readFileSync(info, 'utf8')) as BuiltHome;
  const b = await buildHome(ctx, `memory-${n}`, { ...SHAPE, sessions: n }, join(dir, 'home'));
  writeFileSync(info, JSON.stringify(b));
  return b;
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

interface Cmd {
  name: string;
  args: (home: string, state: string, scratch: string) => string[];
  /** Runs on a fresh copy of the home (it deletes). */
  writes?: boolean;
  okCodes?: number[];
}

const CMDS: Cmd[] = [
  { name: 'sessions', args: (h) => ['sessions', '--home', h] },
  { name: 'sessions --json', args: (h) => ['sessions', '--home', h, '--json'] },
  { name: 'prune', args: (h, s) => ['prune', '--home', h, '--state-dir', s] },
  { name: 'prune --json', args: (h, s) => ['prune', '--home', h, '--state-dir', s, '--json'] },
  // Exit 7: the pass stopped between two sessions (its memory budget, PICOGUARD_PASS_MEMORY_MB): marked in the table.
  {
    name: 'prune --apply',
    args: (h, s) => ['prune', '--apply', '--home', h, '--state-dir', s],
    writes: true,
    okCodes: [0, 7],
  },
  {
    name: 'prune --apply --archive',
    args: (h, s, x) => ['prune', '--apply', '--home', h, '--state-dir', s, '--archive', join(x, 'archive')],
    writes: true,
    okCodes: [0, 7],
  },
  {
    name: 'health',
    args: (h, s) => [
      'health',
      '--home',
      h,
      '--state-dir',
      s,
      '--sys-root',
      join(BOARD, 'sys'),
      '--proc-root',
      join(BOARD, 'proc'),
      '--vcgencmd',
      join(BOARD, 'vcgencmd'),
    ],
    okCodes: [0, 1, 2, 3, 10, 11, 12],
  },
  { name: 'startup', args: (h, s) => ['startup', '--home', h, '--state-dir', s] },
];

interface Fig {
  rss: number[];
  wall: number[];
}
const figs = new Map<string, Fig>();
/** Runs that stopped early (exit 7: the pass's memory budget, or a refusal the report names). */
const stopped = new Set<string>();
const put = (key: string, rss: number | null, wall: number) => {
  const f = figs.get(key) ?? { rss: [], wall: [] };
  if (rss !== null) f.rss.push(rss);
  f.wall.push(wall);
  figs.set(key, f);
};

async function runCmd(cli: string, c: Cmd, b: BuiltHome): Promise<void> {
  const scratch = mkdtempSync(join(tmpBase(), 'run-'));
  const state = join(scratch, 'state');
  let home = b.home;
  if (c.writes) {
    home = join(scratch, 'home');
    copyHome(b.home, home);
  }
  const r = await runChild(process.execPath, [...nodeArgs(cli), cliPath(cli), ...c.args(home, state, scratch)], {
    env: { ...cliEnv(state), ...envOf(cli) },
    capture: false,
    timeoutMs: 30 * 60_000,
  });
  rmSync(scratch, { recursive: true, force: true });
  if (r.code === null || !(c.okCodes ?? [0]).includes(r.code))
    throw new Error(
      `${c.name} (${cli}) on ${b.sessions} sessions exited ${r.code ?? r.signal}: ${r.stderr.slice(-1500)}`,
    );
  put(`${cli}|${b.sessions}|${c.name}`, r.rssKb, r.wallMs);
  if (r.code === 7) stopped.add(`${cli}|${b.sessions}|${c.name}`);
  ctx.log(
    `  ${String(b.sessions).padStart(6)} ${c.name.padEnd(24)} ${fmtRss(r.rssKb).padStart(10)}` +
      ` ${fmtMs(r.wallMs).padStart(9)}  ${cli}`,
  );
}

// ---------------------------------------------------------------------------------------------
// The daemon: `run` with prune enabled beside a fake ready gateway; the first pass runs at start.

function vm(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
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

/** The daemon's VmRSS after waiting `ms`. */
async function settle(pid: number, ms: number): Promise<number | null> {
  await new Promise((r) => setTimeout(r, ms));
  return vm(pid, 'VmRSS');
}

async function daemon(cli: string, b: BuiltHome): Promise<void> {
  const scratch = mkdtempSync(join(tmpBase(), 'daemon-'));
  const home = join(scratch, 'home');
  copyHome(b.home, home);
  writeFileSync(join(scratch, 'guard.json'), JSON.stringify({ prune: { enabled: true } }));
  // The unit's MemoryMax, as a hard limit: the pass must finish inside it, daemon included.
  const cg: Cgroup | null = makeCgroup(`pcg-bench-${process.pid}-${Date.now()}`, 256 * 1024 * 1024);
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs(cli),
      cliPath(cli),
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
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PICOGUARD_NO_SYSTEM_STATE: '1', ...envOf(cli) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (cg) cg.add(child.pid!);
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (out += d));
  let err = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (err = (err + d).slice(-1500)));
  let passHwm = 0;
  const poll = setInterval(() => {
    for (const c of childrenOf(child.pid!)) passHwm = Math.max(passHwm, vm(c, 'VmHWM') ?? 0);
  }, 10);
  const t0 = performance.now();
  // The pass at start ends with a log line naming its outcome.
  while (!/"msg":"prune pass"/.test(out) || childrenOf(child.pid!).length > 0) {
    if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}: ${out.slice(-1500)}${err}`);
    if (performance.now() - t0 > 30 * 60_000) throw new Error('no pass within 30 minutes');
    await new Promise((r) => setTimeout(r, 50));
  }
  const wall = performance.now() - t0;
  clearInterval(poll);
  // Idle: what the daemon alone holds once settled. V8's memory reducer gives the pages of the
  // daemon's start and of the pass's report back about 8 s after them (--gc-memory-reducer-start-delay-ms):
  // 3 s after the pass is still before it (5 MiB more), 12 s is what the daemon holds between passes.
  const justAfter = await settle(child.pid!, 3000);
  const idle = await settle(child.pid!, 9000);
  const hwm = vm(child.pid!, 'VmHWM');
  const peakB = cg ? cg.peakBytes() : null;
  const together = peakB === null ? null : Math.round(peakB / 1024);
  const ooms = cg ? cg.oomKills() : 0;
  const passLine = out.split('\n').find((l) => l.includes('"msg":"prune pass"')) ?? '';
  const outcome = /"outcome":"(\w+)"/.exec(passLine)?.[1] ?? '?';
  if (ooms > 0 || outcome === 'failed')
    throw new Error(`the daemon's pass did not finish under MemoryMax=256M: ${ooms} OOM kill(s), outcome ${outcome}`);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  cg?.remove();
  rmSync(scratch, { recursive: true, force: true });
  put(`${cli}|${b.sessions}|daemon 3 s after the pass`, justAfter, wall);
  put(`${cli}|${b.sessions}|daemon idle (12 s after the pass)`, idle, wall);
  put(`${cli}|${b.sessions}|daemon during the pass (its own peak)`, hwm, wall);
  put(`${cli}|${b.sessions}|daemon's pass child`, passHwm || null, wall);
  if (together !== null) put(`${cli}|${b.sessions}|daemon + pass (cgroup peak, page cache in)`, together, wall);
  ctx.log(
    `  ${String(b.sessions).padStart(6)} daemon (MemoryMax 256M: ${cg ? 'cgroup' : 'none'}` +
      `, pass ${outcome}) idle ${fmtRss(idle)}, own peak ${fmtRss(hwm)}, pass child ` +
      `${fmtRss(passHwm)}, cgroup ${fmtRss(together)}  ${cli}`,
  );
}

const m = machine(tmpBase());
process.stderr.write(
  `memory bench: ${machineLine(m)}\nmeasured by ${hasGnuTime() ? 'GNU time %M' : 'VmHWM polled'}` +
    `; CLIs: ${CLIS.join(', ')}\n`,
);
const homes: BuiltHome[] = [];
for (const n of SIZES) homes.push(await homeOf(n));
const names = [
  ...CMDS.map((c) => c.name),
  'daemon 3 s after the pass',
  'daemon idle (12 s after the pass)',
  'daemon during the pass (its own peak)',
  "daemon's pass child",
  'daemon + pass (cgroup peak, page cache in)',
];
for (let i = 0; i < RUNS; i++) {
  for (const b of homes) {
    for (const c of CMDS) {
      if (ONLY && !ONLY.split(',').includes(c.name)) continue;
      for (const cli of CLIS) await runCmd(cli, c, b);
    }
    if (!ONLY || ONLY.split(',').includes('daemon')) for (const cli of CLIS) await daemon(cli, b);
  }
}
const loadEnd = (await import('node:os')).loadavg()[0]!;
const headers = [
  'command',
  ...homes.flatMap((b) =>
    CLIS.map(
      (c, i) =>
        `${fmtInt(b.sessions)} sessions / ${fmtInt(b.messages)} msgs${CLIS.length > 1 ? ` [${String.fromCharCode(65 + i)}]` : ''}`,
    ),
  ),
];
const rows: string[][] = [];
const timeRows: string[][] = [];
for (const n of names) {
  const keys = homes.flatMap((b) => CLIS.map((c) => `${c}|${b.sessions}|${n}`));
  const cells = keys.map((k) => figs.get(k));
  if (cells.every((f) => !f)) continue;
  rows.push([
    n,
    ...cells.map((f, i) =>
      f && f.rss.length ? `${fmtRss(Math.max(...f.rss))}${stopped.has(keys[i]!) ? ' (stopped: exit 7)' : ''}` : '-',
    ),
  ]);
  timeRows.push([n, ...cells.map((f) => (f ? fmtMs(median(f.wall)) : '-'))]);
}
const tables: Table[] = [
  { title: `Peak RSS (max of ${RUNS} runs)`, headers, rows, right: headers.map((_, i) => i).slice(1) },
  { title: `Wall time (median of ${RUNS} runs)`, headers, rows: timeRows, right: headers.map((_, i) => i).slice(1) },
];
const notes = [
  `CLIs: ${CLIS.map((c, i) => `${CLIS.length > 1 ? `[${String.fromCharCode(65 + i)}] ` : ''}${c}`).join('; ')}`,
  `load average ${m.load.toFixed(2)} at the start, ${loadEnd.toFixed(2)} at the end`,
  `measured by ${hasGnuTime() ? 'GNU time %M' : 'VmHWM polled every 5 ms'}`,
];
for (const t of tables) process.stdout.write('\n' + renderTable(t) + '\n');
for (const n of notes) process.stdout.write(`note: ${n}\n`);
const md = arg('md', '');
if (md)
  writeFileSync(
    md,
    tables.map((t) => `**${t.title}**\n\n${markdownTable(t)}\n`).join('\n') +
      '\n' +
      notes.map((n) => `- ${n}`).join('\n') +
      '\n',
  );
process.stdout.write(JSON.stringify({ machine: m, runs: RUNS, clis: CLIS, figures: Object.fromEntries(figs) }) + '\n');
rmSync(tmpBase(), { recursive: true, force: true });
if (!HOMES) for (const b of homes) rmSync(join(b.home, '..'), { recursive: true, force: true });
mkdirSync(tmpBase(), { recursive: true });
rmSync(tmpBase(), { recursive: true, force: true });
