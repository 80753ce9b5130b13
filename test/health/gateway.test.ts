import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readPicoClaw } from '../../src/health/picoclaw.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { picoclawStandIn } from '../support/picoclaw-process.js';
import { tempDir } from '../support/tmp.js';

/**
 * Gateway classification against a real loopback HTTP server and a PID file naming
 * a live process (this one), as docs/picoclaw.md#health-endpoints-and-ports describes the gateway.
 */
const TOKEN = 'feedfacecafebeef0123456789abcdef';
const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(ready: 200 | 503 | 'silent' | 'trickle' | 'flood'): Promise<number> {
  const s = createServer((req, res: ServerResponse) => {
    if (ready === 'silent') return; // the bootstrap: the listener accepts, nobody answers
    if (ready === 'trickle') {
      // Headers at once, then a body that never ends: the socket is never idle.
      res.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(t));
      return;
    }
    if (ready === 'flood') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.alloc(8 * 1024 * 1024, 0x20));
      return;
    }
    if (req.url === '/ready') {
      res.writeHead(ready, { 'content-type': 'application/json' });
      res.end(ready === 200 ? '{"status":"ready","uptime":"1m0s"}\n' : '{"status":"not ready","uptime":""}\n');
    } else if (req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', uptime: '1m0s', pid: process.pid }) + '\n');
    } else res.writeHead(404).end();
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

function home(pid: number | null, port: number, ageMs = 0) {
  const dir = join(tempDir(), '.picoclaw');
  mkdirSync(join(dir, 'workspace', 'sessions'), { recursive: true });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ gateway: { port: 1 }, channels: { telegram: { token: 'CONFIG-SECRET-CANARY' } } }),
  );
  if (pid !== null) {
    const pidPath = join(dir, '.picoclaw.pid');
    writeFileSync(pidPath, JSON.stringify({ pid, token: TOKEN, version: 'v0.2.9', port, host: '127.0.0.1' }, null, 2));
    if (ageMs > 0) {
      const t = (Date.now() - ageMs) / 1000;
      utimesSync(pidPath, t, t);
    }
  }
  return discoverHome({ home: dir, env: {} });
}

async function classify(h: ReturnType<typeof home>, hungAfterMs = 60_000) {
  const r = await readPicoClaw({ home: h, stateDir: null, timeoutMs: 300, hungAfterMs, nowMs: Date.now });
  if (!r.available) throw new Error(r.reason);
  const text = JSON.stringify(r);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain('CONFIG-SECRET-CANARY');
  return r.gateway;
}

describe('gateway classification', () => {
  it('ready: /ready 200, /health pid matches the PID file', async () => {
    const port = await serve(200);
    const g = await classify(home(process.pid, port));
    expect(g).toMatchObject({
      state: 'ready',
      pid: process.pid,
      version: 'v0.2.9',
      port,
      alive: true,
      ready: { http_status: 200, error: null },
      health: { http_status: 200 },
      health_pid_matches: true,
    });
    expect(g.ready!.duration_seconds).toBeGreaterThanOrEqual(0);
    // Within the 300 ms deadline (else the probe would say timeout); the bound is generous for a loaded machine.
    expect(g.ready!.duration_seconds).toBeLessThan(10);
  });

  it('starting: /ready 503', async () => {
    const g = await classify(home(process.pid, await serve(503)));
    expect(g).toMatchObject({ state: 'starting', ready: { http_status: 503 } });
  });

  it('starting: the port accepts but never answers, PID file fresh (the seahorse bootstrap)', async () => {
    const g = await classify(home(picoclawStandIn(), await serve('silent')));
    expect(g).toMatchObject({ state: 'starting', ready: { http_status: null, error: 'timeout' }, health: null });
  });

  it('hung: never answers and the PID file is older than hung_after', async () => {
    // Not back-dated: the stand-in must have started before its PID file was written, as a gateway does.
    const g = await classify(home(picoclawStandIn(), await serve('silent')), 0);
    expect(g).toMatchObject({ state: 'hung', ready: { error: 'timeout' } });
  });

  it('hung: alive but the port refuses connections', async () => {
    const port = await serve(200);
    const s = servers.pop()!;
    await new Promise((r) => s.close(r));
    const g = await classify(home(picoclawStandIn(), port));
    expect(g).toMatchObject({ state: 'hung', ready: { error: 'refused' } });
  });

  it(
    'down, not hung: the PID file names a live process that is not PicoClaw ' + '(pid 1, or this test runner)',
    async () => {
      const port = await serve(200);
      const s = servers.pop()!;
      await new Promise((r) => s.close(r));
      const g1 = await classify(home(1, port, 120_000));
      expect(g1).toMatchObject({ state: 'down', alive: true, ready: { error: 'refused' } });
      expect(g1.reason).toMatch(
        /^PID 1 from the PID file is now another program \(.+\) and nothing answers on 127\.0\.0\.1:\d+ \(stale PID file\)$/,
      );
      const g2 = await classify(home(process.pid, await serve('silent'), 120_000), 60_000);
      expect(g2).toMatchObject({ state: 'down', ready: { error: 'timeout' } });
      expect(g2.reason).toContain(`PID ${process.pid} from the PID file is now another program (node`);
    },
  );

  it('a process named picoclaw that started after the PID file was written did not write it: stale', async () => {
    const port = await serve(200);
    const s = servers.pop()!;
    await new Promise((r) => s.close(r));
    // The PID file is back-dated two minutes; the stand-in starts now.
    const g = await classify(home(picoclawStandIn(), port, 120_000));
    expect(g.state).toBe('down');
    expect(g.reason).toMatch(/is now another program \(.+, started after the PID file was written\)/);
  });

  it('an answer on the port is the gateway whatever its PID (Docker: the PID file says 1)', async () => {
    const g = await classify(home(1, await serve(200)));
    expect(g).toMatchObject({ state: 'ready', health_pid_matches: false });
  });

  it('a /ready body that never ends: the probe gives up at its deadline (connect + headers + body)', async () => {
    const g = await classify(home(picoclawStandIn(), await serve('trickle')));
    expect(g).toMatchObject({ state: 'starting', ready: { http_status: null, error: 'timeout' } });
    // The deadline is 300 ms; the bound is generous for a loaded machine, and far from forever.
    expect(g.ready!.duration_seconds).toBeLessThan(10);
  });

  it('a /ready body over 64 KiB is not read further', async () => {
    const g = await classify(home(process.pid, await serve('flood')));
    expect(g).toMatchObject({ ready: { http_status: 200, error: 'body_too_large' } });
  });

  it('down: no PID file, or a PID file whose process is gone', async () => {
    expect(await classify(home(null, 1))).toMatchObject({
      state: 'down',
      pid_file: 'absent',
      alive: false,
      ready: null,
    });
    expect(await classify(home(4_194_303, 1))).toMatchObject({
      state: 'down',
      pid_file: 'present',
      pid: 4_194_303,
      alive: false,
      ready: null,
    });
  });
});
