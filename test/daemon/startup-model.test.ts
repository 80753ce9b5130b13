import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { historyLog, restartHistory, type Volume } from '../../dev/sample/restart-history.js';
import { measureVolume } from '../../src/startup-model/learn.js';
import { readSamples, writeSamples } from '../../src/state/bootstrap-samples.js';
import { tempDir } from '../support/tmp.js';
import { startDaemon } from './support.js';

/**
 * The daemon's part of the startup-time model: it records the volume of a restart it sees
 * for the first time (no pre-start sample for it), keeps the sample with its gap, and serves
 * the prediction on /startup and /metrics.
 */
describe('picoclaw-guard run: the startup-time model', () => {
  it(
    'records a new restart once, and serves the prediction on /startup and ' +
      'as picoclaw_guard_bootstrap_predicted_seconds',
    async () => {
      const root = tempDir('pcg-daemon-');
      const dir = join(root, 'home');
      buildSampleHome({ dir, sessions: 60, agents: 1, seahorse: false, toolResultBytes: 8000, restarts: 0, seed: 3 });
      const home = discoverHome({ home: dir, env: {} });
      const now = measureVolume(home);
      const vols: Volume[] = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1].map((f, i) => ({
        sessions: Math.round(now.sessions * f),
        jsonl_bytes: Math.round(now.jsonl_bytes * f * (i % 2 ? 1.2 : 0.85)),
      }));
      vols.push(now);
      const step = 3 * 3600_000;
      // The last restart began a minute ago; the pre-start unit did not run before it (no sample).
      const h = restartHistory({
        law: { a: 3, b: 0.2, c: 1, noise: 0.5 },
        volumes: vols,
        seed: 4,
        endMs: Date.now() - 60_000 + step,
        stepMs: step,
        home: dir,
      });
      h.restarts[h.restarts.length - 1]!.end = 'running';
      writeFileSync(join(dir, 'logs', 'gateway.log'), historyLog(h, dir, 5));
      const state = join(root, 'state');
      writeSamples(state, dir, h.samples.slice(0, -1));

      const d = await startDaemon({ home: dir, stateDir: state });
      const st = await d.json('/startup');
      expect(st.status).toBe(200);
      expect(st.body.prediction).toMatchObject({
        state: 'ok',
        measured_samples: 8,
        samples: 8,
        volume: { sessions: now.sessions, jsonl_bytes: now.jsonl_bytes },
        target_seconds: 30,
      });
      expect(st.body.prediction.predicted_seconds).toBeGreaterThan(0);
      const samples = readSamples(state, dir);
      const mine = samples.filter((s) => s.source === 'daemon');
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({
        sessions: now.sessions,
        jsonl_bytes: now.jsonl_bytes,
        restart_started_at: st.body.restarts.at(-1).started_at,
      });
      expect(mine[0]!.gap_seconds).toBe(st.body.restarts.at(-1).bootstrap_gap.seconds);
      expect(samples.filter((s) => s.gap_seconds !== null)).toHaveLength(8);

      const m = await d.get('/metrics');
      const line = m.body.split('\n').find((l) => l.startsWith('picoclaw_guard_bootstrap_predicted_seconds '));
      expect(Number(line!.split(' ')[1])).toBe(st.body.prediction.predicted_seconds);
      expect(m.body).toMatch(/^picoclaw_guard_bootstrap_prediction_error_seconds \d/m);
      await d.stop();
    },
  );
});
