import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { buildSampleHome, type SampleHome } from '../../dev/sample/builder.js';
import { assertBuilt, CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';
import { board } from '../health/boards.js';

/**
 * Helpers for the daemon tests: the real `picoclaw-guard run` (dist/, built by the global
 * setup) as a child process on a free loopback port (--port 0; the port is read from its
 * "listening" log line), against a sample home, a fixture board, and a fake gateway served
 * by the test process. Every daemon still running after a test is killed.
 */
export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface Daemon {
  child: ChildProcess;
  pid: number;
  port: number;
  logs: LogLine[];
  stderr: () => string;
  stdout: () => string;
  get(path: string, headers?: Record<string, string>, method?: string): Promise<Reply>;
  json(path: string): Promise<{ status: number; body: any }>;
  waitForLog(pred: (l: LogLine) => boolean, timeoutMs?: number, from?: number): Promise<LogLine>;
  /** Send a signal and wait for the exit; ms from the signal to the exit. */
  stop(
    signal?: NodeJS.Signals,
    timeoutMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: ChildProcess[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const c of running.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

export const PROMTOOL =
  ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p)) ??
  (spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim() || null);

/** `promtool check metrics` on a text; returns its output ('' when clean). Throws if promtool is absent. */
export function promtoolCheckMetrics(text: string): { code: number; output: string } {
  if (!PROMTOOL) throw new Error('promtool is not installed');
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}`.trim() };
}

export function httpGet(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** A fake PicoClaw gateway in this process: /ready answers `ready`, /health answers 200. */
export async function fakeGateway(ready: 200 | 503 = 200): Promise<number> {
  const s = createServer((req, res) => {
    if (req.url === '/ready') res.writeHead(ready).end(ready === 200 ? '{"status":"ready"}' : '{"status":"not ready"}');
    else res.writeHead(200).end(JSON.stringify({ status: 'ok', pid: process.pid }));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

/** A fake vcgencmd that counts its invocations in a file and prints `word`. */
export function countingVcgencmd(dir: string, word = '0x50000'): { path: string; count: () => number } {
  const path = join(dir, 'vcgencmd');
  const counter = join(dir, 'vcgencmd.count');
  writeFileSync(
    path,
    `#!/bin/sh\n[ "$#" -eq 1 ] && [ "$1" = get_throttled ] || exit 2\necho x >> '${counter}'\necho throttled=${word}\n`,
  );
  chmodSync(path, 0o755);
  return {
    path,
    count: () => (existsSync(counter) ? readFileSync(counter, 'utf8').split('\n').filter(Boolean).length : 0),
  };
}

export interface SampleOpts {
  sessions?: number;
  seed?: number;
  /** Port of a fake gateway (a live PID file: this process); undefined: a stale PID file (gateway down). */
  gatewayPort?: number;
}

export function sampleHome(o: SampleOpts = {}): SampleHome & { root: string } {
  const root = tempDir('pcg-daemon-');
  const home = buildSampleHome({
    dir: join(root, 'home'),
    seed: o.seed ?? 7,
    sessions: o.sessions ?? 40,
    now: Date.now(),
    restarts: 4,
    logLevel: 'info',
    logEvents: true,
    pidFile: o.gatewayPort ? { pid: process.pid, port: o.gatewayPort } : 'stale',
  });
  return { ...home, root };
}

export function writeConfig(dir: string, config: Record<string, unknown>): string {
  const p = join(dir, 'guard.json');
  writeFileSync(p, JSON.stringify(config, null, 2));
  return p;
}

export interface StartOpts {
  home: string;
  stateDir: string;
  config?: string;
  /** Fixture board for sysfs/procfs (default pi4). */
  board?: 'pi4' | 'pi4-undervoltage' | 'pi5' | 'x86-vm';
  vcgencmd?: string | null;
  env?: NodeJS.ProcessEnv;
  args?: string[];
  /** Resolve as soon as the process is spawned (for runs expected to fail at start). */
  noWait?: boolean;
}

