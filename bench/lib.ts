import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SampleOptions } from '../dev/sample/builder.js';
import type { BuiltHome } from './build-home.js';

/**
 * Shared pieces of the benchmark suite (BENCHMARKS.md): child processes measured from the
 * outside (wall time in this process, peak RSS from the kernel via GNU time's %M, or
 * VmHWM polled from /proc when GNU time is missing), medians, tables, temp folders.
 *
 * Every figure comes from a separate process: the measuring process never reports its
 * own memory, and the one being measured never measures itself.
 */

/** The repository root (this file is dist/bench/lib.js once compiled). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist', 'src', 'cli.js');
export const BENCH_DIST = join(ROOT, 'dist', 'bench');

export interface BenchContext {
  quick: boolean;
  /** Timed runs per figure (the median is reported). */
  runs: number;
  /** Parent of the temporary homes. */
  tmp: string;
  keep: boolean;
  /** Also measure planning with the page cache dropped (root only). */
  cold: boolean;
  log: (line: string) => void;
}

export interface Table {
  title: string;
  headers: string[];
  rows: string[][];
  /** Right-align these columns (numbers). */
  right?: number[];
  notes?: string[];
}

export type Status = 'met' | 'missed' | 'not measured' | 'info';

export interface Verdict {
  goal: string;
  status: Status;
  detail: string;
}

export interface BenchResult {
  id: string;
  item: number;
  title: string;
  command: string;
  tables: Table[];
  verdicts: Verdict[];
  notes: string[];
  durationMs: number;
  /** Raw figures, for --json. */
  data?: unknown;
}

// ---------------------------------------------------------------------------------------------
// Child processes

export interface ChildRun {
  wallMs: number;
  /** Peak resident set size of the child, kB (kernel's maxrss / VmHWM). */
  rssKb: number | null;
  userMs: number | null;
  sysMs: number | null;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ChildOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Keep stdout (default: discarded, written to /dev/null by the child). */
  capture?: boolean;
  /** Measure peak RSS (wraps the command in GNU time; default true). */
  rss?: boolean;
  timeoutMs?: number;
  /** Print the child's stderr as it comes (long runs). */
  passStderr?: boolean;
}

const GNU_TIME = '/usr/bin/time';
let gnuTimeOk: boolean | undefined;

/** GNU time is there and is GNU (BusyBox time has no -o/-f %M on some boards). */
export function hasGnuTime(): boolean {
  if (gnuTimeOk === undefined) {
    const r = existsSync(GNU_TIME) ? spawnSync(GNU_TIME, ['-f', '%M', 'true'], { encoding: 'utf8' }) : null;
    gnuTimeOk = !!r && r.status === 0 && /^\d+\s*$/.test(r.stderr.trim().split('\n').pop() ?? '');
  }
  return gnuTimeOk;
}

let seq = 0;

