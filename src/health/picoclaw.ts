import { existsSync, lstatSync, opendirSync, type Dir, type Dirent } from 'node:fs';
import { errnoCode } from '../errors.js';
import { probeGateway, type GatewayStateName, type ProbeResult } from '../picoclaw/gateway.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { dbFileBytes } from '../picoclaw/seahorse.js';
import { classifyEntry } from '../picoclaw/inventory/sessions.js';
import { readHistory } from '../state/history.js';
import { noData, type Section } from './types.js';

/**
 * PicoClaw as health sees it: the gateway (docs/picoclaw.md#pid-file, docs/picoclaw.md#health-endpoints-and-ports,
 * classified by
 * src/picoclaw/gateway.ts), how much session data there is, seahorse.db with its WAL,
 * the last prune, and the last restart's bootstrap gap.
 *
 * Sessions are counted, not read: one streamed listing per folder (the count comes from the
 * dirent types alone) and one lstat per `.jsonl` for the bytes. No .meta.json is
 * opened or stat'ed: a full inventory parses every meta and reads every JSONL tail,
 * and even an lstat per meta doubled the cost for files of a few hundred bytes each
 * (BENCHMARKS.md, "Figures that code comments carried").
 * The PID file's token never reaches this object (pidfile.ts does not read it).
 */
export interface ProbeReading {
  http_status: number | null;
  /** refused, timeout, or another errno when there was no HTTP answer. */
  error: string | null;
  duration_seconds: number;
}

export interface GatewayReading {
  state: GatewayStateName;
  reason: string;
  pid_file: 'absent' | 'invalid' | 'present';
  pid: number | null;
  version: string | null;
  host: string;
  port: number;
  /** The PID file's mtime: when this gateway started. */
  pid_file_written_at: string | null;
  alive: boolean;
  ready: ProbeReading | null;
  health: ProbeReading | null;
  /** /health's pid equals the PID file's (false in Docker, where it is 1). */
  health_pid_matches: boolean | null;
}

export interface SessionStoreCount {
  /** Agents writing to this folder (main and a default:true agent share one, docs/picoclaw.md#where-things-are). */
  agents: string[];
  dir: string;
  sessions: number;
  /** Of those, agent-turn cron runs (`agent_cron-…`: each run leaves a new session). */
  cron_sessions: number;
  /** Bytes of the session transcripts (.jsonl); .meta.json files are not measured. */
  jsonl_bytes: number;
  error: string | null;
}

export interface LastPrune {
  at: string;
  outcome: string;
  deleted_sessions: number;
  deleted_orphans: number;
  freed_bytes: number;
  sessions_before: number;
  sessions_after: number;
  duration_seconds: number;
  reason: string | null;
  /**
   * Undated sessions (never deleted, yet counted toward max_sessions) and the dated ones they pushed out; absent before
   * they were recorded.
   */
  undated_sessions?: number;
  displaced_by_undated?: number;
  /** Why seahorse.db cannot be brought under max_db_size_mb by deleting (which sessions hold the rows). */
  size_limit_unmet?: string | null;
  /** A VACUUM deferred while the gateway ran, waiting for an offline pass. */
  vacuum_owed_since?: string | null;
}

export interface PicoClawReading {
  home: string;
  context_manager: string;
  gateway: GatewayReading;
  sessions: { count: number; jsonl_bytes: number; stores: SessionStoreCount[] };
  seahorse: { path: string; present: boolean; db_bytes: number; wal_bytes: number; total_bytes: number };
  last_prune: LastPrune | null;
  /**
   * The silent seahorse bootstrap of the last gateway start, in seconds. Filled from
   * the startup report (the `startup` command) by whoever calls collectHealth; null until then.
   */
  last_bootstrap_gap_seconds: number | null;
}

export type PicoClaw = Section<PicoClawReading>;

/**
 * Count one sessions folder by the names sessions.ts classifies (classifyEntry): a session is a regular
 * `*.meta.json`; `.tmp-*` and `session-*.tmp` files, symlinks and folders never count.
 */
