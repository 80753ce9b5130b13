#!/usr/bin/env node
// Idle cost of `picoclaw-guard run` (BENCHMARKS.md, section 6): resident memory, CPU seconds and bytes
// written to disk over N idle minutes, plus log lines, request latency and SIGTERM time.
//
//   npm run build && node test/daemon/measure-idle.mjs [minutes=10] [sessions=500]
//
// Setup: a sample home (prune enabled, the default 60-minute interval, so the first pass
// runs at start and none during the window), a fake gateway in this process answering
// /ready 200 (so every refresh makes both loopback probes), the pi4 fixture board with its
// fake vcgencmd (spawned at every 30 s refresh, as on a Pi; it writes nothing), default
// refresh cadences. The window starts 60 s after the first pass.
// Figures: VmRSS/VmHWM from /proc/<pid>/status, utime+stime from /proc/<pid>/stat (clock
// ticks, 100/s), write_bytes from /proc/<pid>/io (storage-layer writes, reaped children
// included). stdout goes to a pipe (under systemd it is journald's socket), so log lines
// are counted separately.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const minutes = Number(process.argv[2] ?? 10);
const sessions = Number(process.argv[3] ?? 500);
const { buildSampleHome } = await import(join(root, 'dist/dev/sample/builder.js'));

const gw = createServer((req, res) =>
  res.writeHead(200).end(req.url === '/ready' ? '{"status":"ready"}' : `{"status":"ok","pid":${process.pid}}`),
);
await new Promise((r) => gw.listen(0, '127.0.0.1', r));
const dir = mkdtempSync(join(tmpdir(), 'pcg-idle-'));
buildSampleHome({
  dir: join(dir, 'home'),
  seed: 1,
  sessions,
  now: Date.now(),
  restarts: 6,
  logLevel: 'info',
  logEvents: true,
  pidFile: { pid: process.pid, port: gw.address().port },
});
writeFileSync(join(dir, 'guard.json'), JSON.stringify({ prune: { enabled: true } }));
const board = join(root, 'test/fixtures/boards/pi4');
const args = [
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
];
const child = spawn(process.execPath, args, {
  env: { PATH: process.env.PATH, HOME: process.env.HOME, PICOGUARD_NO_SYSTEM_STATE: '1' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const lines = [];
let buf = '';
let onLine = () => {};
child.stdout.setEncoding('utf8');
child.stdout.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const l = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    lines.push({ at: Date.now(), ...l });
    onLine(l);
  }
});
const waitLine = (pred) =>
  new Promise((r) => {
    const hit = lines.find(pred);
    if (hit) return r(hit);
    onLine = (l) => pred(l) && r(l);
  });
const listening = await waitLine((l) => l.msg === 'listening');
const pass = await waitLine((l) => l.msg === 'prune pass');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
await sleep(60_000);

const pid = child.pid;
const sample = () => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)[1]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const io = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  );
  return {
    t: Date.now(),
    rss_kb: kb('VmRSS'),
    hwm_kb: kb('VmHWM'),
    cpu_ticks: Number(stat[11]) + Number(stat[12]),
    threads: Number(stat[17]),
    write_bytes: io.write_bytes,
    wchar: io.wchar,
    syscw: io.syscw,
  };
};
const start = sample();
const linesAtStart = lines.length;
const samples = [start];
for (let m = 1; m <= minutes; m++) {
  await sleep(60_000);
  samples.push(sample());
}
const end = samples.at(-1);
const idleLines = lines.length - linesAtStart;

const get = (path) =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port: listening.port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
    });
    req.on('error', reject);
    req.end();
  });
const latency = {};
for (const p of ['/health', '/metrics']) {
  const xs = [];
  for (let i = 0; i < 200; i++) xs.push(await get(p));
  xs.sort((a, b) => a - b);
  latency[p] = { p50_ms: +xs[100].toFixed(2), p95_ms: +xs[190].toFixed(2), max_ms: +xs[199].toFixed(2) };
}
const t0 = performance.now();
child.kill('SIGTERM');
const code = await new Promise((r) => child.once('exit', (c) => r(c)));
const stopMs = performance.now() - t0;
gw.close();

const result = {
  node: process.version,
  arch: process.arch,
  sessions,
  first_pass: { deleted_sessions: pass.deleted_sessions, duration_ms: pass.duration_ms },
  window_minutes: (end.t - start.t) / 60_000,
  rss_mb: {
    start: +(start.rss_kb / 1024).toFixed(1),
    end: +(end.rss_kb / 1024).toFixed(1),
    max_during: +(Math.max(...samples.map((s) => s.rss_kb)) / 1024).toFixed(1),
    hwm_since_start: +(end.hwm_kb / 1024).toFixed(1),
  },
  cpu_seconds: (end.cpu_ticks - start.cpu_ticks) / 100,
  cpu_percent: +(((end.cpu_ticks - start.cpu_ticks) / 100 / ((end.t - start.t) / 1000)) * 100).toFixed(3),
  write_bytes: end.write_bytes - start.write_bytes,
  wchar: end.wchar - start.wchar,
  log_lines_while_idle: idleLines,
  threads: end.threads,
  latency,
  sigterm: { exit_code: code, ms: +stopMs.toFixed(0) },
  samples,
};
console.log(JSON.stringify(result, null, 2));
