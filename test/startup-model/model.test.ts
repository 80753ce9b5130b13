import { describe, expect, it } from 'vitest';
import { analyzeStartupLog } from '../../src/startup/index.js';
import { Rng } from '../../dev/sample/random.js';
import { historyLog, restartHistory, type Volume } from '../../dev/sample/restart-history.js';
import {
  fitBootstrapModel,
  MIB,
  predictGap,
  sessionsForBudget,
  trustFor,
  type VolumePoint,
} from '../../src/startup-model/fit.js';
import { daemonSample, pairSamples, points } from '../../src/startup-model/samples.js';
import type { BootstrapSample } from '../../src/state/bootstrap-samples.js';

/** The startup-time model: least squares that recovers a known law through gateway.log. */

const END = Date.UTC(2026, 10, 30, 12);
const LAW = { a: 4, b: 0.12, c: 0.8, noise: 1.5 };

/** Volumes that vary sessions and bytes independently enough to tell them apart. */
function volumes(n: number, seed: number): Volume[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const sessions = rng.int(20, 400);
    return { sessions, jsonl_bytes: Math.round(sessions * rng.int(20, 200) * 1024) };
  });
}

async function learnFromLog(vols: Volume[], law = LAW, seed = 7) {
  const h = restartHistory({ law, volumes: vols, seed, endMs: END, home: '/h' });
  const stream = (async function* () {
    yield historyLog(h, '/h', seed + 1);
  })();
  const report = await analyzeStartupLog({ stream });
  const paired = pairSamples(h.samples, report.restarts, END);
  return { h, report, paired, fit: fitBootstrapModel(points(paired.samples)) };
}

describe('fitting gap ≈ a + b·sessions + c·MiB', () => {
  it('recovers a known a, b and c through gateway.log, each within 3 of its stated standard errors', async () => {
    const { h, paired, fit } = await learnFromLog(volumes(30, 3));
    // Every pre-start sample found its restart, and every restart logged a complete gap.
    expect(paired.samples.every((s) => s.restart_started_at !== null && s.gap_seconds !== null)).toBe(true);
    expect(paired.samples.length).toBe(h.restarts.length);
    const m = fit.model!;
    expect(m.kind).toBe('sessions+mib');
    expect(Math.abs(m.a - LAW.a)).toBeLessThanOrEqual(3 * m.se.a);
    expect(Math.abs(m.b - LAW.b)).toBeLessThanOrEqual(3 * m.se.b!);
    expect(Math.abs(m.c - LAW.c)).toBeLessThanOrEqual(3 * m.se.c!);
    // The stated error is the noise it was given, plus the log's whole-second rounding (≈ ±0.4 s rms).
    const expected = Math.sqrt(LAW.noise ** 2 + 1 / 6);
    expect(m.rmse_seconds).toBeGreaterThan(0.6 * expected);
    expect(m.rmse_seconds).toBeLessThan(1.4 * expected);
    // A new volume is predicted within 3 × the stated error of the law's own value.
    const v = { sessions: 250, jsonl_bytes: 30 * MIB };
    expect(Math.abs(predictGap(m, v.sessions, v.jsonl_bytes) - (LAW.a + LAW.b * 250 + LAW.c * 30))).toBeLessThan(
      3 * m.rmse_seconds,
    );
  });

  it('falls back to sessions alone when sessions and MiB move together, and says so', () => {
    const pts: VolumePoint[] = [50, 100, 150, 200, 250].map((s, i) => ({
      sessions: s,
      jsonlBytes: s * 100 * 1024,
      gapSeconds: 3 + 0.2 * s + (i % 2 ? 0.5 : -0.5),
    }));
    const m = fitBootstrapModel(pts).model!;
    expect(m.kind).toBe('sessions');
    expect(m.note).toMatch(/moved together/);
    expect(m.b).toBeCloseTo(0.2, 1);
    expect(m.c).toBe(0);
  });

  it('uses MiB alone when only the bytes vary', () => {
    const pts: VolumePoint[] = [10, 20, 30, 40].map((mib) => ({
      sessions: 100,
      jsonlBytes: mib * MIB,
      gapSeconds: 5 + mib,
    }));
    const m = fitBootstrapModel(pts).model!;
    expect(m.kind).toBe('mib');
    expect(m.c).toBeCloseTo(1, 6);
  });

  it('fits nothing from fewer than 3 samples or from one volume, and says what it needs', () => {
    expect(
      fitBootstrapModel([
        { sessions: 10, jsonlBytes: 1, gapSeconds: 3 },
        { sessions: 20, jsonlBytes: 2, gapSeconds: 5 },
      ]).why,
    ).toMatch(/at least 3/);
    const same = fitBootstrapModel(
      [1, 2, 3, 4].map((i) => ({ sessions: 100, jsonlBytes: 5 * MIB, gapSeconds: 20 + i })),
    );
    expect(same.model).toBeNull();
    expect(same.why).toMatch(/same volume.*two different volumes/);
  });

  it('trusts a fit only with 5 samples and an error within 20% of the budget (2 s at least)', () => {
    const pts = (n: number, jitter: number): VolumePoint[] =>
      Array.from({ length: n }, (_, i) => ({
        sessions: 50 + 30 * i,
        jsonlBytes: (50 + 30 * i) * 80 * 1024 + (i % 3) * MIB,
        gapSeconds: 2 + 0.1 * (50 + 30 * i) + (i % 2 ? jitter : -jitter),
      }));
    const few = trustFor(fitBootstrapModel(pts(3, 0.3)), 3, 30);
    expect(few).toMatchObject({ trusted: false, more_restarts: 2 });
    expect(trustFor(fitBootstrapModel(pts(8, 0.3)), 8, 30)).toMatchObject({ trusted: true, rmse_bound_seconds: 6 });
    const noisy = trustFor(fitBootstrapModel(pts(8, 9)), 8, 30);
    expect(noisy.trusted).toBe(false);
    expect(noisy.why).toMatch(/above the bound/);
    expect(trustFor(fitBootstrapModel([]), 0, 30)).toMatchObject({ trusted: false, more_restarts: 5 });
  });

  it('derives the session count a budget allows, error included', () => {
    const m = {
      kind: 'sessions' as const,
      a: 5,
      b: 0.2,
      c: 0,
      se: { a: 0, b: 0, c: null },
      rmse_seconds: 1,
      sigma_seconds: 1,
      cov: [],
      samples: 9,
      distinct_volumes: 9,
      note: null,
    };
    // 5 + 0.2·n + 2 × 1 s ≤ 30  →  n ≤ 115.
    expect(sessionsForBudget(m, 30, 0)).toBe(115);
    expect(sessionsForBudget(m, 6.5, 0)).toBeNull();
  });
});