export function daemonEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
    PICOGUARD_NO_SYSTEM_STATE: '1',
    ...extra,
  };
}

export async function startDaemon(o: StartOpts): Promise<Daemon> {
  assertBuilt();
  const b = board(o.board ?? 'pi4');
  const vcg = o.vcgencmd === undefined ? b.vcgencmd : o.vcgencmd;
  const args = [
    CLI,
    'run',
    '--home',
    o.home,
    '--state-dir',
    o.stateDir,
    '--port',
    '0',
    '--sys-root',
    b.sys,
    '--proc-root',
    b.proc,
    ...(vcg ? ['--vcgencmd', vcg] : []),
    ...(o.config ? ['--config', o.config] : []),
    ...(o.args ?? []),
  ];
  const child = spawn(process.execPath, args, { env: daemonEnv(o.env), stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  const logs: LogLine[] = [];
  let out = '';
  let err = '';
  let partial = '';
  const waiters: { pred: (l: LogLine) => boolean; from: number; resolve: (l: LogLine) => void }[] = [];
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    out += d;
    partial += d;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      if (!line.trim()) continue;
      let parsed: LogLine;
      try {
        parsed = JSON.parse(line) as LogLine;
      } catch {
        parsed = { level: 0, msg: `(not JSON) ${line}` };
      }
      logs.push(parsed);
      for (const w of [...waiters]) {
        if (logs.length - 1 >= w.from && w.pred(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  });
  child.stderr.on('data', (d: string) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );

  const waitForLog = (pred: (l: LogLine) => boolean, timeoutMs = 20_000, from = 0): Promise<LogLine> => {
    const hit = logs.slice(from).find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no matching log line within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`)),
        timeoutMs,
      );
      waiters.push({ pred, from, resolve: (l) => (clearTimeout(t), resolve(l)) });
      void exited.then(({ code, signal }) => {
        clearTimeout(t);
        reject(
          new Error(
            `the daemon exited (code ${code}, signal ${signal}) before the log line; stdout:\n${out}\nstderr:\n${err}`,
          ),
        );
      });
    });
  };

  let port = 0;
  if (!o.noWait) {
    const l = await waitForLog((x) => x.msg === 'listening');
    port = Number(l.port);
  }
  const d: Daemon = {
    child,
    pid: child.pid!,
    port,
    logs,
    stderr: () => err,
    stdout: () => out,
    get: (path, headers, method) => httpGet(d.port, path, headers, method),
    json: async (path) => {
      const r = await httpGet(d.port, path);
      return { status: r.status, body: JSON.parse(r.body) };
    },
    waitForLog,
    exited,
    stop: async (signal = 'SIGTERM', timeoutMs = 15_000) => {
      const t0 = performance.now();
      child.kill(signal);
      const t = new Promise<never>((_, rej) =>
        setTimeout(() => rej(new Error(`no exit within ${timeoutMs} ms after ${signal}`)), timeoutMs).unref(),
      );
      const r = await Promise.race([exited, t]);
      return { ...r, ms: performance.now() - t0 };
    },
  };
  return d;
}

/** A metric's value from a Prometheus text (the first series whose labels include `labels`). */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const l = m[3] ?? '';
    if (Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))) return Number(m[4]);
  }
  return null;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Wait until the daemon has finished `n` more background refreshes (of its health readings)
 * than when called. The refresh timer re-arms only after a refresh (and the rebuild of the
 * replies and textfile it ends with) is done, so this waits on the daemon's own timeline,
 * whatever the load: any timer it armed for an earlier moment has had its turn.
 */
export async function refreshes(d: Pick<Daemon, 'get'>, n: number, timeoutMs = 60_000): Promise<string> {
  const count = (text: string) => metric(text, 'picoclaw_guard_refresh_total', { source: 'health' }) ?? 0;
  const start = count((await d.get('/metrics')).body);
  return until(async () => {
    const text = (await d.get('/metrics')).body;
    return count(text) >= start + n ? text : null;
  }, timeoutMs);
}

/** Poll until `fn` returns a truthy value. */
export async function until<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}
