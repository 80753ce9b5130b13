import { ExitCode, GuardError } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { rehearsedFreeSpace } from '../health/rehearsed-free-space.js';
import { resolveStateDir } from '../io/statedir.js';
import { assertPicoClawHome, type PicoClawHome } from '../picoclaw/home.js';
import { parseHealthConfig } from '../health/config.js';
import { collectHealth, type HealthReport } from '../health/index.js';
import type { ThrottleFlags } from '../health/throttle.js';
import type { Status } from '../health/types.js';
import { homeFromOpts } from './common.js';
import { DEFAULT_WIDTH, formatBytes, layout, outputWidth, type Line } from './format.js';
import { printJson } from './json-stream.js';

/**
 * `picoclaw-guard health [--json]`: the board and the gateway, with a status.
 * Exit 0 OK, 10 WARN, 11 CRITICAL (src/errors.ts), 2 for a bad config.
 * Nothing of PicoClaw's config.json is printed beyond what discovery reads (paths,
 * gateway host and port), and never the PID file's token.
 */
export const EXIT_BY_STATUS: Record<Status, number> = {
  OK: ExitCode.OK,
  WARN: ExitCode.HEALTH_WARN,
  CRITICAL: ExitCode.HEALTH_CRITICAL,
};

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const cfg = loadGuardConfig(str(opts.config));
  const thresholds = parseHealthConfig(cfg.sections.health, cfg.path, cfg.sections.prune);
  let home: PicoClawHome | null = null;
  let homeError: string | undefined;
  try {
    home = homeFromOpts(opts, false);
  } catch (err) {
    // A broken config.json stops PicoClaw too: that is a health finding, not a usage error.
    if (!(err instanceof GuardError)) throw err;
    homeError = err.message;
  }
  // A --home that is missing or no PicoClaw home is a typo on the command line (exit 2, as an empty folder),
  // not a finding about the board. A home from $PICOCLAW_HOME or the default ~/.picoclaw that is missing is
  // one: PicoClaw is gone from this board (CRITICAL, picoclaw_missing).
  if (home && typeof opts.home === 'string') assertPicoClawHome(home);
  const report = await collectHealth({
    sysRoot: str(opts.sysRoot) ?? '/sys',
    procRoot: str(opts.procRoot) ?? '/proc',
    vcgencmd: str(opts.vcgencmd),
    stateDir: resolveStateDir(str(opts.stateDir)),
    home,
    homeError,
    thresholds,
    // statfs, unless PICOGUARD_FAKE_FREE_BYTES rehearses a full disk (src/health/rehearsed-free-space.ts): health
    // deletes nothing, so it alone may.
    freeSpace: rehearsedFreeSpace(),
  });
  if (opts.json) printJson(report);
  else process.stdout.write(renderHealth(report, outputWidth(opts)) + '\n');
  return EXIT_BY_STATUS[report.status];
}

/** `mmcblk0 (SD): eMMC wear not reported by this card; 1.2 GiB written since boot, 310 MiB a day`. */
export function storageText(st: Extract<HealthReport['storage'], { available: true }>): string {
  const w = st.emmc;
  const hex = (v: number | null) => (v === null ? '?' : `0x${v.toString(16).padStart(2, '0')}`);
  const wear = w.reported
    ? `eMMC life used A ${w.life_used_percent_a === null ? '?' : `≤${w.life_used_percent_a} %`} (${hex(w.life_time_est_typ_a)}` +
      `), B ${w.life_used_percent_b === null ? '?' : `≤${w.life_used_percent_b} %`} (${hex(w.life_time_est_typ_b)})` +
      `${w.life_exceeded ? ' PAST RATED LIFE' : ''}, pre-EOL ${w.pre_eol ?? 'unknown'}`
    : w.reason.startsWith('not reported')
      ? `eMMC wear ${w.reason}`
      : `no eMMC wear (${w.reason})`;
  const writes =
    st.written_bytes === null
      ? 'writes unknown'
      : `${formatBytes(st.written_bytes)} written since boot` +
        (st.written_bytes_per_day !== null ? `, ${formatBytes(st.written_bytes_per_day)} a day` : '');
  return `${st.device}${st.card_type ? ` (${st.card_type})` : ''}: ${wear}; ${writes}`;
}

function hz(v: number | null): string {
  if (v === null) return '?';
  return v >= 1e9 ? `${(v / 1e9).toFixed(2)} GHz` : `${Math.round(v / 1e6)} MHz`;
}

function flags(f: ThrottleFlags | null): string {
  if (!f) return 'unknown';
  const on = [
    f.under_voltage ? 'under-voltage' : null,
    f.arm_freq_capped ? 'ARM frequency capped' : null,
    f.throttled ? 'throttled' : null,
    f.soft_temp_limit ? 'soft temperature limit' : null,
  ].filter((x): x is string => x !== null);
  return on.length > 0 ? on.join(', ') : 'none';
}

