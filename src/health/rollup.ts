import { formatBytes } from '../io/bytes.js';
import type { HealthThresholds } from './config.js';
import type { Filesystem } from './resources.js';
import type { PicoClaw } from './picoclaw.js';
import type { Storage } from './storage.js';
import type { Thermal } from './thermal.js';
import type { Throttle, ThrottleFlags } from './throttle.js';
import type { Level, Problem, Status } from './types.js';

/**
 * Readings + thresholds → one status and the list of reasons. Pure: no I/O, no clock,
 * so every rule is tested on plain objects. The status is the worst problem's level.
 */
export interface RollupInput {
  temperature: Thermal;
  throttle: Throttle;
  filesystem: Filesystem;
  picoclaw: PicoClaw;
  /** The device holding the home; absent: not looked at. */
  storage?: Storage;
  /** PicoClaw was looked for (a missing home is then a problem, not "not checked"). */
  picoclawRequested: boolean;
}

const MIB = 1024 * 1024;

const FLAG_TEXT: Record<Exclude<keyof ThrottleFlags, 'under_voltage'>, string> = {
  arm_freq_capped: 'ARM frequency capped',
  throttled: 'throttled',
  soft_temp_limit: 'soft temperature limit',
};

function throttleFlags(f: ThrottleFlags | null): string[] {
  if (!f) return [];
  return (Object.keys(FLAG_TEXT) as (keyof typeof FLAG_TEXT)[]).filter((k) => f[k]).map((k) => FLAG_TEXT[k]);
}

