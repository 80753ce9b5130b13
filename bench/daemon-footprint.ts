/**
 * Item 6: the daemon's footprint. Starts `picoclaw-guard run` on a sample home (prune
 * enabled; the pass at start deletes old sessions) beside a fake ready gateway and the
 * pi4 fixture board, then measures from the operating system (/proc/<pid>):
 * - resident memory idle (before the first pass ran? no: the pass runs in a child; the
 *   daemon's own RSS) and after the pass, VmHWM since start;
 * - CPU time and bytes written over an idle window (default 5 min), per idle hour;
 * - /health and /metrics latency at 50 requests per second on loopback (p50, p99);
 * - the status page (/) at 10 requests per second (what a few open browser tabs cost and
 *   more), and its size.
 * The status page's history starts full (PICOGUARD_TEST_HISTORY_FILL=full: 24 h of
 * synthetic readings), so the figures are those of a daemon that has run for a day.
 *
 * --notify: notifications on, one webhook target (a receiver in this process, on loopback); the board
 * is healthy, so the notifier decides at every refresh and sends nothing (its idle cost); the count of
 * requests the receiver got is printed.
 *
 *   npm run build && node dist/bench/daemon-footprint.js [--minutes N] [--quick] [--notify]
 *
 * Prints a table and, last, one JSON line with every figure.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSampleHome } from '../dev/sample/builder.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const mi = args.indexOf('--minutes');
const minutes = mi >= 0 ? Number(args[mi + 1]) : quick ? 1 : 5;
const notifyOn = args.includes('--notify');
let received = 0;
const codes: string[] = [];
const hook = createServer((req, res) => {
  received++;
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    try {
      const m = JSON.parse(body) as { event: string; code: string };
      codes.push(`${m.event} ${m.code}`);
    } catch {
      codes.push('(not JSON)');
    }
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const gw = createServer((req, res) =>
  res.writeHead(200).end(req.url === '/ready' ? '{"status":"ready"}' : `{"status":"ok","pid":${process.pid}}`),
);
await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
const dir = mkdtempSync(join(tmpdir(), 'pcg-bench-daemon-'));
buildSampleHome({
  dir: join(dir, 'home'),
  seed: 1,
  sessions: 500,
  now: Date.now(),
  pidFile: { pid: process.pid, port: (gw.address() as AddressInfo).port },
});
const notify = { targets: [{ type: 'webhook', url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` }] };
writeFileSync(join(dir, 'guard.json'), JSON.stringify({ prune: { enabled: true }, ...(notifyOn ? { notify } : {}) }));
const board = join(root, 'test/fixtures/boards/pi4');
const child = spawn(
  process.execPath,
  [
    join(root, 'dist/src/cli.js'),
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
const lines: Record<string, unknown>[] = [];
let buf = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (d: string) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    try {
      lines.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>);
    } catch {
      // not a log line
    }
    buf = buf.slice(i + 1);
  }
});
const waitFor = async (msg: string) => {
  for (;;) {
    const hit = lines.find((l) => l.msg === msg);
    if (hit) return hit;
    await sleep(50);
  }
};
const pid = child.pid!;
const sample = () => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const io = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  ) as Record<string, number>;
  return {
    t: Date.now(),
    rssMb: kb('VmRSS') / 1024,
    hwmMb: kb('VmHWM') / 1024,
    cpuS: (Number(stat[11]) + Number(stat[12])) / 100,
    writeBytes: io.write_bytes!,
  };
};
const listening = (await waitFor('listening')) as { port: number };
await sleep(1500);
const beforePass = sample();
const pass = (await waitFor('prune pass')) as { deleted_sessions?: number };
await sleep(5000);
const afterPass = sample();
await sleep(10_000);
const w0 = sample();
await sleep(minutes * 60_000);
const w1 = sample();

/** Requests at a fixed rate (open loop), latency from send to last byte. */
async function load(
  path: string,
  seconds: number,
  perSecond = 50,
): Promise<{ p50: number; p99: number; max: number; n: number; bytes: number }> {
  const lat: number[] = [];
  const pending: Promise<void>[] = [];
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < seconds * perSecond; i++) {
    const due = t0 + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      new Promise<void>((resolve) => {
        const s = performance.now();
        const req = request({ host: '127.0.0.1', port: listening.port, path, agent: false }, (res) => {
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
    p50: q(0.5),
    p99: q(0.99),
    max: +lat[lat.length - 1]!.toFixed(2),
    n: lat.length,
    bytes: Math.round(bytes / Math.max(1, lat.length)),
  };
}
const health = await load('/health', quick ? 5 : 20);
const metrics = await load('/metrics', quick ? 5 : 20);
const page = await load('/', quick ? 10 : 60, 10);
const afterLoad = sample();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
gw.close();
hook.close();
rmSync(dir, { recursive: true, force: true });

const hours = (w1.t - w0.t) / 3_600_000;
const out = {
  node: process.version,
  notify: notifyOn,
  notifications_received: received,
  notifications: codes,
  idle_window_minutes: +((w1.t - w0.t) / 60_000).toFixed(2),
  rss_idle_mb: +beforePass.rssMb.toFixed(1),
  rss_after_pass_mb: +afterPass.rssMb.toFixed(1),
  rss_end_of_idle_mb: +w1.rssMb.toFixed(1),
  hwm_mb: +w1.hwmMb.toFixed(1),
  first_pass_deleted_sessions: pass.deleted_sessions ?? null,
  cpu_seconds_per_idle_hour: +((w1.cpuS - w0.cpuS) / hours).toFixed(2),
  bytes_written_per_idle_hour: Math.round((w1.writeBytes - w0.writeBytes) / hours),
  health_ms: health,
  metrics_ms: metrics,
  status_page_ms: page,
  rss_after_load_mb: +afterLoad.rssMb.toFixed(1),
};
console.log(
  `daemon footprint (${out.idle_window_minutes} idle minutes, 500-session home, pi4 fixture board, ready fake gateway)`,
);
console.log(
  `  RSS idle ${out.rss_idle_mb} MB, after a pass ${out.rss_after_pass_mb}` +
    ` MB, end ${out.rss_end_of_idle_mb} MB (peak ${out.hwm_mb} MB)`,
);
console.log(
  `  CPU ${out.cpu_seconds_per_idle_hour} s per idle hour; ${out.bytes_written_per_idle_hour}` +
    ` bytes written per idle hour`,
);
console.log(
  `  /health at 50 req/s: p50 ${health.p50} ms, p99 ${health.p99} ms; /metrics: p50 ` +
    `${metrics.p50} ms, p99 ${metrics.p99} ms`,
);
console.log(
  `  / (status page, ${page.bytes} bytes, full 24 h history) at 10 req/s, ` +
    `${page.n} requests: p50 ${page.p50} ms, p99 ${page.p99} ms, max ${page.max}` +
    ` ms; RSS after ${out.rss_after_load_mb} MB`,
);
console.log(JSON.stringify(out));
