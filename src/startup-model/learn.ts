import { errnoCode, errorMessage } from '../errors.js';
import { countSessions } from '../health/picoclaw.js';
import { analyzeStartupLog, type StartupReport } from '../startup/index.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { dbFileBytes } from '../picoclaw/seahorse.js';
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

/**
 * The startup-time model's I/O: measure the volume the gateway bootstraps, keep the
 * samples in the state folder, pair them with gateway.log's restarts, fit, predict.
 */
export interface Volume {
  sessions: number;
  jsonl_bytes: number;
  db_bytes: number | null;
}

/** The default agent's sessions folder: the only one bootstrapped at start. */
export function bootstrapDir(home: PicoClawHome): string {
  return (home.agents.find((a) => a.id === home.defaultAgent) ?? home.agents[0]!).sessionsDir;
}

/** One readdir (+ an lstat per transcript) and two stats. */
export function measureVolume(home: PicoClawHome): Volume {
  const c = countSessions(bootstrapDir(home));
  const db = dbFileBytes(home.seahorsePath);
  return { sessions: c.sessions, jsonl_bytes: c.jsonl_bytes, db_bytes: db.db > 0 ? db.total : null };
}

/** The pre-start pass: the volume just before the gateway starts, paired with its restart later. */
export function recordPreStart(home: PicoClawHome, stateDir: string, nowMs: number): BootstrapSample {
  const s: BootstrapSample = {
    home: home.home,
    recorded_at: new Date(nowMs).toISOString(),
    source: 'pre-start',
    ...measureVolume(home),
    restart_started_at: null,
    gap_seconds: null,
  };
  writeSamples(stateDir, home.home, [...readSamples(stateDir, home.home), s]);
  return s;
}

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
