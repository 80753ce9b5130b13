import { processAlive, processProgramNames, processStartMs } from '../io/process.js';
import type { PicoClawHome } from './home.js';
import { readPidFile, type PidInfo } from './pidfile.js';

/**
 * The gateway's state as seen from outside (docs/picoclaw.md#pid-file,
 * docs/picoclaw.md#health-endpoints-and-ports):
 * the PID file, whether its process is alive, and /ready and /health on the PID
 * file's host and port. Listeners open before the PID file is written and HTTP is
 * served only after the seahorse bootstrap, so during the bootstrap a request
 * connects but gets no answer: that is "starting".
 *
 * - down: no PID file, or its process is gone (nothing answers).
 * - starting: alive and the port accepts connections but does not answer yet, or /ready says 503.
 * - ready: /ready answers 200.
 * - hung: alive, but the port refuses connections, or it has not answered for longer
 *   than `hungAfterMs` since the PID file was written.
 */
export type GatewayStateName = 'down' | 'starting' | 'ready' | 'hung';

export interface ProbeResult {
  status: number | null;
  /** 'refused' | 'timeout' | other errno, when there was no HTTP answer. */
  error: string | null;
  durationMs: number;
  body: string | null;
}

export interface GatewayState {
  state: GatewayStateName;
  reason: string;
  pid: Omit<PidInfo, never> | null;
  pidFile: 'absent' | 'invalid' | 'present';
  alive: boolean;
  host: string;
  port: number;
  ready: ProbeResult | null;
  health: ProbeResult | null;
  /** /health's pid matches the PID file (false in Docker, where it is 1). */
  healthPidMatches: boolean | null;
}

export interface ProbeOptions {
  timeoutMs?: number;
  /** Ends the probes at once (the daemon stopping); the result then reads as a timeout. */
  signal?: AbortSignal;
  hungAfterMs?: number;
  now?: () => number;
}

/** A probe's answer is read up to this size (a /ready or /health body is a few dozen bytes). */
export const PROBE_BODY_CAP = 64 * 1024;

/**
 * One GET with a total deadline: connect, headers and body together must finish within
 * `timeoutMs` (a socket timeout alone only fires on an idle socket, and a body trickled a
 * byte at a time is never idle). A body over PROBE_BODY_CAP ends the read. node:http is loaded
 * here, when a probe is made: most commands find no gateway running, or never probe.
 */
export async function httpProbe(
  host: string,
  port: number,
  path: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ProbeResult> {
  const { request } = await import('node:http');
  const t0 = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Omit<ProbeResult, 'durationMs'>) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      resolve({ ...r, durationMs: performance.now() - t0 });
    };
    const hostname = host === 'localhost' ? '127.0.0.1' : host.replace(/^\[|\]$/g, '');
    const req = request(
      { host: hostname, port, path, method: 'GET', timeout: timeoutMs, agent: false, headers: { connection: 'close' } },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= PROBE_BODY_CAP) {
            chunks.push(c);
            return;
          }
          finish({ status: res.statusCode ?? null, error: 'body_too_large', body: null });
          req.destroy();
        });
        res.on('end', () =>
          finish({ status: res.statusCode ?? null, error: null, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', () => finish({ status: res.statusCode ?? null, error: 'reset', body: null }));
        res.on('aborted', () => finish({ status: res.statusCode ?? null, error: 'reset', body: null }));
      },
    );
    const deadline = setTimeout(() => {
      finish({ status: null, error: 'timeout', body: null });
      req.destroy();
    }, timeoutMs);
    req.on('timeout', () => {
      finish({ status: null, error: 'timeout', body: null });
      req.destroy();
    });
    const onAbort = () => {
      finish({ status: null, error: 'aborted', body: null });
      req.destroy();
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ status: null, error: err.code === 'ECONNREFUSED' ? 'refused' : (err.code ?? 'error'), body: null }),
    );
    req.end();
  });
}

