import type { Registry } from '../metrics/exposition.js';
import { buildRegistry } from '../metrics/guard-metrics.js';
import type { Readings } from './readings.js';
import type { Scheduler } from './scheduler.js';
import { jsonReply, METRICS_TYPE, type Reply } from './server.js';
import type { DaemonSettings } from './settings.js';
import type { StatusState } from './status.js';

/**
 * What the daemon answers, by path: bodies built when the readings change (rebuild), so a
 * request costs a lookup; /metrics renders the registry from the cached readings, and counts
 * the requests served.
 */
export const ENDPOINTS = ['/health', '/metrics', '/startup', '/prune', '/'] as const;

const NO_READING: Reply = {
  status: 503,
  contentType: 'text/plain; charset=utf-8',
  body: Buffer.from('no reading yet\n'),
};

export interface RouteSources {
  /** The settings in force (SIGHUP replaces them). */
  settings(): DaemonSettings;
  readonly readings: Readings;
  readonly status: StatusState;
  readonly scheduler: Scheduler;
  readonly version: string;
}

/** Requests served, by endpoint and status code: on /metrics only (the textfile has no HTTP side). */
export function httpRequestMetrics(r: Registry, requests: ReadonlyMap<string, number>): void {
  for (const [k, n] of [...requests.entries()].sort()) {
    const [endpoint, code] = k.split(' ') as [string, string];
    const help = 'HTTP requests the daemon answered, by endpoint and status code.';
    r.counter('picoclaw_guard_http_requests_total', help, n, { endpoint, code });
  }
}

export class Routes {
  private healthReply: Reply | null = null;
  private startupReply: Reply | null = null;
  private readonly requests = new Map<string, number>();

  constructor(private readonly src: RouteSources) {}

  /** One request answered (the server calls this; `path` is normalised, or 'other'). */
  count(path: string, status: number): void {
    const key = `${(ENDPOINTS as readonly string[]).includes(path) ? path : 'other'} ${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  /** Rebuild the bodies /health and /startup are answered with. */
  rebuild(): void {
    const { readings } = this.src;
    const h = readings.health;
    this.healthReply = h ? jsonReply(h.status === 'CRITICAL' ? 503 : 200, h) : null;
    const st = readings.startup;
    this.startupReply = st
      ? jsonReply(200, {
          ...st.report,
          prunes: st.prunes,
          analyzed_at: st.analyzed_at,
          prediction: readings.prediction,
        })
      : jsonReply(404, {
          error: readings.startupMissing?.error ?? 'gateway.log not read yet',
          path: readings.startupMissing?.path ?? this.src.settings().home.logPath,
        });
  }

  /** The Prometheus text: the guard's families, and with `withHttp` the requests served. */
  metricsText(withHttp: boolean): string {
    const s = this.src.settings();
    const { readings } = this.src;
    const r = buildRegistry({
      version: this.src.version,
      health: readings.health,
      startup: readings.startup?.report ?? null,
      prune: this.src.scheduler.stats,
      seahorse_limit_bytes: s.policy.max_db_size_mb > 0 ? s.policy.max_db_size_mb * 1024 * 1024 : null,
      refresh: readings.refresh,
      prediction: readings.prediction,
    });
    if (withHttp) httpRequestMetrics(r, this.requests);
    return r.render();
  }

  /** The reply for a path, or null (the server answers 404). */
  route(path: string): Reply | null {
    switch (path) {
      case '/':
        return this.src.status.reply() ?? NO_READING;
      case '/health':
        return this.healthReply ?? jsonReply(503, { error: 'no health reading yet' });
      case '/metrics':
        return { status: 200, contentType: METRICS_TYPE, body: Buffer.from(this.metricsText(true)) };
      case '/startup':
        return this.startupReply;
      case '/prune':
        return this.pruneReply();
      default:
        return null;
    }
  }

  private pruneReply(): Reply {
    const { stats, lastPass: lp } = this.src.scheduler;
    const iso = (ms: number | null) => (ms ? new Date(ms).toISOString() : null);
    const schedule = {
      enabled: stats.enabled,
      interval_seconds: stats.interval_seconds,
      running: stats.running,
      next_run_at: iso(stats.next_run_at_ms),
      last_success_at: iso(stats.last_success_at_ms),
      ...scheduleFields(this.src.scheduler),
    };
    const headers = { 'x-picoclaw-guard-schedule': JSON.stringify(schedule) };
    if (!lp) {
      return jsonReply(404, { error: 'no prune pass has run since the daemon started', ...schedule }, headers);
    }
    if (lp.report) {
      return { ...jsonReply(200, lp.report), headers: { ...headers, 'x-picoclaw-guard-outcome': lp.outcome } };
    }
    const { error, outcome, exit_code, finished_at } = lp;
    return jsonReply(500, { error, outcome, exit_code, finished_at, ...schedule }, headers);
  }
}

/** prune.schedule, its time zone, the next three slots and the slots skipped by overruns (null with the interval). */
function scheduleFields(sch: Scheduler): {
  cron: { schedule: string; timezone: string | null; next_runs: string[]; skipped_slots: number } | null;
} {
  const s = sch.scheduleSettings;
  if (!s) return { cron: null };
  return {
    cron: {
      schedule: s.pattern,
      timezone: s.timezone,
      next_runs: sch.nextRuns(3).map((ms) => new Date(ms).toISOString()),
      skipped_slots: sch.skippedSlots,
    },
  };
}