export function rollup(input: RollupInput, t: HealthThresholds): { status: Status; problems: Problem[] } {
  const problems: Problem[] = [];
  const add = (level: Level, code: string, message: string) => {
    if (level !== 'ok') problems.push({ level, code, message });
  };

  const th = input.temperature;
  if (th.available && th.cpu_celsius !== null) {
    const c = th.cpu_celsius;
    if (c >= t.temp_critical_celsius)
      add('critical', 'temperature', `CPU at ${c.toFixed(1)} °C (critical from ${t.temp_critical_celsius} °C)`);
    else if (c >= t.temp_warn_celsius)
      add('warn', 'temperature', `CPU at ${c.toFixed(1)} °C (warn from ${t.temp_warn_celsius} °C)`);
  }

  const tr = input.throttle;
  if (tr.available) {
    const word = tr.get_throttled ? ` (get_throttled ${tr.get_throttled})` : '';
    const uv = tr.under_voltage;
    if (uv.now === true)
      add(t.under_voltage_now, 'under_voltage_now', `under-voltage now${word}: the supply or cable is too weak`);
    else if (uv.since_boot === true)
      add(
        t.under_voltage_since_boot,
        'under_voltage_since_boot',
        `under-voltage since boot${word}: the supply or cable is too weak`,
      );
    else if (uv.latch.seen && uv.latch.this_boot === false) {
      add(
        t.under_voltage_previous_boot,
        'under_voltage_previous_boot',
        `under-voltage seen in an earlier boot (first ${uv.latch.first_seen_at}` +
          `, last boot with it ${uv.latch.boot_seen_at})`,
      );
    }
    if (tr.pi5_power?.low_power_reset)
      add(
        t.under_voltage_since_boot,
        'low_power_reset',
        'the previous boot ended in a low-power reset (brownout): check the power supply',
      );
    const now = throttleFlags(tr.now);
    const since = throttleFlags(tr.since_boot);
    if (now.length > 0) add(t.throttled_now, 'throttled_now', `${now.join(', ')} now${word}`);
    else if (since.length > 0)
      add(t.throttled_since_boot, 'throttled_since_boot', `${since.join(', ')} since boot${word}`);
    if (tr.vcgencmd.state === 'no_access' || tr.vcgencmd.state === 'timeout' || tr.vcgencmd.state === 'error') {
      add(
        t.vcgencmd_failed,
        'vcgencmd_failed',
        `vcgencmd get_throttled failed: ${tr.vcgencmd.error ?? tr.vcgencmd.state}`,
      );
    }
  }

  const fs = input.filesystem;
  if (fs.available) {
    const at = fs.mount_point ? ` on ${fs.mount_point}` : '';
    if (fs.read_only)
      add('critical', 'filesystem_read_only', `the file system${at} holding PicoClaw is mounted read-only`);
    if (fs.free_bytes < t.disk_free_critical_mb * MIB)
      add(
        'critical',
        'disk_free',
        `${formatBytes(fs.free_bytes)} free${at} (critical below ${t.disk_free_critical_mb} MiB)`,
      );
    else if (fs.free_bytes < t.disk_free_warn_mb * MIB)
      add('warn', 'disk_free', `${formatBytes(fs.free_bytes)} free${at} (warn below ${t.disk_free_warn_mb} MiB)`);
    if (fs.free_inodes !== null && fs.total_inodes) {
      const pct = (100 * fs.free_inodes) / fs.total_inodes;
      if (pct < t.inodes_free_critical_percent)
        add(
          'critical',
          'inodes_free',
          `${pct.toFixed(1)} % of inodes free${at} (critical below ${t.inodes_free_critical_percent} %)`,
        );
      else if (pct < t.inodes_free_warn_percent)
        add(
          'warn',
          'inodes_free',
          `${pct.toFixed(1)} % of inodes free${at} (warn below ${t.inodes_free_warn_percent} %)`,
        );
    }
  }

  const st = input.storage;
  if (st?.available && st.emmc.reported) {
    const w = st.emmc;
    const used = Math.max(w.life_used_percent_a ?? 0, w.life_used_percent_b ?? 0);
    const on = `the eMMC ${st.device}`;
    if (w.life_exceeded)
      add(t.emmc_life_exceeded, 'emmc_life', `${on} is past its rated life (life_time estimate 0x0B): replace it`);
    else if (t.emmc_life_warn_percent > 0 && used >= t.emmc_life_warn_percent)
      add(
        'warn',
        'emmc_life',
        `${on} has used up to ${used} % of its rated life (warn from ${t.emmc_life_warn_percent} %)`,
      );
    if (w.pre_eol === 'urgent')
      add(t.emmc_pre_eol_urgent, 'emmc_pre_eol', `${on} reports pre-EOL urgent: its reserved blocks are nearly gone`);
    else if (w.pre_eol === 'warning')
      add(t.emmc_pre_eol_warning, 'emmc_pre_eol', `${on} reports pre-EOL warning: 80 % of its reserved blocks used`);
  }

  const pc = input.picoclaw;
  if (!pc.available) {
    if (input.picoclawRequested) add(t.gateway_not_ready, 'picoclaw_missing', pc.reason);
  } else {
    const g = pc.gateway;
    if (g.state === 'starting')
      add(t.gateway_not_ready === 'ok' ? 'ok' : 'warn', 'gateway_starting', `gateway starting: ${g.reason}`);
    else if (g.state !== 'ready') add(t.gateway_not_ready, `gateway_${g.state}`, `gateway ${g.state}: ${g.reason}`);
    const budget = t.max_db_size_mb;
    if (budget !== null && budget > 0 && pc.seahorse.present) {
      const used = pc.seahorse.total_bytes;
      const pct = (100 * used) / (budget * MIB);
      if (pct >= t.db_size_warn_percent) {
        add(
          'warn',
          'seahorse_db_size',
          `seahorse.db + WAL is ${formatBytes(used)}, ${Math.round(pct)} % of max_db_size_mb ` +
            `${budget} (warn from ${t.db_size_warn_percent} %)`,
        );
      }
    }
    for (const s of pc.sessions.stores)
      if (s.error) add('warn', 'sessions_unreadable', `sessions folder ${s.dir}: ${s.error}`);
    const lp = pc.last_prune;
    if (lp?.displaced_by_undated) {
      add(
        'warn',
        'undated_sessions_displace',
        `${lp.undated_sessions ?? '?'} undated session(s) count toward max_sessions and are never deleted: the ` +
          `last prune (${lp.at}) deleted ${lp.displaced_by_undated} dated session(s) in their place`,
      );
    }
    if (lp?.size_limit_unmet)
      add(
        'warn',
        'seahorse_limit_unmet',
        `seahorse.db cannot be brought under max_db_size_mb by pruning (last prune ${lp.at}): ${lp.size_limit_unmet}`,
      );
  }

  const status: Status = problems.some((p) => p.level === 'critical')
    ? 'CRITICAL'
    : problems.length > 0
      ? 'WARN'
      : 'OK';
  return { status, problems };
}