/**
 * Why a live PID is not PicoClaw's, or null when it may be. After a power cut the PID
 * file survives and its PID may belong to any other process (pid 1 among them): that is
 * a stale PID file, not a hung gateway. Only asked when nothing answers HTTP on the
 * gateway's port (an answer is the gateway, whatever its PID says: in Docker it is 1).
 *
 * Not PicoClaw: a process that started after the PID file was written (the gateway
 * writes it seconds after it starts), or one whose executable and first arguments do
 * not name picoclaw, unless it started in the minute before the file was written (a
 * renamed binary that did write it). Unknown (no /proc): it may be.
 */
export function notTheGateway(pid: number, pidFileWrittenMs: number, procRoot?: string): string | null {
  const names = processProgramNames(pid, procRoot);
  if (names === null) return null;
  const name = names[0] ?? 'a kernel thread';
  const started = processStartMs(pid, procRoot);
  if (started !== null && started > pidFileWrittenMs + 2000) return `${name}, started after the PID file was written`;
  if (names.some((n) => /picoclaw/i.test(n) && !/picoclaw-guard/i.test(n))) return null;
  if (started !== null && started >= pidFileWrittenMs - 60_000) return null;
  return name;
}

export async function probeGateway(home: PicoClawHome, opts: ProbeOptions = {}): Promise<GatewayState> {
  const timeoutMs = opts.timeoutMs ?? 1500;
  const hungAfterMs = opts.hungAfterMs ?? 15 * 60_000;
  const now = opts.now ?? Date.now;
  const pf = readPidFile(home.pidPath);
  const pid = pf.state === 'present' ? pf.info : null;
  const host = pid?.host ?? home.gateway.host;
  const port = pid?.port ?? home.gateway.port;
  const base = { pid, pidFile: pf.state, host, port, ready: null, health: null, healthPidMatches: null } as const;
  if (!pid) {
    return {
      ...base,
      state: 'down',
      alive: false,
      reason: pf.state === 'invalid' ? `PID file unusable (${pf.reason})` : 'no PID file',
    };
  }
  const alive = processAlive(pid.pid);
  if (!alive)
    return {
      ...base,
      state: 'down',
      alive,
      reason: `PID ${pid.pid} from the PID file is not running (stale PID file)`,
    };
  const ready = await httpProbe(host, port, '/ready', timeoutMs, opts.signal);
  let health: ProbeResult | null = null;
  let healthPidMatches: boolean | null = null;
  if (ready.status !== null) {
    health = await httpProbe(host, port, '/health', timeoutMs, opts.signal);
    try {
      const h = JSON.parse(health.body ?? '') as { pid?: unknown };
      healthPidMatches = typeof h.pid === 'number' ? h.pid === pid.pid : null;
    } catch {
      healthPidMatches = null;
    }
  }
  const out = { ...base, alive, ready, health, healthPidMatches };
  if (ready.status === 200) return { ...out, state: 'ready', reason: '/ready answered 200' };
  if (ready.status === 503) return { ...out, state: 'starting', reason: '/ready answered 503 (not ready yet)' };
  if (ready.status !== null) return { ...out, state: 'hung', reason: `/ready answered HTTP ${ready.status}` };
  const other = notTheGateway(pid.pid, pid.writtenAtMs);
  if (other !== null) {
    return {
      ...out,
      state: 'down',
      reason:
        `PID ${pid.pid} from the PID file is now another program (${other}) and nothing answers on ` +
        `${host}:${port} (stale PID file)`,
    };
  }
  if (ready.error === 'refused')
    return { ...out, state: 'hung', reason: `process ${pid.pid} is alive but ${host}:${port} refuses connections` };
  const age = now() - pid.writtenAtMs;
  if (age <= hungAfterMs) {
    return {
      ...out,
      state: 'starting',
      reason: `no answer within ${timeoutMs} ms, PID file written ${Math.round(age / 1000)} s ago: bootstrap running`,
    };
  }
  return {
    ...out,
    state: 'hung',
    reason: `no answer within ${timeoutMs} ms and the PID file is ${Math.round(age / 60000)} min old`,
  };
}
