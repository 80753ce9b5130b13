import type { HealthReport } from '../health/index.js';
import type { StartupReport } from '../startup/index.js';
import type { ThrottleFlags } from '../health/throttle.js';
import { Registry } from './exposition.js';
import { instantMs } from '../picoclaw/time.js';

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

export const GATEWAY_STATES = ['down', 'starting', 'ready', 'hung'] as const;
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

const bool = (b: boolean | null | undefined): number | null => (b === null || b === undefined ? null : b ? 1 : 0);
const seconds = (ms: number | null | undefined): number | null => (ms === null || ms === undefined ? null : ms / 1000);
const FLAGS: (keyof ThrottleFlags)[] = ['under_voltage', 'arm_freq_capped', 'throttled', 'soft_temp_limit'];

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

function boardMetrics(r: Registry, h: HealthReport): void {
  const t = h.temperature;
  if (t.available) {
    r.gauge(
      'picoclaw_guard_cpu_temperature_celsius',
      'CPU temperature, from the zone or hwmon chip that measures the CPU.',
      t.cpu_celsius,
    );
    for (const z of t.zones) {
      r.gauge(
        'picoclaw_guard_thermal_zone_temperature_celsius',
        'Temperature of each sysfs thermal zone.',
        z.temp_celsius,
        { thermal_zone: z.zone, zone_type: z.type ?? '' },
      );
    }
    for (const c of t.hwmon) {
      for (const x of c.temps) {
        r.gauge(
          'picoclaw_guard_hwmon_temperature_celsius',
          'Temperature of each hwmon sensor, by chip name and sensor.',
          x.temp_celsius,
          { chip: c.chip ?? c.hwmon, sensor: x.sensor },
        );
      }
    }
  }

  const tr = h.throttle;
  if (tr.available) {
    r.gauge(
      'picoclaw_guard_throttle_word',
      'The firmware throttle word (vcgencmd get_throttled) as a number.',
      tr.get_throttled === null ? null : parseInt(tr.get_throttled, 16),
    );
    for (const [period, flags] of [
      ['now', tr.now],
      ['since_boot', tr.since_boot],
    ] as const) {
      if (!flags) continue;
      for (const f of FLAGS) {
        r.gauge(
          'picoclaw_guard_throttle_flag',
          'Firmware throttle flags (1 set, 0 clear) by condition, now and since boot.',
          bool(flags[f]),
          { condition: f, period },
        );
      }
    }
    const uv = tr.under_voltage;
    r.gauge(
      'picoclaw_guard_under_voltage_detectable',
      'Whether this board can detect under-voltage at all (the Pi Zero range cannot).',
      bool(uv.detectable),
    );
    r.gauge(
      'picoclaw_guard_under_voltage',
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched (ever seen by the guard on this board, across reboots).",
      bool(uv.now),
      { period: 'now' },
    );
    r.gauge(
      'picoclaw_guard_under_voltage',
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched (ever seen by the guard on this board, across reboots).",
      bool(uv.since_boot),
      { period: 'since_boot' },
    );
    r.gauge(
      'picoclaw_guard_under_voltage',
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched (ever seen by the guard on this board, across reboots).",
      uv.latch.error && !uv.latch.seen ? null : bool(uv.latch.seen),
      { period: 'latched' },
    );
    r.gauge(
      'picoclaw_guard_under_voltage_first_seen_timestamp_seconds',
      "When the guard's latch first recorded under-voltage on this board (Unix time).",
      uv.latch.first_seen_at ? instantMs(uv.latch.first_seen_at) / 1000 : null,
    );
  }

  const cf = h.cpufreq;
  if (cf.available) {
    for (const c of cf.cores)
      r.gauge(
        'picoclaw_guard_cpu_frequency_hertz',
        'Current CPU frequency requested by the kernel (scaling_cur_freq), per CPU.',
        c.cur_hertz,
        { cpu: String(c.cpu) },
      );
    for (const c of cf.cores)
      r.gauge(
        'picoclaw_guard_cpu_frequency_max_hertz',
        'Highest CPU frequency the hardware supports (cpuinfo_max_freq), per CPU.',
        c.cpuinfo_max_hertz,
        { cpu: String(c.cpu) },
      );
    for (const c of cf.cores)
      r.gauge(
        'picoclaw_guard_cpu_frequency_min_hertz',
        'Lowest CPU frequency the hardware supports (cpuinfo_min_freq), per CPU.',
        c.cpuinfo_min_hertz,
        { cpu: String(c.cpu) },
      );
  }

  const rs = h.resources;
  if (rs.available) {
    r.gauge('picoclaw_guard_memory_total_bytes', 'MemTotal from /proc/meminfo.', rs.memory_total_bytes);
    r.gauge('picoclaw_guard_memory_available_bytes', 'MemAvailable from /proc/meminfo.', rs.memory_available_bytes);
  }
  const fs = h.filesystem;
  if (fs.available) {
    r.gauge(
      'picoclaw_guard_filesystem_free_bytes',
      'Bytes available to unprivileged users on the file system holding the PicoClaw home.',
      fs.free_bytes,
    );
    r.gauge(
      'picoclaw_guard_filesystem_size_bytes',
      'Size of the file system holding the PicoClaw home.',
      fs.size_bytes,
    );
    r.gauge(
      'picoclaw_guard_filesystem_readonly',
      'Whether the file system holding the PicoClaw home is mounted read-only (1) or not (0).',
      bool(fs.read_only),
    );
  }
}