describe('pairing samples with restarts', () => {
  it(
    'pairs a pre-start sample with the first restart after it (the latest sample ' +
      'wins), fills the gap, and drops stale unpaired ones',
    async () => {
      const { h, report } = await learnFromLog(volumes(3, 5));
      const first = h.samples[0]!;
      const twice: BootstrapSample = {
        ...first,
        recorded_at: new Date(Date.parse(first.recorded_at) - 60_000).toISOString(),
        sessions: 1,
      };
      const lost: BootstrapSample = {
        ...first,
        recorded_at: new Date(END - 3 * 86_400_000 - 10 * 3600_000).toISOString(),
      };
      const r = pairSamples([twice, ...h.samples, lost], report.restarts, END);
      expect(r.samples.find((s) => s.sessions === 1)!.restart_started_at).toBeNull();
      expect(r.samples.filter((s) => s.gap_seconds !== null)).toHaveLength(3);
      expect(r.samples.some((s) => s.recorded_at === lost.recorded_at)).toBe(false);
    },
  );

  it(
    'the daemon records a restart it sees within 10 minutes of its start, once,' +
      ' and not one a pre-start sample has',
    async () => {
      const { report, paired } = await learnFromLog(volumes(3, 9));
      const latest = report.restarts[report.restarts.length - 1]!;
      const at = Date.parse(latest.started_at!);
      const vol = { sessions: 7, jsonl_bytes: 70, db_bytes: null };
      // the pre-start sample has it
      expect(daemonSample(paired.samples, report.restarts, vol, '/h', at + 60_000)).toBeNull();
      const d = daemonSample([], report.restarts, vol, '/h', at + 60_000)!;
      expect(d).toMatchObject({ source: 'daemon', restart_started_at: latest.started_at, sessions: 7 });
      expect(daemonSample([d], report.restarts, vol, '/h', at + 120_000)).toBeNull();
      expect(daemonSample([], report.restarts, vol, '/h', at + 11 * 60_000)).toBeNull();
    },
  );
});