/** Run a command to its end; wall time measured here, peak RSS from the kernel. */
export function runChild(cmd: string, args: string[], o: ChildOptions = {}): Promise<ChildRun> {
  const wantRss = o.rss ?? true;
  const useTime = wantRss && hasGnuTime();
  const timeFile = useTime ? join(tmpBase(), `time-${process.pid}-${seq++}.txt`) : null;
  const file = useTime ? GNU_TIME : cmd;
  const argv = useTime ? ['-f', '%M %U %S', '-o', timeFile!, cmd, ...args] : args;
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const t0 = performance.now();
    const child = spawn(file, argv, {
      env: o.env ?? process.env,
      cwd: o.cwd,
      stdio: ['ignore', o.capture ? 'pipe' : 'ignore', 'pipe'],
    });
    let hwm: number | null = null;
    let poll: NodeJS.Timeout | null = null;
    if (wantRss && !useTime && child.pid) {
      // Fallback: the kernel's high-water mark of the child, read while it runs (misses a
      // spike in its last few milliseconds; GNU time does not).
      const pid = child.pid;
      poll = setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          if (m) hwm = Math.max(hwm ?? 0, Number(m[1]));
        } catch {
          // gone
        }
      }, 5);
    }
    let timer: NodeJS.Timeout | null = null;
    if (o.timeoutMs) timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => {
      err.push(b);
      if (o.passStderr) process.stderr.write(b);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const wallMs = performance.now() - t0;
      if (poll) clearInterval(poll);
      if (timer) clearTimeout(timer);
      let rssKb = hwm;
      let userMs: number | null = null;
      let sysMs: number | null = null;
      let exit = code;
      if (timeFile) {
        try {
          const lines = readFileSync(timeFile, 'utf8').trim().split('\n');
          const last = lines[lines.length - 1]!.trim().split(/\s+/);
          rssKb = Number(last[0]);
          userMs = Math.round(Number(last[1]) * 1000);
          sysMs = Math.round(Number(last[2]) * 1000);
          const st = lines.find((l) => l.startsWith('Command exited with non-zero status'));
          if (st) exit = Number(st.split(' ').pop());
          if (lines.some((l) => l.startsWith('Command terminated by signal'))) exit = null;
        } catch {
          // the child never started
        }
        rmSync(timeFile, { force: true });
      }
      resolve({
        wallMs,
        rssKb,
        userMs,
        sysMs,
        code: exit,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** Run and insist on the expected exit codes; returns the run. */
export async function runOk(
  cmd: string,
  args: string[],
  o: ChildOptions & { okCodes?: number[] } = {},
): Promise<ChildRun> {
  const r = await runChild(cmd, args, o);
  const ok = o.okCodes ?? [0];
  if (r.code === null || !ok.includes(r.code)) {
    throw new Error(`${cmd} ${args.join(' ')} exited with ${r.code ?? r.signal}: ${r.stderr.slice(-2000)}`);
  }
  return r;
}

/** A node child running one of our compiled bench scripts, its last stdout line parsed as JSON. */
export async function runBenchScript<T>(
  script: string,
  args: string[],
  o: ChildOptions & { nodeArgs?: string[] } = {},
): Promise<{ run: ChildRun; out: T }> {
  const r = await runOk(process.execPath, [...(o.nodeArgs ?? []), join(BENCH_DIST, script), ...args], {
    ...o,
    capture: true,
  });
  const lines = r.stdout.trim().split('\n');
  return { run: r, out: JSON.parse(lines[lines.length - 1]!) as T };
}

/**
 * The environment for the CLI under test: nothing from the caller's PicoClaw or guard
 * set-up leaks in (PICOCLAW_HOME, policy variables, config file), and state goes to a
 * temp folder instead of /var/lib.
 */
export function cliEnv(stateDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('PICOCLAW') || k.startsWith('PICOGUARD') || k === 'STATE_DIRECTORY' || k.startsWith('npm_'))
      continue;
    env[k] = v;
  }
  env.STATE_DIRECTORY = stateDir;
  return env;
}

// ---------------------------------------------------------------------------------------------
// Numbers

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms >= 100_000) return `${(ms / 1000).toFixed(0)} s`;
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

export function fmtBytes(b: number | null | undefined): string {
  if (b === null || b === undefined || !Number.isFinite(b)) return '-';
  const neg = b < 0;
  let v = Math.abs(b);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${neg ? '-' : ''}${i === 0 ? v.toFixed(0) : v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

export function fmtRss(kb: number | null | undefined): string {
  if (kb === null || kb === undefined) return '-';
  return `${(kb / 1024).toFixed(1)} MiB`;
}

export function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return '-';
  return x >= 100 ? `${x.toFixed(0)}x` : x >= 10 ? `${x.toFixed(1)}x` : `${x.toFixed(2)}x`;
}

export function fmtInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '-';
  return Math.round(n).toLocaleString('en-US');
}

