/**
 * The status page's cost, measured from outside the daemon: `GET /` latency at a fixed
 * 10 requests per second (open loop, send to last byte), the page's size, and the daemon's
 * resident memory idle with the reading history full (PICOGUARD_TEST_HISTORY_FILL=full:
 * 24 h of synthetic readings at the default 30 s refresh). With `--compare DIR` the same
 * run is made at the same time against another build (DIR/dist/src/cli.js, e.g. the
 * commit before the status page), so both see the same machine load.
 *
 *   npm run build && node dist/bench/status-page.js [--seconds 60] [--compare /tmp/old-build]
 *
 * Prints a table and, last, one JSON line with every figure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSampleHome } from '../dev/sample/builder.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const opt = (name: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const seconds = Number(opt('--seconds') ?? 60);
const compare = opt('--compare');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const gw = createServer((req, res) =>
  res.writeHead(200).end(req.url === '/ready' ? '{"status":"ready"}' : `{"status":"ok","pid":${process.pid}}`),
);
await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
const gwPort = (gw.address() as AddressInfo).port;

interface Run {
  name: string;
  child: ChildProcess;
  dir: string;
  lines: Record<string, unknown>[];
}

function start(name: string, cli: string): Run {
  const dir = mkdtempSync(join(tmpdir(), 'pcg-bench-page-'));
  buildSampleHome({
    dir: join(dir, 'home'),
    seed: 1,
    sessions: 500,
    now: Date.now(),
    restarts: 12,
    logLevel: 'info',
    logEvents: true,
    pidFile: { pid: process.pid, port: gwPort },
  });
  writeFileSync(join(dir, 'guard.json'), JSON.stringify({ prune: { enabled: true } }));
  const board = join(root, 'test/fixtures/boards/pi4');
  const child = spawn(
    process.execPath,
    [
      cli,
      'run',
      '--home',
      join(dir, 'home'),
      '--state-dir',
      join(dir, 'state'),
      '--config',
      join(dir, 'guard.json'),
      '--port',
      '0',
      '--sys-root',
      join(board, 'sys'),
      '--proc-root',
      join(board, 'proc'),
      '--vcgencmd',
      join(board, 'vcgencmd'),
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PICOGUARD_NO_SYSTEM_STATE: '1',
        PICOGUARD_TEST_HISTORY_FILL: 'full',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const run: Run = { name, child, dir, lines: [] };
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      try {
        run.lines.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>);
      } catch {
        // not a log line
      }
      buf = buf.slice(i + 1);
    }
  });
  return run;
}

async function waitFor(r: Run, msg: string): Promise<Record<string, unknown>> {
  for (;;) {
    const hit = r.lines.find((l) => l.msg === msg);
    if (hit) return hit;
    await sleep(50);
  }
}

const rssMb = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Requests at a fixed rate (open loop), latency from send to last byte. */
async function load(port: number, path: string, secs: number, perSecond: number) {
  const lat: number[] = [];
  let bytes = 0;
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < secs * perSecond; i++) {
    const wait = t0 + (i * 1000) / perSecond - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      new Promise<void>((resolve) => {
        const s = performance.now();
        const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('end', () => {
            lat.push(performance.now() - s);
            resolve();
          });
        });
        req.on('error', () => resolve());
        req.end();
      }),
    );
  }
  await Promise.all(pending);
  lat.sort((a, b) => a - b);
  const q = (p: number) => +lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(2);
  return {
    n: lat.length,
    p50: q(0.5),
    p99: q(0.99),
    max: +lat[lat.length - 1]!.toFixed(2),
    bytes: Math.round(bytes / Math.max(1, lat.length)),
  };
}

const runs = [
  start('this build', join(root, 'dist/src/cli.js')),
  ...(compare ? [start(`compare (${compare})`, join(compare, 'dist/src/cli.js'))] : []),
];
const ports = await Promise.all(runs.map(async (r) => Number((await waitFor(r, 'listening')).port)));
await Promise.all(runs.map((r) => waitFor(r, 'prune pass')));
await sleep(10_000);
// Idle RSS: the median of 13 samples 5 s apart, taken from both daemons at the same moments.
const rss: number[][] = runs.map(() => []);
for (let i = 0; i < 13; i++) {
  runs.forEach((r, j) => rss[j]!.push(rssMb(r.child.pid!)));
  await sleep(5000);
}
const median = (xs: number[]) => +[...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
const results = [];
for (const [j, r] of runs.entries()) {
  const page = await load(ports[j]!, '/', seconds, 10);
  const health = await load(ports[j]!, '/health', Math.min(seconds, 20), 10);
  results.push({
    name: r.name,
    rss_idle_mb: median(rss[j]!),
    rss_min_mb: +Math.min(...rss[j]!).toFixed(1),
    rss_after_load_mb: +rssMb(r.child.pid!).toFixed(1),
    page,
    health,
  });
}
for (const r of runs) r.child.kill('SIGTERM');
await Promise.all(runs.map((r) => new Promise((res) => r.child.once('exit', res))));
gw.close();
for (const r of runs) rmSync(r.dir, { recursive: true, force: true });
const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
console.log(`status page (500-session home, 12 restarts, pi4 fixture board, history full; load average ${load1})`);
for (const r of results) {
  console.log(`  ${r.name}: idle RSS ${r.rss_idle_mb} MB (min ${r.rss_min_mb}), after load ${r.rss_after_load_mb} MB`);
  console.log(
    `    GET / at 10 req/s, ${r.page.n} requests, ${r.page.bytes} bytes: p50 ` +
      `${r.page.p50} ms, p99 ${r.page.p99} ms, max ${r.page.max} ms`,
  );
  console.log(`    GET /health at 10 req/s, ${r.health.n} requests: p50 ${r.health.p50} ms, p99 ${r.health.p99} ms`);
}
console.log(JSON.stringify({ node: process.version, load_average: Number(load1), results }));
