import { errnoCode, errorMessage } from '../errors.js';
import { analyzeStartupLog, type StartupReport } from '../startup/index.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { readSamples, writeSamples, type BootstrapSample } from '../state/bootstrap-samples.js';
import {
  fitBootstrapModel,
  predictGap,
  predictionError,
  sessionsForBudget,
  trustFor,
  type BootstrapModel,
  type FitResult,
  type Trust,
} from './fit.js';
import { daemonSample, pairSamples, points } from './samples.js';
import type { Volume } from './volume.js';

/**
 * The startup-time model's I/O: measure the volume the gateway bootstraps, keep the
 * samples in the state folder (the volume: ./volume.ts), pair them with gateway.log's restarts, fit, predict.
 */
// Read from here by the daemon, `startup predict` and the planner; the pre-start pass imports ./volume.ts alone.
export { bootstrapDir, measureVolume, recordPreStart, type Volume } from './volume.js';

export interface Learned {
  samples: BootstrapSample[];
  fit: FitResult;
  /** Samples with a measured gap. */
  measured: number;
  warnings: string[];
}

/**
 * Pair the stored samples with the restarts in `report` (the caller's analysis of gateway.log,
 * else it is read here), add the daemon's sample for a new restart when `observe` is given,
 * write back what changed when `write`, and fit.
 */
export async function learn(
  home: PicoClawHome,
  stateDir: string,
  o: { nowMs: number; write: boolean; report?: StartupReport | null; observe?: Volume },
): Promise<Learned> {
  const warnings: string[] = [];
  let samples = readSamples(stateDir, home.home);
  let report = o.report ?? null;
  if (report === undefined || report === null) {
    report = await analyzeStartupLog({ path: home.logPath }, { maxRestarts: 200 });
    if (report.source.state === 'unreadable')
      warnings.push(`${home.logPath}: ${report.source.error}: restarts cannot be paired with their volume`);
  }
  const restarts = report.source.state === 'ok' ? report.restarts : [];
  const paired = pairSamples(samples, restarts, o.nowMs);
  samples = paired.samples;
  let changed = paired.changed;
  if (o.observe) {
    const d = daemonSample(samples, restarts, o.observe, home.home, o.nowMs);
    if (d) {
      samples.push(d);
      changed = true;
    }
  }
  if (changed && o.write) {
    try {
      writeSamples(stateDir, home.home, samples);
    } catch (err) {
      warnings.push(`cannot keep the startup model's samples in ${stateDir}: ${errnoCode(err) ?? errorMessage(err)}`);
    }
  }
  const pts = points(samples);
  return { samples, fit: fitBootstrapModel(pts), measured: pts.length, warnings };
}

/** What `startup`, /startup and the metric show: the next restart's gap at today's volume. */
export interface StartupPrediction {
  state: 'ok' | 'no_model';
  /** Why there is no prediction yet, and what it needs. */
  why: string | null;
  predicted_seconds: number | null;
  /**
   * ± for this prediction: the restarts' scatter and the coefficients' uncertainty at this volume (predictionError).
   */
  error_seconds: number | null;
  /** The fit's RMSE on its own samples. */
  rmse_seconds: number | null;
  volume: Volume;
  target_seconds: number;
  /** Sessions that keep the gap plus its error under the target (at today's MiB per session); null: none would. */
  sessions_for_target: number | null;
  model: BootstrapModel | null;
  samples: number;
  measured_samples: number;
  /** Whether max_bootstrap_seconds would delete by this model (target = the budget). */
  trust: Trust;
}

/** Shown when max_bootstrap_seconds is not set: a target for the "needs ≤ N sessions" figure. */
export const DEFAULT_TARGET_SECONDS = 30;

export function predictionFor(l: Learned, volume: Volume, targetSeconds: number): StartupPrediction {
  const trust = trustFor(l.fit, l.measured, targetSeconds);
  const base = {
    volume,
    target_seconds: targetSeconds,
    samples: l.samples.length,
    measured_samples: l.measured,
    trust,
  };
  if (!l.fit.model)
    return {
      ...base,
      state: 'no_model',
      why: l.fit.why,
      predicted_seconds: null,
      error_seconds: null,
      rmse_seconds: null,
      sessions_for_target: null,
      model: null,
    };
  const m = l.fit.model;
  const forTarget = sessionsForBudget(m, targetSeconds, volume.sessions > 0 ? volume.jsonl_bytes / volume.sessions : 0);
  return {
    ...base,
    state: 'ok',
    why: null,
    predicted_seconds: Math.round(predictGap(m, volume.sessions, volume.jsonl_bytes) * 10) / 10,
    error_seconds: Math.round(predictionError(m, volume.sessions, volume.jsonl_bytes) * 10) / 10,
    rmse_seconds: Math.round(m.rmse_seconds * 10) / 10,
    sessions_for_target: forTarget === Infinity ? null : forTarget,
    model: m,
  };
}