/** "median (min-max)" of a few runs. */
export function fmtSpread(xs: number[], f: (x: number) => string = fmtMs): string {
  if (xs.length === 0) return '-';
  if (xs.length === 1) return f(xs[0]!);
  return `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
}

// ---------------------------------------------------------------------------------------------
// Tables

export function renderTable(t: Table): string {
  const all = [t.headers, ...t.rows];
  const w = t.headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const right = new Set(t.right ?? []);
  const line = (r: string[]) =>
    r
      .map((c, i) => (right.has(i) ? c.padStart(w[i]!) : c.padEnd(w[i]!)))
      .join('  ')
      .trimEnd();
  const out = [t.title, line(t.headers), w.map((n) => '-'.repeat(n)).join('  '), ...t.rows.map(line)];
  for (const n of t.notes ?? []) out.push(`  ${n}`);
  return out.join('\n');
}

export function markdownTable(t: Table): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const right = new Set(t.right ?? []);
  const out = [
    `| ${t.headers.map(esc).join(' | ')} |`,
    `| ${t.headers.map((_, i) => (right.has(i) ? '---:' : '---')).join(' | ')} |`,
  ];
  for (const r of t.rows) out.push(`| ${r.map(esc).join(' | ')} |`);
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Temp folders and disk

let base: string | undefined;

export function setTmpBase(dir: string): void {
  mkdirSync(dir, { recursive: true });
  base = mkdtempSync(join(dir, 'pcg-bench-'));
}

export function tmpBase(): string {
  if (!base) throw new Error('tmp base not set');
  return base;
}

export function tempDir(name: string): string {
  return mkdtempSync(join(tmpBase(), `${name}-`));
}

export function removeDir(dir: string, ctx: BenchContext): void {
  if (!ctx.keep) rmSync(dir, { recursive: true, force: true });
}

export function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

/** Bytes of files under dir whose name passes the filter (recursive, no symlinks followed). */
export function treeBytes(
  dir: string,
  filter: (name: string) => boolean = () => true,
): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && filter(e.name)) {
        bytes += statSync(p).size;
        files++;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}

/** Drop the page cache (cold-cache runs). Root only; returns false when not allowed. */
export function dropCaches(): boolean {
  try {
    spawnSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3\n');
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The machine

export interface Machine {
  date: string;
  cpus: number;
  cpuModel: string;
  ramBytes: number;
  node: string;
  kernel: string;
  disk: string;
  sqlite: string | null;
  /** 1-minute load average when the run started (other work on the machine shows here). */
  load: number;
}

function cpuModel(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    for (const key of ['model name', 'Model', 'uarch', 'isa', 'Hardware', 'cpu model']) {
      const m = new RegExp(`^${key}\\s*:\\s*(.+)$`, 'mi').exec(info);
      if (m) return m[1]!.trim();
    }
  } catch {
    // not Linux
  }
  return 'unknown';
}

/** The block device under a folder and whether it spins (sysfs queue/rotational). */
function diskOf(dir: string): string {
  try {
    const r = spawnSync('findmnt', ['-n', '-o', 'SOURCE,FSTYPE', '--target', dir], { encoding: 'utf8' });
    const [source, fstype] = r.stdout.trim().split(/\s+/);
    if (!source) return 'unknown';
    const dev = source.replace(/^\/dev\//, '');
    const blk = dev.replace(/p?\d+$/, '');
    let kind = '';
    for (const name of [dev, blk]) {
      const rot = `/sys/block/${name}/queue/rotational`;
      if (existsSync(rot)) {
        kind = readFileSync(rot, 'utf8').trim() === '1' ? 'rotational' : 'non-rotational';
        const model = `/sys/block/${name}/device/model`;
        if (existsSync(model)) kind += `, ${readFileSync(model, 'utf8').trim()}`;
        else if (name.startsWith('vd')) kind += ', virtio block device';
        else if (name.startsWith('mmcblk')) kind += ', SD/eMMC';
        break;
      }
    }
    return `${source} (${fstype ?? '?'}${kind ? `, ${kind}` : ''})`;
  } catch {
    return 'unknown';
  }
}

export function machine(tmpDir: string): Machine {
  let sqliteVersion: string | null = null;
  try {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        "const D=require('better-sqlite3');const d=new D(':memory:');console.log(d.prepare('select " +
          "sqlite_version() v').get().v)",
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    sqliteVersion = r.stdout.trim() || null;
  } catch {
    sqliteVersion = null;
  }
  let bsq = '';
  try {
    bsq = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
  } catch {
    bsq = '?';
  }
  return {
    date: new Date().toISOString(),
    cpus: availableParallelism(),
    cpuModel: cpuModel(),
    ramBytes: totalmem(),
    node: process.version,
    kernel: release(),
    disk: diskOf(tmpDir),
    sqlite: sqliteVersion ? `SQLite ${sqliteVersion} (better-sqlite3 ${bsq})` : null,
    load: loadavg()[0]!,
  };
}

export function machineLine(m: Machine): string {
  return (
    `${m.cpus} CPU (${m.cpuModel}), ${fmtBytes(m.ramBytes)} RAM, Node ${m.node}` +
    `, Linux ${m.kernel}, temp disk ${m.disk}${m.sqlite ? `, ${m.sqlite}` : ''}` +
    `; load average ${m.load.toFixed(2)} at the start`
  );
}

// ---------------------------------------------------------------------------------------------
// Sample homes

export type { BuiltHome };

/** Build a sample home in a child process (bench/build-home.ts); `now` is the real clock. */
export async function buildHome(
  ctx: BenchContext,
  label: string,
  opts: Omit<SampleOptions, 'dir'>,
  dir?: string,
): Promise<BuiltHome> {
  const home = dir ?? join(tempDir(label), 'home');
  const t0 = performance.now();
  ctx.log(`  building ${label} ...`);
  const { out } = await runBenchScript<BuiltHome>(
    'build-home.js',
    [JSON.stringify({ now: Date.now(), seed: 8, ...opts, dir: home })],
    { rss: false, nodeArgs: ['--max-old-space-size=6144'] },
  );
  ctx.log(
    `  built ${label}: ${fmtInt(out.sessions)} sessions, ${fmtBytes(out.jsonlBytes)}` +
      ` JSONL, seahorse.db ${fmtBytes(out.seahorseBytes)} (${fmtInt(out.messages)}` +
      ` messages) in ${fmtMs(performance.now() - t0)}`,
  );
  return out;
}