function picoclawMetrics(r: Registry, h: HealthReport): void {
  const pc = h.picoclaw;
  if (!pc.available) return;
  const g = pc.gateway;
  r.gauge('picoclaw_guard_gateway_up', 'Whether the gateway process named by the PID file is alive.', bool(g.alive));
  r.gauge('picoclaw_guard_gateway_ready', 'Whether the gateway answers /ready with 200.', g.state === 'ready' ? 1 : 0);
  for (const st of GATEWAY_STATES)
    r.gauge(
      'picoclaw_guard_gateway_state',
      "The gateway's state: 1 for the current one (down, starting, ready, hung), 0 for the others.",
      st === g.state ? 1 : 0,
      { state: st },
    );
  if (g.ready)
    r.gauge(
      'picoclaw_guard_gateway_probe_duration_seconds',
      'How long the last probe of the gateway took, by endpoint.',
      g.ready.duration_seconds,
      { endpoint: 'ready' },
    );
  if (g.health)
    r.gauge(
      'picoclaw_guard_gateway_probe_duration_seconds',
      'How long the last probe of the gateway took, by endpoint.',
      g.health.duration_seconds,
      { endpoint: 'health' },
    );
  r.gauge(
    'picoclaw_guard_gateway_start_timestamp_seconds',
    'When the running gateway started (its PID file was written), Unix time.',
    g.pid_file_written_at ? instantMs(g.pid_file_written_at) / 1000 : null,
  );

  for (const st of pc.sessions.stores) {
    r.gauge('picoclaw_guard_sessions', "Sessions (.meta.json files) per agent's sessions folder.", st.sessions, {
      agent: st.agents.join(','),
    });
  }
  for (const st of pc.sessions.stores) {
    r.gauge(
      'picoclaw_guard_sessions_bytes',
      "Bytes of session transcripts (.jsonl) per agent's sessions folder.",
      st.jsonl_bytes,
      { agent: st.agents.join(',') },
    );
  }
  const lp = pc.last_prune;
  if (lp && lp.undated_sessions !== undefined) {
    r.gauge(
      'picoclaw_guard_prune_undated_sessions',
      'Sessions with no usable timestamp at the last prune: never deleted, yet counted toward max_sessions.',
      lp.undated_sessions,
    );
    r.gauge(
      'picoclaw_guard_prune_displaced_by_undated_sessions',
      'Dated sessions the last prune deleted under max_sessions only because undated sessions count toward it.',
      lp.displaced_by_undated ?? 0,
    );
  }
  if (lp && lp.size_limit_unmet !== undefined) {
    r.gauge(
      'picoclaw_guard_seahorse_limit_unmet',
      'Whether the last prune found seahorse.db over max_db_size_mb with nothing it may delete (1) or not (0).',
      lp.size_limit_unmet ? 1 : 0,
    );
    r.gauge(
      'picoclaw_guard_vacuum_owed',
      'Whether a VACUUM deferred while the gateway ran waits for an offline prune pass (1) or not (0).',
      lp.vacuum_owed_since ? 1 : 0,
    );
  }
  if (pc.seahorse.present) {
    r.gauge('picoclaw_guard_seahorse_db_bytes', 'Size of seahorse.db (without its WAL).', pc.seahorse.db_bytes);
    r.gauge('picoclaw_guard_seahorse_wal_bytes', 'Size of seahorse.db-wal.', pc.seahorse.wal_bytes);
  }
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
