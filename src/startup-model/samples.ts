import type { RestartEntry } from '../startup/index.js';
import type { BootstrapSample } from '../state/bootstrap-samples.js';
import type { VolumePoint } from './fit.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * Pairing the volume samples with the restarts gateway.log shows. Pure.
 *
 * A pre-start sample is measured just before the gateway starts: it belongs to the first
 * restart logged at most 15 minutes later (whole-second log times are truncated, so up to
 * 5 s "before" it counts too); when several were taken before one restart, the latest one
 * wins. A daemon sample names its restart when it is taken. The gap is filled in once the
 * log shows that restart's complete bootstrap gap (not a lower bound, seahorse on).
 */
export const PAIR_BEFORE_MS = 5_000;
export const PAIR_AFTER_MS = 15 * 60_000;
/** The daemon records a restart only this soon after it started (the volume then is still the volume at the start). */
export const DAEMON_WINDOW_MS = 10 * 60_000;
/**
 * A sample still without a gap after this long never gets one (no restart followed, or it crashed in the bootstrap).
 */
export const STALE_MS = 2 * 86_400_000;

const ms = (iso: string | null) => (iso === null ? NaN : instantMs(iso));

function usable(r: RestartEntry): boolean {
  return r.started_at !== null && r.end !== 'failed' && !r.seahorse_off;
}

function completeGap(r: RestartEntry): number | null {
  return r.bootstrap_gap && !r.bootstrap_gap.lower_bound && !r.seahorse_off ? r.bootstrap_gap.seconds : null;
}

export interface PairResult {
  samples: BootstrapSample[];
  changed: boolean;
}

export function pairSamples(input: BootstrapSample[], restarts: RestartEntry[], nowMs: number): PairResult {
  let changed = false;
  const samples = input.map((s) => ({ ...s }));
  const starts = restarts.filter(usable).map((r) => ({ r, at: ms(r.started_at) }));
  const claimed = new Set(samples.filter((s) => s.restart_started_at !== null).map((s) => ms(s.restart_started_at)));
  for (const { r, at } of starts) {
    if (claimed.has(at)) continue;
    const pending = samples.filter(
      (s) =>
        s.source === 'pre-start' &&
        s.restart_started_at === null &&
        ms(s.recorded_at) - PAIR_BEFORE_MS <= at &&
        at <= ms(s.recorded_at) + PAIR_AFTER_MS,
    );
    if (pending.length === 0) continue;
    const s = pending.reduce((a, b) => (ms(b.recorded_at) > ms(a.recorded_at) ? b : a));
    s.restart_started_at = r.started_at;
    claimed.add(at);
    changed = true;
  }
  const byStart = new Map(starts.map(({ r, at }) => [at, r]));
  for (const s of samples) {
    if (s.restart_started_at === null || s.gap_seconds !== null) continue;
    const r = byStart.get(ms(s.restart_started_at));
    const gap = r ? completeGap(r) : null;
    if (gap !== null) {
      s.gap_seconds = gap;
      changed = true;
    }
  }
  const kept = samples.filter((s) => s.gap_seconds !== null || nowMs - ms(s.recorded_at) < STALE_MS);
  if (kept.length !== samples.length) changed = true;
  return { samples: kept, changed };
}

/** The daemon's sample for the latest restart, when it is new (recent and not yet paired). */
export function daemonSample(
  samples: BootstrapSample[],
  restarts: RestartEntry[],
  volume: Omit<BootstrapSample, 'home' | 'recorded_at' | 'source' | 'restart_started_at' | 'gap_seconds'>,
  home: string,
  nowMs: number,
): BootstrapSample | null {
  const latest = [...restarts].reverse().find(usable);
  if (!latest) return null;
  const at = ms(latest.started_at);
  if (!(nowMs - at <= DAEMON_WINDOW_MS && nowMs >= at - PAIR_BEFORE_MS)) return null;
  if (samples.some((s) => s.restart_started_at !== null && ms(s.restart_started_at) === at)) return null;
  return {
    home,
    recorded_at: new Date(nowMs).toISOString(),
    source: 'daemon',
    ...volume,
    restart_started_at: latest.started_at,
    gap_seconds: completeGap(latest),
  };
}

export function points(samples: BootstrapSample[]): VolumePoint[] {
  return samples
    .filter((s) => s.gap_seconds !== null)
    .map((s) => ({ sessions: s.sessions, jsonlBytes: s.jsonl_bytes, gapSeconds: s.gap_seconds! }));
}
