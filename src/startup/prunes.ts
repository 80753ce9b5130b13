import type { StartupReport } from './types.js';
import { instantMs } from '../picoclaw/time.js';

/** A prune pass from the guard's history (src/state/history.ts), structurally. */
export interface PrunePass {
  at: string;
  deleted_sessions: number;
  freed_bytes: number;
  outcome?: string;
}

export interface PruneEffect {
  at: string;
  deleted_sessions: number;
  freed_bytes: number;
  /** The gap of the last restart before the prune and of the first after it. */
  gap_before: { restart: number; seconds: number } | null;
  gap_after: { restart: number; seconds: number } | null;
}

/**
 * Mark each restart that came after a prune pass (the latest pass since the previous
 * restart), and pair each pass with the gaps around it, so the user sees the gap fall.
 * Restarts without a date cannot be placed and are left unmarked. Mutates `report.restarts`.
 */
export function markPrunes(report: StartupReport, passes: PrunePass[]): PruneEffect[] {
  const useful = passes
    .filter((p) => p.deleted_sessions > 0 && (p.outcome === undefined || p.outcome === 'ok' || p.outcome === 'partial'))
    .map((p) => ({ p, ms: instantMs(p.at) }))
    .filter((x) => Number.isFinite(x.ms))
    .sort((a, b) => a.ms - b.ms);
  const dated = report.restarts.filter((r) => r.started_at !== null).map((r) => ({ r, ms: instantMs(r.started_at!) }));
  let prev = -Infinity;
  for (const { r, ms } of dated) {
    const between = useful.filter((x) => x.ms > prev && x.ms <= ms);
    const last = between[between.length - 1];
    if (last) {
      r.after_prune = {
        at: last.p.at,
        deleted_sessions: between.reduce((a, x) => a + x.p.deleted_sessions, 0),
        freed_bytes: between.reduce((a, x) => a + x.p.freed_bytes, 0),
      };
    }
    prev = ms;
  }
  return useful.map(({ p, ms }) => {
    const before = [...dated].reverse().find((d) => d.ms < ms && d.r.bootstrap_gap && !d.r.bootstrap_gap.lower_bound);
    const after = dated.find((d) => d.ms >= ms && d.r.bootstrap_gap && !d.r.bootstrap_gap.lower_bound);
    return {
      at: p.at,
      deleted_sessions: p.deleted_sessions,
      freed_bytes: p.freed_bytes,
      gap_before: before ? { restart: before.r.n, seconds: before.r.bootstrap_gap!.seconds } : null,
      gap_after: after ? { restart: after.r.n, seconds: after.r.bootstrap_gap!.seconds } : null,
    };
  });
}