export function countSessions(dir: string): {
  sessions: number;
  cron_sessions: number;
  jsonl_bytes: number;
  error: string | null;
} {
  const out = { sessions: 0, cron_sessions: 0, jsonl_bytes: 0, error: null as string | null };
  let d: Dir;
  try {
    // Streamed, a few hundred entries at a time: a folder of 20,000 sessions is never a list in memory.
    d = opendirSync(dir, { bufferSize: 256 });
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') out.error = `cannot list: ${errnoCode(err) ?? 'error'}`;
    return out;
  }
  const counted = { sessions: 0, cron_sessions: 0, jsonl_bytes: 0 };
  /** The next entry, null at the end, or the errno of a listing that failed part way. */
  const next = (): Dirent | null | { failed: string } => {
    try {
      return d.readSync();
    } catch (err) {
      return { failed: errnoCode(err) ?? 'error' };
    }
  };
  try {
    for (let e = next(); e !== null; e = next()) {
      // A listing that fails part way counts nothing, as one that fails at once.
      if ('failed' in e) return { ...out, error: `cannot list: ${e.failed}` };
      // The dirent type comes from readdir itself (d_type): symlinks and folders are
      // never followed or counted, and no stat is needed to tell them apart.
      if (!e.isFile()) continue;
      const name = e.name;
      const kind = classifyEntry(name);
      if (kind === 'meta') {
        counted.sessions++;
        // The file name is the key with ':' made '_' (agent:cron-<job>-<uuid>, upstream pkg/tools/cron.go): no read
        // needed.
        if (name.startsWith(CRON_PREFIX)) counted.cron_sessions++;
      } else if (kind === 'jsonl') {
        // dir + '/' + name, not path.join: this runs once per session (thousands of times).
        const st = lstatSync(dir + '/' + name, { throwIfNoEntry: false });
        if (st) counted.jsonl_bytes += st.size; // undefined: deleted since readdir (a prune, or PicoClaw itself)
      }
    }
  } finally {
    d.closeSync();
  }
  return { ...out, ...counted };
}

const CRON_PREFIX = 'agent_cron-';

function probe(p: ProbeResult | null): ProbeReading | null {
  return p === null
    ? null
    : { http_status: p.status, error: p.error, duration_seconds: Math.round(p.durationMs) / 1000 };
}

export interface PicoClawOptions {
  home: PicoClawHome;
  stateDir: string | null;
  timeoutMs: number;
  hungAfterMs: number;
  nowMs: () => number;
  lastBootstrapGapSeconds?: number | null;
  /** Ends the gateway probes at once. */
  signal?: AbortSignal;
  /** How a sessions folder is counted; the daemon passes a cached count refreshed on its own, slower cadence. */
  countSessions?: (dir: string) => ReturnType<typeof countSessions>;
}

export async function readPicoClaw(opts: PicoClawOptions): Promise<PicoClaw> {
  const { home } = opts;
  if (!existsSync(home.home)) return noData(`no PicoClaw home at ${home.home}`);
  const g = await probeGateway(home, {
    timeoutMs: opts.timeoutMs,
    hungAfterMs: opts.hungAfterMs,
    now: opts.nowMs,
    signal: opts.signal,
  });
  const gateway: GatewayReading = {
    state: g.state,
    reason: g.reason,
    pid_file: g.pidFile,
    pid: g.pid?.pid ?? null,
    version: g.pid?.version ?? null,
    host: g.host,
    port: g.port,
    pid_file_written_at: g.pid ? new Date(g.pid.writtenAtMs).toISOString() : null,
    alive: g.alive,
    ready: probe(g.ready),
    health: probe(g.health),
    health_pid_matches: g.healthPidMatches,
  };
  const count = opts.countSessions ?? countSessions;
  const stores: SessionStoreCount[] = home.sessionsDirs.map(({ dir, agents }) => ({ agents, dir, ...count(dir) }));
  const db = dbFileBytes(home.seahorsePath);
  const history = opts.stateDir ? readHistory(opts.stateDir, home.home) : [];
  const last = history[history.length - 1];
  return {
    available: true,
    home: home.home,
    context_manager: home.contextManager,
    gateway,
    sessions: {
      count: stores.reduce((n, s) => n + s.sessions, 0),
      jsonl_bytes: stores.reduce((n, s) => n + s.jsonl_bytes, 0),
      stores,
    },
    seahorse: {
      path: home.seahorsePath,
      present: existsSync(home.seahorsePath),
      db_bytes: db.db,
      wal_bytes: db.wal,
      total_bytes: db.total,
    },
    last_prune: last
      ? {
          at: last.at,
          outcome: last.outcome,
          deleted_sessions: last.deleted_sessions,
          deleted_orphans: last.deleted_orphans,
          freed_bytes: last.freed_bytes,
          sessions_before: last.sessions_before,
          sessions_after: last.sessions_after,
          duration_seconds: last.duration_ms / 1000,
          reason: last.reason,
          undated_sessions: last.undated_sessions,
          displaced_by_undated: last.displaced_by_undated,
          size_limit_unmet: last.size_limit_unmet,
          vacuum_owed_since: last.vacuum_owed_since,
        }
      : null,
    last_bootstrap_gap_seconds: opts.lastBootstrapGapSeconds ?? null,
  };
}
