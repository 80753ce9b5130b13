import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionSlots, jsonReply, requestPath, startServer, type RunningServer } from '../../src/daemon/server.js';

/** The daemon's HTTP server under slow and odd clients. */
const open: Socket[] = [];
const servers: RunningServer[] = [];

afterEach(async () => {
  for (const s of open.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await s.close();
});

function get(port: number, path: string): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 20_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - t0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

async function serve(): Promise<{
  srv: RunningServer;
  accepted: () => number;
  waitAccepted: (n: number) => Promise<void>;
}> {
  const srv = await startServer({
    host: '127.0.0.1',
    port: 0,
    token: () => null,
    route: (p) =>
      p === '/health'
        ? jsonReply(200, { status: 'OK' })
        : p === '/'
          ? jsonReply(200, { index: true })
          : p === '/metrics'
            ? jsonReply(200, { metrics: true })
            : null,
  });
  servers.push(srv);
  let n = 0;
  const waiters: { n: number; r: () => void }[] = [];
  srv.server.on('connection', () => {
    n++;
    for (const w of [...waiters])
      if (n >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.r();
      }
  });
  return {
    srv,
    accepted: () => n,
    waitAccepted: (k) => (n >= k ? Promise.resolve() : new Promise((r) => waiters.push({ n: k, r }))),
  };
}

describe('the HTTP server', () => {
  it('/health answers while 64 clients send their headers a byte at a time', async () => {
    const { srv, waitAccepted } = await serve();
    for (let i = 0; i < 64; i++) {
      const s = connect(srv.port, '127.0.0.1');
      s.on('error', () => undefined);
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n'); // and never the blank line
      open.push(s);
    }
    await waitAccepted(64);
    const r = await get(srv.port, '/health');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ status: 'OK' });
    // Promised within a second; the bound is generous for a loaded 2-core machine.
    expect(r.ms).toBeLessThan(5000);
  });

  it(
    'a client that never finishes its headers is cut after the 5 s header timeout,' + ' not half a minute later',
    async () => {
      const { srv } = await serve();
      const t0 = performance.now();
      const s = connect(srv.port, '127.0.0.1', () => s.write('GET /health HTTP/1.1\r\nHost: x\r\n'));
      s.on('error', () => undefined);
      open.push(s);
      let answer = '';
      s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      await new Promise<void>((r) => s.once('close', () => r()));
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      // 5 s of header time, checked every 0.5 s; generous for a loaded machine, far below Node's 30 s check.
      expect(performance.now() - t0).toBeLessThan(15_000);
    },
    30_000,
  );

  it('//health is /health (not the index page), and a target that is not a path is 404', async () => {
    const { srv } = await serve();
    expect(JSON.parse((await get(srv.port, '//health')).body)).toEqual({ status: 'OK' });
    expect(JSON.parse((await get(srv.port, '/health/../metrics')).body)).toEqual({ metrics: true });
    expect((await get(srv.port, '//evil.example/')).status).toBe(404);
    expect(requestPath('http://x/health')).toBeNull();
    expect(requestPath('///health?x=1')).toBe('/health');
    expect(requestPath('/')).toBe('/');
  });
});

describe('ConnectionSlots', () => {
  const limits = { total: 6, perClient: 3, loopbackReserve: 2 };

  it('one remote address holds at most perClient: its own oldest idle connection makes room, busy ones do not', () => {
    const s = new ConnectionSlots<string>(limits);
    expect(s.admit('a1', '10.0.0.5')).toEqual([]);
    expect(s.admit('a2', '10.0.0.5')).toEqual([]);
    expect(s.admit('a3', '10.0.0.5')).toEqual([]);
    expect(s.admit('b1', '10.0.0.6')).toEqual([]);
    expect(s.admit('a4', '10.0.0.5')).toEqual(['a1']);
    for (const k of ['a2', 'a3', 'a4']) s.busy(k, true);
    expect(s.admit('a5', '10.0.0.5')).toBeNull();
    expect(s.admit('b2', '10.0.0.6')).toEqual([]);
  });

  it(
    'when full, the oldest idle connection goes; with every slot busy, only ' + 'loopback gets in, up to its reserve',
    () => {
      const s = new ConnectionSlots<string>(limits);
      for (let i = 0; i < 6; i++) expect(s.admit(`r${i}`, `10.0.1.${i}`)).toEqual([]);
      expect(s.admit('n1', '10.0.2.1')).toEqual(['r0']);
      for (const k of ['r1', 'r2', 'r3', 'r4', 'r5', 'n1']) s.busy(k, true);
      expect(s.admit('n2', '10.0.2.2')).toBeNull();
      expect(s.admit('l1', '127.0.0.1')).toEqual([]);
      expect(s.admit('l2', '::ffff:127.0.0.1')).toEqual([]);
      s.busy('l1', true);
      s.busy('l2', true);
      expect(s.admit('l3', '::1')).toBeNull();
      s.busy('r3', false);
      expect(s.admit('l3', '::1')).toEqual(['r3']);
      s.release('l3');
      expect(s.size).toBe(7);
    },
  );
});
