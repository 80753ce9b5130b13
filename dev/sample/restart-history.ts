import type { BootstrapSample } from '../../src/state/bootstrap-samples.js';
import { MIB } from '../../src/startup-model/fit.js';
import type { SampleRestart } from './gateway-events.js';
import { renderGatewayLog } from './gatewaylog.js';
import { Rng } from './random.js';

/**
 * A restart history with a known startup-time law, for the model's tests and benchmark:
 * each restart's bootstrap gap is a + b·sessions + c·MiB plus Gaussian noise, written to
 * gateway.log as PicoClaw logs it (whole-second timestamps: the log's own rounding is part
 * of what the model must cope with), with the pre-start samples the guard would have taken.
 */
export interface Law {
  a: number;
  b: number;
  c: number;
  /** Standard deviation of the noise, seconds. */
  noise: number;
}

export interface Volume {
  sessions: number;
  jsonl_bytes: number;
}

export function gaussian(rng: Rng): number {
  const u = Math.max(rng.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

export function lawGap(law: Law, v: Volume, rng: Rng | null): number {
  const g = law.a + law.b * v.sessions + law.c * (v.jsonl_bytes / MIB) + (rng ? law.noise * gaussian(rng) : 0);
  return Math.max(0.1, g);
}

export interface History {
  restarts: SampleRestart[];
  samples: BootstrapSample[];
  /** The gap each restart really had (before the log's rounding). */
  gaps: number[];
}

/** Restarts `stepMs` apart ending before `endMs`, one per volume, pre-start samples taken 3 s before each. */
export function restartHistory(o: {
  law: Law;
  volumes: Volume[];
  seed: number;
  endMs: number;
  stepMs?: number;
  home: string;
}): History {
  const rng = new Rng(o.seed);
  const step = o.stepMs ?? 6 * 3600_000;
  const restarts: SampleRestart[] = [];
  const samples: BootstrapSample[] = [];
  const gaps: number[] = [];
  o.volumes.forEach((v, i) => {
    const startMs = o.endMs - (o.volumes.length - i) * step;
    const gap = lawGap(o.law, v, rng);
    gaps.push(gap);
    restarts.push({
      startMs,
      sessions: v.sessions,
      gapMs: Math.round(gap * 1000),
      end: 'stopped',
      stopMs: startMs + Math.round(gap * 1000) + 3600_000,
      traffic: 1,
    });
    samples.push({
      home: o.home,
      recorded_at: new Date(startMs - 3000).toISOString(),
      source: 'pre-start',
      sessions: v.sessions,
      jsonl_bytes: v.jsonl_bytes,
      db_bytes: null,
      restart_started_at: null,
      gap_seconds: null,
    });
  });
  return { restarts, samples, gaps };
}

/** gateway.log for a history: debug level, so the gap is short_expand → the next core tool. */
export function historyLog(h: History, home: string, seed: number): string {
  return renderGatewayLog({
    restarts: h.restarts,
    level: 'debug',
    events: false,
    seed,
    home,
    utcOffsetMin: 60,
    agents: ['main'],
  });
}
