import type { HealthReport } from '../health/index.js';
import type { ResolvedValue } from '../prune/policy.js';
import type { GatewaySince, Sample } from './history.js';
import type { StartupView } from './readings.js';

/** What the status page is rendered from (./status-page.ts and ./status-sections.ts read it). */

/** One prune pass as the page's table shows it. */
export interface PassRow {
  at_ms: number;
  outcome: string;
  deleted_sessions: number;
  freed_bytes: number;
  sessions_after: number | null;
}

/** The startup model's forecast of the next bootstrap gap, when there is one. */
export interface GapPrediction {
  next_gap_seconds: number;
  low_seconds?: number | null;
  high_seconds?: number | null;
  basis?: string | null;
}

export interface PageInput {
  nowMs: number;
  version: string;
  startedAtMs: number;
  refreshSeconds: number;
  health: HealthReport | null;
  /** The history, oldest first, perhaps already thinned (the page thins it further to MAX_CHART_POINTS). */
  samples: Sample[];
  /** Readings in the history (more than `samples` when they were thinned). */
  historyLength: number;
  historyCapacity: number;
  gateway: GatewaySince | null;
  /** Undated sessions per agent, as the last prune pass of this daemon classified them. */
  undated: { at_ms: number; per_agent: Record<string, number> } | null;
  policy: Record<string, ResolvedValue<unknown>>;
  intervalSeconds: number;
  intervalSource: 'policy' | 'env';
  passes: PassRow[];
  schedule: { enabled: boolean; running: boolean; next_run_at_ms: number | null };
  /** prune.schedule ("30 3 * * *" (Europe/Berlin)) and its next slots; null or absent: the interval. */
  cron?: { text: string; next_runs_ms: number[] } | null;
  startup: StartupView | null;
  startupMissing: { error: string; path: string } | null;
  /** Session count nearest a time, from the history (null when it does not reach back so far). */
  sessionsAt: (ms: number) => number | null;
  prediction: GapPrediction | null;
  maxDbBytes: number | null;
}
