import type { PicoClawHome } from '../picoclaw/home.js';
import { systemClock, type Clock } from '../io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../io/freespace.js';
import { readBoard, type Board } from './board.js';
import { DEFAULT_THRESHOLDS, type HealthThresholds } from './config.js';
import { readCpufreq, type Cpufreq } from './cpufreq.js';
import { readPicoClaw, type PicoClaw } from './picoclaw.js';
import { readFilesystem, readResources, type Filesystem, type Resources } from './resources.js';
import { rollup } from './rollup.js';
import { readStorage, type DeviceNumber, type Storage } from './storage.js';
import { readThermal, systeminformationFallback, type Thermal } from './thermal.js';
import { readThrottle, type Throttle } from './throttle.js';
import { noData, type Problem, type Status } from './types.js';
import { findVcgencmd, type VcgencmdCache } from './vcgencmd.js';

/**
 * One health report: every source, then the roll-up. Cheap by construction: sysfs and
 * procfs reads, one statfs, one readdir per sessions folder, two loopback HTTP requests,
 * and at most one process (vcgencmd, cached). systeminformation is not loaded unless
 * configured as a temperature fallback.
 */
export interface CollectOptions {
  /** Ends the gateway probes at once (the daemon stopping). */
  signal?: AbortSignal;
  sysRoot?: string;
  procRoot?: string;
  /** A vcgencmd path; null never runs one; undefined: thresholds.vcgencmd, else PATH (real /sys only). */
  vcgencmd?: string | null;
  env?: NodeJS.ProcessEnv;
  /** Where the under-voltage latch and the prune history live; null: no latch. */
  stateDir?: string | null;
  /** The PicoClaw home to check; null: PicoClaw is not checked. */
  home?: PicoClawHome | null;
  /** PicoClaw discovery failed (e.g. config.json is not JSON): reported as a problem. */
  homeError?: string;
  thresholds?: HealthThresholds;
  clock?: Clock;
  /** Monotonic milliseconds, for the report's own duration. */
  monotonic?: () => number;
  freeSpace?: FreeSpaceReader;
  /** st_dev of the home, for a mount source that names no device (default: stat, on the real /proc only). */
  deviceNumber?: (path: string) => DeviceNumber | null;
  cache?: VcgencmdCache;
  /** The last restart's bootstrap gap, from the startup report (the `startup` command). */
  lastBootstrapGapSeconds?: number | null;
  /** Counts one sessions folder (default: a readdir now); the daemon passes its cached counts. */
  countSessions?: (dir: string) => {
    sessions: number;
    cron_sessions: number;
    jsonl_bytes: number;
    error: string | null;
  };
}

export interface HealthReport {
  status: Status;
  problems: Problem[];
  collected_at: string;
  collect_duration_seconds: number;
  board: Board;
  temperature: Thermal;
  throttle: Throttle;
  cpufreq: Cpufreq;
  resources: Resources;
  filesystem: Filesystem;
  storage: Storage;
  picoclaw: PicoClaw;
  thresholds: HealthThresholds;
}

export const REAL_SYS = '/sys';

/** Which vcgencmd to run. With a fixture sysfs root the real one would describe this machine, not the fixture. */
export function resolveVcgencmd(
  opts: CollectOptions,
  t: HealthThresholds,
): { path: string | null; state?: 'not_found' | 'not_used' } {
  if (opts.vcgencmd === null) return { path: null, state: 'not_used' };
  if (typeof opts.vcgencmd === 'string') return { path: opts.vcgencmd };
  if (t.vcgencmd === false) return { path: null, state: 'not_used' };
  if (typeof t.vcgencmd === 'string') return { path: t.vcgencmd };
  if ((opts.sysRoot ?? REAL_SYS) !== REAL_SYS) return { path: null, state: 'not_used' };
  const found = findVcgencmd(opts.env ?? process.env);
  return found ? { path: found } : { path: null, state: 'not_found' };
}

export async function collectHealth(opts: CollectOptions = {}): Promise<HealthReport> {
  const mono = opts.monotonic ?? (() => performance.now());
  const t0 = mono();
  const sysRoot = opts.sysRoot ?? REAL_SYS;
  const procRoot = opts.procRoot ?? '/proc';
  const t = opts.thresholds ?? DEFAULT_THRESHOLDS;
  const clock = opts.clock ?? systemClock;
  const now = clock();
  const nowMs = () => clock().getTime();
  const stateDir = opts.stateDir ?? null;

  const board = readBoard(sysRoot, procRoot);
  let temperature = readThermal(sysRoot);
  if (!temperature.available && t.systeminformation_fallback && sysRoot === REAL_SYS)
    temperature = await systeminformationFallback();
  const cpufreq = readCpufreq(sysRoot);
  const resources = readResources(procRoot, sysRoot);
  const home = opts.home ?? null;
  const filesystem = home
    ? readFilesystem(home.home, procRoot, opts.freeSpace ?? statfsFreeSpace)
    : noData('no PicoClaw home to measure');
  const storage: Storage = filesystem.available
    ? readStorage({
        path: filesystem.path,
        sysRoot,
        procRoot,
        uptimeSeconds: resources.available ? resources.uptime_seconds : null,
        deviceNumber: opts.deviceNumber,
      })
    : noData('no PicoClaw home to locate');

  const vcg = resolveVcgencmd(opts, t);
  const [throttle, picoclaw] = await Promise.all([
    readThrottle({
      sysRoot,
      procRoot,
      vcgencmd: vcg.path,
      vcgencmdState: vcg.state,
      timeoutMs: t.vcgencmd_timeout_ms,
      cache: opts.cache,
      stateDir,
      now,
      nowMs,
      board: board.available ? board : null,
    }),
    home
      ? readPicoClaw({
          home,
          stateDir,
          timeoutMs: t.gateway_timeout_ms,
          hungAfterMs: t.gateway_hung_after_seconds * 1000,
          nowMs,
          lastBootstrapGapSeconds: opts.lastBootstrapGapSeconds,
          countSessions: opts.countSessions,
          signal: opts.signal,
        })
      : Promise.resolve(noData(opts.homeError ?? 'PicoClaw not checked')),
  ]);

  const { status, problems } = rollup(
    {
      temperature,
      throttle,
      filesystem,
      storage,
      picoclaw,
      picoclawRequested: home !== null || opts.homeError !== undefined,
    },
    t,
  );
  return {
    status,
    problems,
    collected_at: now.toISOString(),
    collect_duration_seconds: Math.round(mono() - t0) / 1000,
    board,
    temperature,
    throttle,
    cpufreq,
    resources,
    filesystem,
    storage,
    picoclaw,
    thresholds: { ...t },
  };
}
