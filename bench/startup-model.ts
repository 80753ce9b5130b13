import { analyzeStartupLog } from '../src/startup/index.js';
import { Rng } from '../dev/sample/random.js';
import { historyLog, lawGap, restartHistory, type Law, type Volume } from '../dev/sample/restart-history.js';
import { CAP_MARGIN, fitBootstrapModel, MIB, predictGap, predictionError } from '../src/startup-model/fit.js';
import { pairSamples, points } from '../src/startup-model/samples.js';

/**
 * The startup-time model's prediction error on generated gateway.logs.
 *
 *   npm run build && node dist/bench/startup-model.js
 *
 * For each noise level and number of past restarts, several histories follow a known law
 * gap = a + b·sessions + c·MiB + N(0, noise²): written as PicoClaw logs them (debug level,
 * whole-second timestamps), read back by the guard's log analysis, paired with the pre-start
 * samples, fitted. Each fit then predicts 200 new volumes; the table compares its predictions
 * with the law (error of the model), with the noisy gaps a restart would really show (error
 * a user sees), and with the error the fit states (its RMSE on its own samples).
 * Deterministic: the seeds are fixed.
 */
const LAW: Omit<Law, 'noise'> = { a: 6, b: 0.12, c: 0.8 };
const NOISES = [0, 1, 2, 4, 8];
const COUNTS = [5, 10, 20, 50];
const TRIALS = 20;
const END = Date.UTC(2026, 10, 30, 12);

function volume(rng: Rng): Volume {
  const sessions = rng.int(20, 500);
  return { sessions, jsonl_bytes: Math.round(sessions * rng.int(20, 250) * 1024) };
}

const rms = (xs: number[]) => Math.sqrt(xs.reduce((a, x) => a + x * x, 0) / xs.length);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function trial(law: Law, n: number, seed: number) {
  const rng = new Rng(seed);
  const vols = Array.from({ length: n }, () => volume(rng));
  const h = restartHistory({ law, volumes: vols, seed: seed + 1, endMs: END, home: '/bench' });
  const report = await analyzeStartupLog({
    stream: (async function* () {
      yield historyLog(h, '/bench', seed + 2);
    })(),
  });
  const fit = fitBootstrapModel(points(pairSamples(h.samples, report.restarts, END).samples));
  if (!fit.model) return null;
  const m = fit.model;
  const test = Array.from({ length: 200 }, () => volume(rng));
  const vsLaw = test.map((v) => predictGap(m, v.sessions, v.jsonl_bytes) - lawGap(law, v, null));
  const seen = test.map((v) => ({
    e: predictGap(m, v.sessions, v.jsonl_bytes) - lawGap(law, v, rng),
    pm: predictionError(m, v.sessions, v.jsonl_bytes),
  }));
  // The log measures to whole seconds: a band under 1 s cannot be told apart from the rounding.
  const within = seen.filter((x) => Math.abs(x.e) <= 2 * Math.max(1, x.pm)).length / seen.length;
  // What the cap relies on: a real restart above prediction + CAP_MARGIN × its ± (one-sided).
  const over = seen.filter((x) => x.e < -CAP_MARGIN * x.pm).length / seen.length;
  return {
    kind: m.kind,
    stated: m.rmse_seconds,
    pm: median(seen.map((x) => x.pm)),
    law: rms(vsLaw),
    seen: rms(seen.map((x) => x.e)),
    within,
    over,
    b: m.b,
    c: m.c,
  };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  console.log(
    `law: gap = ${LAW.a} s + ${LAW.b} s/session + ${LAW.c} s/MiB + noise; sessions 20-500, 20-250 KiB each; ` +
      `${TRIALS} histories per row, 200 predictions each`,
  );
  console.log('');
  console.log(
    '| noise (s) | restarts | fits | RMSE on its samples (median, s) | stated ' +
      '± of a prediction (median, s) | error vs the law (RMS, s) | error vs a ' +
      'real restart (RMS, s) | real restarts within ±2× stated | real restarts ' +
      'above prediction + 2× stated (the cap line) | b (s/session, median) | ' +
      'c (s/MiB, median) |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const noise of NOISES) {
    for (const n of COUNTS) {
      const rows = [];
      for (let t = 0; t < TRIALS; t++) {
        const r = await trial({ ...LAW, noise }, n, 1000 * noise + 37 * n + t);
        if (r) rows.push(r);
      }
      const f = (x: number, d = 2) => x.toFixed(d);
      console.log(
        `| ${noise} | ${n} | ${rows.length}/${TRIALS}${rows.some((r) => r.kind !== 'sessions+mib') ? ` (${rows.filter((r) => r.kind !== 'sessions+mib').length} one-variable)` : ''}` +
          ` | ${f(median(rows.map((r) => r.stated)))} | ${f(median(rows.map((r) => r.pm)))}` +
          ` | ${f(median(rows.map((r) => r.law)))} | ${f(median(rows.map((r) => r.seen)))}` +
          ` | ${f((100 * rows.reduce((a, r) => a + r.within, 0)) / rows.length, 0)}` +
          `% | ${f((100 * rows.reduce((a, r) => a + r.over, 0)) / rows.length, 0)}` +
          `% | ${f(median(rows.map((r) => r.b)), 3)} | ${f(median(rows.map((r) => r.c)), 2)}` +
          ` |`,
      );
    }
  }
  console.log('');
  console.log(`(${Math.round(performance.now() - t0)} ms; MiB = ${MIB} bytes)`);
}

await main();
