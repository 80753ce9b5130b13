import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

/**
 * A notification receiver on loopback for the tests: it records every request (method, path, headers,
 * body) and answers with `status`, or never answers (`hang`). `next()` waits for the next request
 * (an event, never a sleep).
 */
export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface Receiver {
  port: number;
  base: string;
  received: Received[];
  /** Resolves with the n-th request (1-based) once it has arrived. */
  nth(n: number, timeoutMs?: number): Promise<Received>;
  setStatus(status: number | 'hang'): void;
  close(): Promise<void>;
}

const open: Server[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

export async function receiver(initial: number | 'hang' = 200): Promise<Receiver> {
  let status = initial;
  const received: Received[] = [];
  const waiters: { n: number; resolve: (r: Received) => void }[] = [];
  const hung: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      for (const w of waiters.filter((x) => x.n === received.length)) w.resolve(r);
      if (status === 'hang') hung.push(res);
      else {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end('{"id":"x"}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push(server);
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    received,
    nth: (n, timeoutMs = 30_000) =>
      received.length >= n
        ? Promise.resolve(received[n - 1]!)
        : new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error(`receiver: request ${n} did not come`)), timeoutMs);
            waiters.push({
              n,
              resolve: (r) => {
                clearTimeout(t);
                resolve(r);
              },
            });
          }),
    setStatus: (s) => {
      status = s;
    },
    close: async () => {
      for (const r of hung) r.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
