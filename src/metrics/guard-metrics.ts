import type { HealthReport } from '../health/index.js';
import type { StartupReport } from '../startup/index.js';
import { Registry } from './exposition.js';
import { boardMetrics, picoclawMetrics, seconds } from './health-metrics.js';

/**
 * picoclaw-guard's metrics, built fresh from the daemon's cached readings on every
 * render (the exporter rule, docs/board-health.md#metrics-conventions): base units in the name
 * (_celsius, _hertz, _bytes, _seconds), counters end in _total, timestamps in
 * _timestamp_seconds. A reading the board does not have (no thermal zone on a VM, no
 * throttle word on RISC-V) is left out, never exported as 0.
 *
 * Label names avoid `type` and `zone` (docs/board-health.md#metrics-conventions): thermal zones carry `thermal_zone`
 * and
 * `zone_type`. Agents that share one sessions folder (main and a default:true agent)
 * are one series whose `agent` label names them together, comma-separated.
 */
export const PRUNE_OUTCOMES = [
  'ok',
  'partial',
  'locked',
  'gateway_not_ready',
  'skipped',
  'disabled',
  'failed',
] as const;
export type PruneOutcome = (typeof PRUNE_OUTCOMES)[number];

export const HEALTH_STATUSES = ['OK', 'WARN', 'CRITICAL'] as const;
export const REFRESH_SOURCES = ['health', 'sessions', 'startup'] as const;
export type RefreshSource = (typeof REFRESH_SOURCES)[number];

/** What the daemon counts about its own prune passes (since it started). */
export interface PruneStats {
  enabled: boolean;
  interval_seconds: number;
  running: boolean;
  passes: Record<PruneOutcome, number>;
  deleted_sessions: number;
  freed_bytes: number;
  deleted_seahorse_messages: number;
  deleted_orphan_conversations: number;
  last: {
    finished_at_ms: number;
    duration_seconds: number;
    outcome: PruneOutcome;
    longest_write_seconds: number | null;
  } | null;
  /** The last pass that ran to its end (this daemon's, its marker, or the prune history). */
  last_success_at_ms: number | null;
  next_run_at_ms: number | null;
}

export function emptyPruneStats(): PruneStats {
  return {
    enabled: false,
    interval_seconds: 0,
    running: false,
    passes: Object.fromEntries(PRUNE_OUTCOMES.map((o) => [o, 0])) as Record<PruneOutcome, number>,
    deleted_sessions: 0,
    freed_bytes: 0,
    deleted_seahorse_messages: 0,
    deleted_orphan_conversations: 0,
    last: null,
    last_success_at_ms: null,
    next_run_at_ms: null,
  };
}

export interface RefreshStat {
  count: number;
  last_duration_seconds: number | null;
  last_at_ms: number | null;
}

export interface MetricsSnapshot {
  version: string;
  health: HealthReport | null;
  startup: StartupReport | null;
  prune: PruneStats;
  /** The seahorse.db (+WAL) budget from the policy, in bytes; 0 or null: none. */
  seahorse_limit_bytes: number | null;
  refresh: Record<RefreshSource, RefreshStat>;
  /** The startup-time model's prediction for the next restart (src/startup-model/), if any. */
  prediction?: { predicted_seconds: number | null; error_seconds: number | null } | null;
}

export function buildRegistry(s: MetricsSnapshot): Registry {
  const r = new Registry();
  r.gauge('picoclaw_guard_build_info', 'picoclaw-guard version and the Node.js running it (always 1).', 1, {
    version: s.version,
    node_version: process.versions.node,
  });

  // --- the guard's own background work ----------------------------------------------
  for (const src of REFRESH_SOURCES) {
    const st = s.refresh[src];
    r.counter(
      'picoclaw_guard_refresh_total',
      'Background refreshes of the cache the endpoints answer from, by source.',
      st.count,
      { source: src },
    );
  }
  for (const src of REFRESH_SOURCES) {
    r.gauge(
      'picoclaw_guard_refresh_duration_seconds',
      'How long the last background refresh took, by source.',
      s.refresh[src].last_duration_seconds,
      { source: src },
    );
  }
  for (const src of REFRESH_SOURCES) {
    r.gauge(
      'picoclaw_guard_refresh_timestamp_seconds',
      'When the last background refresh finished (Unix time), by source.',
      seconds(s.refresh[src].last_at_ms),
      { source: src },
    );
  }

  const h = s.health;
  if (h) {
    for (const st of HEALTH_STATUSES)
      r.gauge(
        'picoclaw_guard_health_status',
        'The health roll-up: 1 for the current status (OK, WARN or CRITICAL), 0 for the others.',
        st === h.status ? 1 : 0,
        { status: st },
      );
    for (const p of h.problems)
      r.gauge(
        'picoclaw_guard_health_problem',
        'One series per current health problem (1), by its stable code and level.',
        1,
        { code: p.code, level: p.level },
      );
    boardMetrics(r, h);
    picoclawMetrics(r, h);
  }
  r.gauge(
    'picoclaw_guard_seahorse_limit_bytes',
    'The seahorse.db + WAL budget of the prune policy (max_db_size_mb), in bytes.',
    s.seahorse_limit_bytes && s.seahorse_limit_bytes > 0 ? s.seahorse_limit_bytes : null,
  );

  pruneMetrics(r, s.prune);
  startupMetrics(r, s.startup);
  r.gauge(
    'picoclaw_guard_bootstrap_predicted_seconds',
    "The next gateway start's bootstrap gap the startup model predicts for the default agent's sessions now.",
    s.prediction?.predicted_seconds ?? null,
  );
  r.gauge(
    'picoclaw_guard_bootstrap_prediction_error_seconds',
    "The ± of that prediction: the restarts' scatter around the model and its coefficients' uncertainty.",
    s.prediction?.predicted_seconds != null ? s.prediction.error_seconds : null,
  );
  return r;
}