function duration(s: number): string {
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** The short human summary: the status line first, then one line per source, fitted to `width` columns. */
export function renderHealth(r: HealthReport, width: number = DEFAULT_WIDTH): string {
  const lines: (string | Line)[] = [];
  lines.push(r.problems.length === 0 ? r.status : `${r.status}: ${r.problems.map((p) => p.message).join('; ')}`);
  const row = (label: string, text: string) => lines.push({ text: `${label.padEnd(11)}${text}`, indent: 11 });

  const b = r.board;
  if (b.available) {
    const extra = [b.soc, b.arch, b.kernel ? `kernel ${b.kernel}` : null].filter((x) => x).join(', ');
    row('board', `${b.model ?? 'unknown model'}${extra ? ` (${extra})` : ''}`);
  } else row('board', `no data: ${b.reason}`);

  const th = r.temperature;
  if (th.available) {
    const cpu = th.cpu_celsius !== null ? `CPU ${th.cpu_celsius.toFixed(1)} °C from ${th.cpu_source}` : 'CPU unknown';
    const others = th.hwmon.filter(
      (c) => c.chip !== null && `hwmon ${c.chip}` !== th.cpu_source && c.chip !== 'cpu_thermal',
    );
    const rest = others.flatMap((c) =>
      c.temps
        .filter((s) => s.temp_celsius !== null)
        .map((s) => `${c.chip} ${s.sensor} ${s.temp_celsius!.toFixed(1)} °C`),
    );
    row('temp', [cpu, ...rest].join('; '));
  } else row('temp', `no data: ${th.reason}`);

  const tr = r.throttle;
  if (tr.available) {
    const uv = tr.under_voltage;
    const src =
      tr.source === 'vcgencmd'
        ? `vcgencmd ${tr.get_throttled}`
        : tr.source === 'rpi_volt'
          ? 'rpi_volt alarm only'
          : `legacy sysfs ${tr.get_throttled}`;
    row('throttle', `now: ${flags(tr.now)}; since boot: ${flags(tr.since_boot)} (${src})`);
    const uvText = !uv.detectable
      ? `not detectable: ${uv.not_detectable_reason}`
      : `now ${uv.now === null ? 'unknown' : uv.now ? 'YES' : 'no'}, since boot ` +
        `${uv.since_boot === null ? 'unknown' : uv.since_boot ? 'YES' : 'no'}` +
        (uv.latch.seen
          ? `; latched since ${uv.latch.first_seen_at}${uv.latch.this_boot === false ? ' (an earlier boot)' : ''}`
          : '');
    row('power', `under-voltage ${uvText}`);
  } else row('throttle', tr.reason);

  const cf = r.cpufreq;
  if (cf.available) {
    const govs = [...new Set(cf.cores.map((c) => c.governor ?? '?'))].join('/');
    const cur = cf.cores.map((c) => hz(c.cur_hertz));
    const same = cur.every((x) => x === cur[0]);
    const c0 = cf.cores[0]!;
    row(
      'cpu freq',
      `${cf.cores.length} cores at ${same ? cur[0] : cur.join(' ')} (range ${hz(c0.cpuinfo_min_hertz)}` +
        `-${hz(c0.cpuinfo_max_hertz)}, ${govs})`,
    );
  } else row('cpu freq', `no data: ${cf.reason}`);

  const rs = r.resources;
  if (rs.available) {
    const mem =
      rs.memory_available_bytes !== null && rs.memory_total_bytes !== null
        ? `${formatBytes(rs.memory_available_bytes)} available of ${formatBytes(rs.memory_total_bytes)}`
        : 'unknown';
    const swap = rs.swap_total_bytes
      ? `; swap ${formatBytes(rs.swap_free_bytes ?? 0)} free of ${formatBytes(rs.swap_total_bytes)}`
      : '; no swap';
    row('memory', mem + swap);
    const load =
      rs.load_1m !== null ? [rs.load_1m, rs.load_5m, rs.load_15m].map((x) => (x ?? 0).toFixed(2)).join(' ') : 'unknown';
    row(
      'load',
      `${load}${rs.cpus_online ? ` on ${rs.cpus_online} CPU${rs.cpus_online === 1 ? '' : 's'}` : ''}` +
        `${rs.uptime_seconds !== null ? `, up ${duration(rs.uptime_seconds)}` : ''}`,
    );
  } else row('memory', `no data: ${rs.reason}`);

  const fs = r.filesystem;
  if (fs.available) {
    const inodes = fs.free_inodes !== null ? `, ${fs.free_inodes} inodes free` : '';
    row(
      'disk',
      `${formatBytes(fs.free_bytes)} free of ${formatBytes(fs.size_bytes)}${inodes}` +
        ` (${fs.mount_point ?? fs.path}${fs.read_only ? ', READ-ONLY' : ''})`,
    );
  } else row('disk', `no data: ${fs.reason}`);
  const st = r.storage;
  if (st.available) row('card', storageText(st));
  else if (fs.available) row('card', `no data: ${st.reason}`);

  const pc = r.picoclaw;
  if (pc.available) {
    const g = pc.gateway;
    const who = g.pid !== null ? ` (pid ${g.pid}${g.version ? `, ${g.version}` : ''}, ${g.host}:${g.port})` : '';
    row('gateway', `${g.state}${who}: ${g.reason}`);
    const db = pc.seahorse.present
      ? `; seahorse.db ${formatBytes(pc.seahorse.db_bytes)} + WAL ${formatBytes(pc.seahorse.wal_bytes)}`
      : '';
    // Counted without reading a file: .jsonl sizes only (`sessions` shows .jsonl and .meta.json apart).
    row(
      'sessions',
      `${pc.sessions.count} in ${pc.sessions.stores.length} folder(s), .jsonl files ` +
        `${formatBytes(pc.sessions.jsonl_bytes)}${db}`,
    );
    const lp = pc.last_prune;
    row(
      'last prune',
      lp
        ? `${lp.at} ${lp.outcome}: ${lp.deleted_sessions} deleted, ${formatBytes(lp.freed_bytes)} freed`
        : 'none recorded',
    );
    if (pc.last_bootstrap_gap_seconds !== null)
      row('bootstrap', `last start's bootstrap gap ${pc.last_bootstrap_gap_seconds} s`);
  } else row('picoclaw', pc.reason);
  return layout(lines, width);
}
