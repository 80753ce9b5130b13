import type { HealthReport } from '../health/index.js';
import type { ThrottleFlags } from '../health/throttle.js';
import { instantMs } from '../picoclaw/time.js';
import type { Registry } from './exposition.js';

/**
 * The health report's metrics (board: thermal, throttling, CPU frequency, memory, disk; PicoClaw:
 * gateway, sessions, seahorse.db), added to the registry src/metrics/guard-metrics.ts builds, under
 * its conventions.
 */

export const GATEWAY_STATES = ['down', 'starting', 'ready', 'hung'] as const;

export const bool = (b: boolean | null | undefined): number | null =>
  b === null || b === undefined ? null : b ? 1 : 0;
export const seconds = (ms: number | null | undefined): number | null =>
  ms === null || ms === undefined ? null : ms / 1000;
export const FLAGS: (keyof ThrottleFlags)[] = ['under_voltage', 'arm_freq_capped', 'throttled', 'soft_temp_limit'];

export function boardMetrics(r: Registry, h: HealthReport): void {
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
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched " +
        '(ever seen by the guard on this board, across reboots).',
      bool(uv.now),
      { period: 'now' },
    );
    r.gauge(
      'picoclaw_guard_under_voltage',
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched " +
        '(ever seen by the guard on this board, across reboots).',
      bool(uv.since_boot),
      { period: 'since_boot' },
    );
    r.gauge(
      'picoclaw_guard_under_voltage',
      "Under-voltage: now, since boot (firmware or the guard's latch), and latched " +
        '(ever seen by the guard on this board, across reboots).',
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
  storageMetrics(r, h);
}

/** The device holding the home: bytes written since boot, and the eMMC's own wear estimates (docs/emmc.md). */
function storageMetrics(r: Registry, h: HealthReport): void {
  const st = h.storage;
  if (!st.available) return;
  const device = { device: st.device };
  r.counter(
    'picoclaw_guard_disk_written_bytes_total',
    'Bytes written to the disk holding the PicoClaw home since boot (/proc/diskstats sectors written x 512).',
    st.written_bytes,
    device,
  );
  const w = st.emmc;
  if (!w.reported) return;
  for (const [type, raw, pct] of [
    ['a', w.life_time_est_typ_a, w.life_used_percent_a],
    ['b', w.life_time_est_typ_b, w.life_used_percent_b],
  ] as const) {
    r.gauge(
      'picoclaw_guard_emmc_life_time_estimate',
      'eMMC DEVICE_LIFE_TIME_EST_TYP_A/B as reported: 1 = 0-10 % of the rated life used ... 10 = 90-100 %, ' +
        '11 = past it, 0 = not defined.',
      raw,
      { ...device, type },
    );
    r.gauge(
      'picoclaw_guard_emmc_life_used_ratio',
      'Upper end of the eMMC life-time estimate step (0.1 ... 1.0; 1.0 also when past the rated life).',
      pct === null ? null : pct / 100,
      { ...device, type },
    );
  }
  r.gauge(
    'picoclaw_guard_emmc_pre_eol_info',
    'eMMC PRE_EOL_INFO as reported: 1 normal, 2 warning (80 % of reserved blocks used), 3 urgent, 0 not defined.',
    w.pre_eol_info,
    device,
  );
}

export function picoclawMetrics(r: Registry, h: HealthReport): void {
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
