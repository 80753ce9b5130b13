import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { Rng } from '../../dev/sample/random.js';
import { historyLog, lawGap, restartHistory, type Volume } from '../../dev/sample/restart-history.js';
import { measureVolume } from '../../src/startup-model/learn.js';
import { readSamples, writeSamples } from '../../src/state/bootstrap-samples.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * max_bootstrap_seconds end to end, through the real CLI: a board whose past restarts follow
 * a known law (written to gateway.log, with the pre-start samples the guard took), a pass
 * that keeps the budget, and the next simulated restart.
 */
const LAW = { a: 4, b: 0.15, c: 0.9, noise: 1 };
const OFF = ['--max-age-days', '0', '--max-sessions', '0', '--max-db-size-mb', '0'];

function board(restarts: number) {
  const root = tempDir();
  const dir = join(root, 'home');
  buildSampleHome({ dir, sessions: 160, agents: 1, seahorse: false, toolResultBytes: 24_000, restarts: 0, seed: 11 });
  const home = discoverHome({ home: dir, env: {} });
  const now = measureVolume(home);
  // Past restarts at 35%..100% of today's volume, bytes per session jittered so that sessions and MiB separate.
  const rng = new Rng(5);
  const vols: Volume[] = Array.from({ length: restarts }, (_, i) => {
    const f = 0.35 + (0.65 * i) / Math.max(1, restarts - 1);
    return {
      sessions: Math.round(now.sessions * f),
      jsonl_bytes: Math.round(now.jsonl_bytes * f * (0.7 + 0.6 * rng.next())),
    };
  });
  // Whole seconds: the log's rounding of each gap, and so the fit, do not depend on when the test runs.
  const h = restartHistory({
    law: LAW,
    volumes: vols,
    seed: 21,
    endMs: Math.floor(Date.now() / 1000) * 1000 - 60_000,
    stepMs: 3 * 3600_000,
    home: dir,
  });
  writeFileSync(join(dir, 'logs', 'gateway.log'), historyLog(h, dir, 22));
  const state = join(root, 'state');
  writeSamples(state, dir, h.samples);
  return { dir, home, state, now };
}

describe('max_bootstrap_seconds', () => {
  it('deletes the oldest sessions of the default agent so that the next restart meets the budget', () => {
    const b = board(10);
    const before = lawGap(LAW, b.now, null);
    const budget = 30;
    expect(before).toBeGreaterThan(budget + 5);

    const r = runCli([
      'prune',
      '--home',
      b.dir,
      '--state-dir',
      b.state,
      '--apply',
      '--pre-start',
      '--max-bootstrap-seconds',
      String(budget),
      ...OFF,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep.bootstrap).toMatchObject({ state: 'applied', trusted: true, budget_seconds: budget });
    expect(rep.bootstrap.model.samples).toBe(10);
    expect(rep.totals.by_reason.max_bootstrap_seconds).toBeGreaterThan(0);
    const victims = rep.sessions.filter((s: { reason: string }) => s.reason === 'max_bootstrap_seconds');
    expect(
      victims.every(
        (s: { action: string; detail: string }) =>
          s.action === 'delete' &&
          /next restart predicted .* budget \(with 2 × ± of room\) allows about \d+ sessions/.test(s.detail),
      ),
    ).toBe(true);
    // Every earlier rule holds: the newest and the undated are still there.
    expect(
      rep.sessions.filter(
        (s: { reason: string; action: string }) =>
          (s.reason === 'newest' || s.reason === 'undated') && s.action === 'delete',
      ),
    ).toHaveLength(0);
    // The learnt gaps were written back, and the pre-start pass recorded the volume the gateway now starts with.
    const samples = readSamples(b.state, b.dir);
    expect(samples.filter((s) => s.gap_seconds !== null)).toHaveLength(10);
    const pending = samples.filter((s) => s.restart_started_at === null);
    expect(pending).toHaveLength(1);
    const after = measureVolume(b.home);
    expect(pending[0]).toMatchObject({ source: 'pre-start', sessions: after.sessions, jsonl_bytes: after.jsonl_bytes });
    expect(after.sessions).toBeLessThan(b.now.sessions);

    // The next restart, by the same law: its expected gap is under the budget, and so are most
    // restarts with the law's noise (the cap keeps two standard errors of the prediction as room).
    const next = lawGap(LAW, after, null);
    expect(next).toBeLessThan(budget);
    const rng = new Rng(99);
    const draws = Array.from({ length: 400 }, () => lawGap(LAW, after, rng));
    expect(draws.filter((g) => g < budget).length / draws.length).toBeGreaterThan(0.9);

    // Logged, it is paired with the pre-start sample; `startup` predicts within its error.
    const h = restartHistory({
      law: { ...LAW, noise: 0 },
      volumes: [after],
      seed: 1,
      endMs: Date.parse(pending[0]!.recorded_at) + 3000 + 6 * 3600_000,
      home: b.dir,
    });
    h.restarts[0]!.gapMs = Math.round(next * 1000);
    h.restarts[0]!.end = 'running';
    appendFileSync(join(b.dir, 'logs', 'gateway.log'), historyLog(h, b.dir, 5));
    const s = runCli(['startup', '--home', b.dir, '--state-dir', b.state, '--json'], {
      PICOCLAW_SESSION_PRUNE_MAX_BOOTSTRAP_SECONDS: String(budget),
    });
    expect(s.code, s.stderr).toBe(0);
    const j = JSON.parse(s.stdout);
    // gateway.log's whole-second timestamps measure it to ±1 s.
    expect(Math.abs(j.summary.latest_gap.seconds - next)).toBeLessThanOrEqual(1);
    expect(j.summary.latest_gap.seconds).toBeLessThanOrEqual(budget);
    expect(j.prediction).toMatchObject({ state: 'ok', target_seconds: budget, measured_samples: 11 });
    expect(Math.abs(j.prediction.predicted_seconds - lawGap(LAW, after, null))).toBeLessThan(
      3 * j.prediction.error_seconds,
    );
    const text = runCli(['startup', '--home', b.dir, '--state-dir', b.state, '--wide'], {
      PICOCLAW_SESSION_PRUNE_MAX_BOOTSTRAP_SECONDS: String(budget),
    }).stdout;
    expect(text).toMatch(
      /next restart: about \d+ s \(±\d+ s\) for \d+ sessions \/ \d+ MiB; under 30 s needs ≤ \d+ sessions/,
    );
  });

  it('with too few restarts it deletes nothing for the key and says how many more it needs', () => {
    const b = board(3);
    const r = runCli([
      'prune',
      '--home',
      b.dir,
      '--state-dir',
      b.state,
      '--max-bootstrap-seconds',
      '20',
      ...OFF,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep.bootstrap).toMatchObject({ state: 'untrusted', trusted: false, more_restarts_needed: 2 });
    expect(rep.totals.delete).toBe(0);
    const text = runCli([
      'prune',
      '--home',
      b.dir,
      '--state-dir',
      b.state,
      '--max-bootstrap-seconds',
      '20',
      ...OFF,
      '--wide',
    ]).stdout;
    expect(text).toMatch(/startup budget: nothing deleted for max_bootstrap_seconds: .*it needs 2 more restart\(s\)/);
    // A dry-run writes nothing: the samples are still unpaired on disk.
    expect(readSamples(b.state, b.dir).every((s) => s.gap_seconds === null)).toBe(true);
  });
});