function pruneMetrics(r: Registry, p: PruneStats): void {
  r.gauge(
    'picoclaw_guard_prune_enabled',
    'Whether scheduled prune passes are enabled (the policy key `enabled` and a non-zero interval).',
    p.enabled ? 1 : 0,
  );
  r.gauge('picoclaw_guard_prune_interval_seconds', 'Time between scheduled prune passes.', p.interval_seconds);
  r.gauge('picoclaw_guard_prune_running', 'Whether a prune pass is running now.', p.running ? 1 : 0);
  for (const o of PRUNE_OUTCOMES)
    r.counter(
      'picoclaw_guard_prune_passes_total',
      'Prune passes the daemon ran, by outcome (ok, partial, locked, gateway_not_ready, skipped, disabled, failed).',
      p.passes[o],
      { outcome: o },
    );
  r.counter(
    'picoclaw_guard_prune_deleted_sessions_total',
    "Sessions deleted by the daemon's prune passes.",
    p.deleted_sessions,
  );
  r.counter(
    'picoclaw_guard_prune_freed_bytes_total',
    "Bytes of session files (.jsonl and .meta.json) deleted by the daemon's prune passes.",
    p.freed_bytes,
  );
  r.counter(
    'picoclaw_guard_prune_deleted_seahorse_messages_total',
    "seahorse.db messages deleted by the daemon's prune passes.",
    p.deleted_seahorse_messages,
  );
  r.counter(
    'picoclaw_guard_prune_deleted_orphan_conversations_total',
    "Orphan seahorse conversations deleted by the daemon's prune passes.",
    p.deleted_orphan_conversations,
  );
  if (p.last) {
    r.gauge(
      'picoclaw_guard_prune_last_duration_seconds',
      'How long the last prune pass took.',
      p.last.duration_seconds,
    );
    r.gauge(
      'picoclaw_guard_prune_last_run_timestamp_seconds',
      'When the last prune pass ended, whatever its outcome (Unix time).',
      p.last.finished_at_ms / 1000,
    );
    for (const o of PRUNE_OUTCOMES)
      r.gauge(
        'picoclaw_guard_prune_last_outcome',
        "The last prune pass's outcome: 1 for it, 0 for the others.",
        o === p.last.outcome ? 1 : 0,
        { outcome: o },
      );
    r.gauge(
      'picoclaw_guard_prune_last_longest_write_seconds',
      'The longest seahorse.db write transaction of the last pass (the gateway waits at most 5 s).',
      p.last.longest_write_seconds,
    );
  }
  r.gauge(
    'picoclaw_guard_prune_last_success_timestamp_seconds',
    'When the last prune pass that ran to its end finished (Unix time; survives restarts).',
    seconds(p.last_success_at_ms),
  );
  r.gauge(
    'picoclaw_guard_prune_next_run_timestamp_seconds',
    'When the next scheduled prune pass is due (Unix time).',
    seconds(p.next_run_at_ms),
  );
}

function startupMetrics(r: Registry, s: StartupReport | null): void {
  if (!s || s.source.state !== 'ok') return;
  r.gauge(
    'picoclaw_guard_startup_restarts_logged',
    'Gateway restarts found in gateway.log (falls when the log is rotated).',
    s.summary.restarts,
  );
  r.gauge(
    'picoclaw_guard_bootstrap_gap_seconds',
    'The silent seahorse bootstrap of the latest gateway start that logged one (a lower bound while it runs).',
    s.summary.latest_gap?.seconds ?? null,
  );
  r.gauge(
    'picoclaw_guard_time_to_ready_seconds',
    'Time to ready of the latest gateway start that logged one.',
    s.summary.latest_ready?.seconds ?? null,
  );
}

export function renderMetrics(s: MetricsSnapshot): string {
  return buildRegistry(s).render();
}
