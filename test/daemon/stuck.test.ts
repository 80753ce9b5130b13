import { execFileSync } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';
import { fakeGateway, sampleHome, startDaemon, until, writeConfig } from './support.js';

/**
 * The daemon's event loop stays free whatever a refresh meets: a FIFO where the guard
 * config is (read on SIGHUP), a FIFO where the PID file is (read at every refresh), a
 * gateway whose /ready body never ends. Each time SIGTERM still ends it with exit 0.
 * Before, each froze the loop: no HTTP answer, SIGTERM ignored, only SIGKILL ended it.
 * The bounds are generous (the machine is shared); the README promises a few seconds.
 */
const STOP_BOUND_MS = 10_000;
const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A gateway whose /ready sends its headers and then a byte every 20 ms, forever; `onReady` fires per request. */
async function tricklingGateway(onReady: () => void): Promise<number> {
  const s = createServer((req, res) => {
    if (req.url !== '/ready') {
      res.writeHead(200).end(JSON.stringify({ status: 'ok', pid: process.pid }));
      return;
    }
    onReady();
    res.writeHead(200, { 'content-type': 'application/json' });
    const t = setInterval(() => res.write(' '), 20);
    res.on('close', () => clearInterval(t));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

describe('picoclaw-guard run: nothing a refresh meets blocks SIGTERM', () => {
  it(
    'the guard config became a FIFO, then SIGHUP: the reload fails naming it,' + ' /health answers, SIGTERM exits 0',
    async () => {
      const h = sampleHome({ gatewayPort: await fakeGateway() });
      const config = writeConfig(h.root, { metrics: { refresh_seconds: 1 } });
      const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config });
      const fifo = join(tempDir(), 'fifo');
      execFileSync('mkfifo', [fifo]);
      renameSync(fifo, config);
      const n = d.logs.length;
      d.child.kill('SIGHUP');
      const failed = await d.waitForLog((l) => l.msg === 'reload failed: keeping the running configuration', 20_000, n);
      expect(String(failed.error)).toContain(`${config}: is a FIFO, not a regular file`);
      expect((await d.get('/health')).status).toBeLessThan(600);
      const r = await d.stop('SIGTERM', STOP_BOUND_MS);
      expect(r.code).toBe(0);
    },
  );

  it('the PID file became a FIFO: the next refresh reads it as unusable, SIGTERM exits 0', async () => {
    const h = sampleHome({ gatewayPort: await fakeGateway() });
    const config = writeConfig(h.root, { metrics: { refresh_seconds: 1 } });
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config });
    expect((await d.json('/health')).body.picoclaw.gateway.state).toBe('ready');
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    renameSync(fifo, join(h.home, '.picoclaw.pid'));
    const g = await until(async () => {
      const b = (await d.json('/health')).body;
      return b.picoclaw.gateway.pid_file === 'invalid' ? b.picoclaw.gateway : null;
    }, 30_000);
    expect(g.reason).toContain('is a FIFO, not a regular file');
    const r = await d.stop('SIGTERM', STOP_BOUND_MS);
    expect(r.code).toBe(0);
  });

  it('/ready trickles a body forever: the daemon starts, and SIGTERM during a stuck probe exits 0', async () => {
    let readyRequests = 0;
    let waiter: (() => void) | null = null;
    const port = await tricklingGateway(() => {
      readyRequests++;
      waiter?.();
    });
    const h = sampleHome({ gatewayPort: port });
    // The first probe runs before "listening", with the default deadline (1 s): the start completes.
    const config = writeConfig(h.root, { metrics: { refresh_seconds: 1 } });
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config });
    expect(readyRequests).toBeGreaterThanOrEqual(1);
    // Then refreshes whose probe may last a minute, and SIGTERM in the middle of one.
    writeFileSync(config, JSON.stringify({ metrics: { refresh_seconds: 1 }, health: { gateway_timeout_ms: 60_000 } }));
    const n = d.logs.length;
    d.child.kill('SIGHUP');
    await d.waitForLog((l) => l.msg === 'configuration reloaded', 20_000, n);
    const seen = readyRequests;
    await new Promise<void>((r) => (readyRequests > seen ? r() : (waiter = r)));
    const r = await d.stop('SIGTERM', STOP_BOUND_MS);
    expect(r.code).toBe(0);
    expect(d.logs.at(-1)).toMatchObject({ msg: 'stopped', signal: 'SIGTERM' });
  });

  it('SIGTERM during the first probe, before the daemon listens: exit 0, and it never starts serving', async () => {
    let arrived: () => void = () => undefined;
    const firstReady = new Promise<void>((r) => (arrived = r));
    const port = await tricklingGateway(() => arrived());
    const h = sampleHome({ gatewayPort: port });
    const config = writeConfig(h.root, { health: { gateway_timeout_ms: 60_000 } });
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config, noWait: true });
    await firstReady;
    const r = await d.stop('SIGTERM', STOP_BOUND_MS);
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(d.logs.some((l) => l.msg === 'listening')).toBe(false);
    expect(d.logs.at(-1)).toMatchObject({ msg: 'stopped', signal: 'SIGTERM' });
  });
});
