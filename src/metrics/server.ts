import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { ExitCode, GuardError, errnoCode } from '../errors.js';

/**
 * The daemon's HTTP server: GET (and HEAD) only, answered from bodies the daemon built
 * ahead of time, so a request costs a lookup and a write: it never spawns a process,
 * reads sysfs or lists a sessions folder: an idle daemon must cost the board nothing.
 *
 * With a token every request needs `Authorization: Bearer <token>`; the token is compared
 * in constant time (of its SHA-256, so lengths do not leak either) and never logged.
 */
export interface Reply {
  status: number;
  contentType: string;
  body: Buffer;
  headers?: Record<string, string>;
}

export interface ServerOptions {
  host: string;
  port: number;
  /** The current token (SIGHUP may change it); null: no authentication. */
  token: () => string | null;
  /** The reply for a path, or null for 404. */
  route: (path: string) => Reply | null;
  /** Called once per request with its outcome (the daemon counts, it does not log). */
  onRequest?: (path: string, status: number) => void;
}

export interface RunningServer {
  server: Server;
  host: string;
  port: number;
  close(): Promise<void>;
}

export const JSON_TYPE = 'application/json; charset=utf-8';
export const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** 127.0.0.0/8, ::1, ::ffff:127.x and `localhost`: the only addresses served without a token. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (h.startsWith('::ffff:')) return isLoopback(h.slice(7));
  return false;
}

export function jsonReply(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, contentType: JSON_TYPE, body: Buffer.from(JSON.stringify(value, null, 2) + '\n'), headers };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return false;
  return timingSafeEqual(digest(m[1]!), digest(token));
}

function send(req: IncomingMessage, res: ServerResponse, r: Reply): void {
  res.writeHead(r.status, {
    'content-type': r.contentType,
    'content-length': String(r.body.length),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...r.headers,
  });
  res.end(req.method === 'HEAD' ? undefined : r.body);
}

const TEXT = 'text/plain; charset=utf-8';

export function startServer(o: ServerOptions): Promise<RunningServer> {
  const server = createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000, maxHeaderSize: 8192 }, (req, res) => {
    let path = '/';
    try {
      path = new URL(req.url ?? '/', 'http://x').pathname;
    } catch {
      path = '/';
    }
    let reply: Reply;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      reply = { status: 405, contentType: TEXT, body: Buffer.from('only GET and HEAD\n'), headers: { allow: 'GET, HEAD', connection: 'close' } };
    } else {
      const token = o.token();
      if (token !== null && !tokenMatches(req.headers.authorization, token)) {
        reply = { status: 401, contentType: TEXT, body: Buffer.from('a bearer token is required (Authorization: Bearer <token>)\n'), headers: { 'www-authenticate': 'Bearer realm="picoclaw-guard"' } };
      } else {
        reply = o.route(path) ?? { status: 404, contentType: TEXT, body: Buffer.from(`no such endpoint: ${path.slice(0, 100)}; try /health, /metrics, /startup or /prune\n`) };
      }
    }
    send(req, res, reply);
    o.onRequest?.(path, reply.status);
  });
  server.maxConnections = 64;
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const code = errnoCode(err);
      const hint =
        code === 'EADDRINUSE'
          ? `another process listens on ${o.host}:${o.port}; pick another --port (or server.port in the guard config)`
          : code === 'EADDRNOTAVAIL'
            ? `${o.host} is not an address of this machine; use 127.0.0.1 or one of its addresses`
            : code === 'EACCES'
              ? 'ports below 1024 need privileges the guard should not have; use a higher port'
              : undefined;
      reject(new GuardError(`cannot serve on ${o.host}:${o.port}: ${code ?? err.message}`, { exitCode: ExitCode.USAGE, hint }));
    };
    server.once('error', onError);
    server.listen({ host: o.host.replace(/^\[|\]$/g, ''), port: o.port, exclusive: true }, () => {
      server.off('error', onError);
      const addr = server.address() as AddressInfo;
      resolve({
        server,
        host: addr.address,
        port: addr.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Idle keep-alive sockets would hold close() open; answers in flight finish first.
            server.closeIdleConnections();
            setTimeout(() => server.closeAllConnections(), 1000).unref();
          }),
      });
    });
  });
}
