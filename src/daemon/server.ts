import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { isIP } from 'node:net';
import { ExitCode, GuardError, errnoCode } from '../errors.js';

/**
 * The daemon's HTTP server: GET (and HEAD) only, answered from bodies the daemon built
 * ahead of time, so a request costs a lookup and a write: it never spawns a process,
 * reads sysfs or lists a sessions folder: an idle daemon must cost the board nothing.
 *
 * With a token every request needs `Authorization: Bearer <token>`, or, for a browser
 * (which cannot send a bearer header), HTTP Basic authentication with the token as the
 * password (any user name). The token is compared in constant time (of its SHA-256, so
 * lengths do not leak either) and never logged; it never travels in a URL.
 */
export interface Reply {
  status: number;
  contentType: string;
  body: Buffer;
  headers?: Record<string, string | string[]>;
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
  /** Connection limits (tests); DEFAULT_SLOTS otherwise. */
  limits?: SlotLimits;
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

/** `Bearer <token>`, or `Basic base64(<user>:<token>)`. */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^(Bearer|Basic)[ ]+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return false;
  let given = m[2]!;
  if (m[1]!.toLowerCase() === 'basic') {
    // RFC 7617: user-id ":" password; the user name is not checked, the password is the token.
    const pair = Buffer.from(given, 'base64').toString('utf8');
    const colon = pair.indexOf(':');
    if (colon < 0) return false;
    given = pair.slice(colon + 1);
  }
  return timingSafeEqual(digest(given), digest(token));
}

/** Basic first: a browser asks for a password only for a scheme it knows. */
const CHALLENGES = ['Basic realm="picoclaw-guard", charset="UTF-8"', 'Bearer realm="picoclaw-guard"'];

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

/**
 * The path of a request target, normalised: repeated slashes collapse (`//health` is
 * `/health`, not a URL whose host is "health"), dot segments resolve, the query goes.
 * null for anything that is not an origin-form path: answered 404.
 */
export function requestPath(url: string | undefined): string | null {
  if (!url || !url.startsWith('/')) return null;
  const raw = url.split(/[?#]/, 1)[0]!.replace(/\/{2,}/g, '/');
  try {
    return new URL(raw, 'http://x').pathname;
  } catch {
    return null;
  }
}

/** How many connections the server keeps; see ConnectionSlots. */
export interface SlotLimits {
  /** Connections in all. */
  total: number;
  /** Connections from one non-loopback address. */
  perClient: number;
  /** Extra connections, beyond `total`, that only loopback clients (the local scraper) may use. */
  loopbackReserve: number;
}

export const DEFAULT_SLOTS: SlotLimits = { total: 64, perClient: 8, loopbackReserve: 8 };

interface Slot {
  addr: string;
  loopback: boolean;
  /** A request is being answered on it. */
  busy: boolean;
  /** Its last request ended (or it connected): the oldest idle one is evicted first. */
  since: number;
}

/**
 * Who gets a connection. Slow clients (headers a byte at a time, idle keep-alives) must
 * not lock everyone else out, before any authentication: a connection that is not in
 * the middle of a request can be evicted to admit a new one, the oldest first, and its
 * own address's first. One non-loopback address holds at most `perClient`; loopback
 * clients (the Prometheus scraper on the board) have a reserve of their own.
 * Pure bookkeeping (no sockets), so the policy is tested on its own.
 */
export class ConnectionSlots<K> {
  private readonly slots = new Map<K, Slot>();
  private clock = 0;
  constructor(private readonly limits: SlotLimits = DEFAULT_SLOTS) {}

  get size(): number {
    return this.slots.size;
  }

  /** Admit `key` from `addr`: returns the keys to evict first, or null to refuse `key`. */
  admit(key: K, addr: string): K[] | null {
    const loopback = isLoopback(addr);
    const evict: K[] = [];
    const idle = (pred: (s: Slot) => boolean): K | undefined => {
      let best: [K, Slot] | undefined;
      for (const e of this.slots)
        if (!e[1].busy && pred(e[1]) && !evict.includes(e[0]) && (!best || e[1].since < best[1].since)) best = e;
      return best?.[0];
    };
    if (!loopback) {
      const mine = [...this.slots.values()].filter((s) => s.addr === addr).length;
      if (mine >= this.limits.perClient) {
        const k = idle((s) => s.addr === addr);
        if (k === undefined) return null;
        evict.push(k);
      }
    }
    const cap = this.limits.total + (loopback ? this.limits.loopbackReserve : 0);
    while (this.slots.size - evict.length >= cap) {
      const k = idle((s) => !s.loopback || loopback);
      if (k === undefined) return null;
      evict.push(k);
    }
    for (const k of evict) this.slots.delete(k);
    this.slots.set(key, { addr, loopback, busy: false, since: this.clock++ });
    return evict;
  }

  busy(key: K, busy: boolean): void {
    const s = this.slots.get(key);
    if (!s) return;
    s.busy = busy;
    if (!busy) s.since = this.clock++;
  }

  release(key: K): void {
    this.slots.delete(key);
  }
}

export function startServer(o: ServerOptions): Promise<RunningServer> {
  const server = createServer(
    {
      // Slow headers and slow requests are cut; the check runs every half second, not every 30 s.
      requestTimeout: 10_000,
      headersTimeout: 5_000,
      connectionsCheckingInterval: 500,
      keepAliveTimeout: 5_000,
      maxHeaderSize: 8192,
    },
    (req, res) => {
      slots.busy(req.socket, true);
      res.once('finish', () => slots.busy(req.socket, false));
      res.once('close', () => slots.busy(req.socket, false));
      const normal = requestPath(req.url);
      const path = normal ?? '/';
      let reply: Reply;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        reply = {
          status: 405,
          contentType: TEXT,
          body: Buffer.from('only GET and HEAD\n'),
          headers: { allow: 'GET, HEAD', connection: 'close' },
        };
      } else {
        const token = o.token();
        if (token !== null && !tokenMatches(req.headers.authorization, token)) {
          reply = {
            status: 401,
            contentType: TEXT,
            body: Buffer.from(
              'the token is required: Authorization: Bearer <token>, or in a browser ' +
                'any user name with the token as the password\n',
            ),
            headers: { 'www-authenticate': CHALLENGES },
          };
        } else {
          reply = (normal !== null ? o.route(path) : null) ?? {
            status: 404,
            contentType: TEXT,
            body: Buffer.from(
              `no such endpoint: ${(normal ?? 'that').slice(0, 100)}; try /health, /metrics, /startup or /prune\n`,
            ),
          };
        }
      }
      send(req, res, reply);
      o.onRequest?.(normal ?? 'other', reply.status);
    },
  );
  const slots = new ConnectionSlots<Socket>(o.limits ?? DEFAULT_SLOTS);
  server.on('connection', (socket: Socket) => {
    const evict = slots.admit(socket, socket.remoteAddress ?? '');
    if (evict === null) {
      socket.destroy();
      return;
    }
    for (const s of evict) s.destroy();
    socket.once('close', () => slots.release(socket));
  });
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
      reject(
        new GuardError(`cannot serve on ${o.host}:${o.port}: ${code ?? err.message}`, {
          exitCode: ExitCode.USAGE,
          hint,
        }),
      );
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
