/**
 * The startup-time model: gap ≈ a + b·sessions + c·MiB, fitted by least squares on the
 * restarts the guard has seen. Only the default agent's sessions are bootstrapped at
 * start (PicoClaw pkg/agent/context_seahorse.go: ListSessions of the default agent), and
 * each bootstrap reads the session's whole JSONL, so both the count and the bytes of that
 * agent's sessions drive the gap. Pure: numbers in, numbers out.
 */

export interface VolumePoint {
  /** The default agent's sessions (.meta.json files) when the gateway started. */
  sessions: number;
  /** Their .jsonl bytes. */
  jsonlBytes: number;
  gapSeconds: number;
}

export interface BootstrapModel {
  /** Which variables the fit uses: both, or one when the samples cannot separate them. */
  kind: 'sessions+mib' | 'sessions' | 'mib';
  /** Seconds. */
  a: number;
  /** Seconds per session (0 when not used). */
  b: number;
  /** Seconds per MiB of JSONL (0 when not used). */
  c: number;
  /** Standard error of each coefficient (null when not used). */
  se: { a: number; b: number | null; c: number | null };
  /** Root mean square error of the fit on the samples it came from, in seconds. */
  rmse_seconds: number;
  /** Residual standard error, √(SSR / (n − parameters)): the noise a restart adds to the law. */
  sigma_seconds: number;
  /** Covariance of the coefficients (in the order of `kind`'s columns, intercept first). */
  cov: number[][];
  samples: number;
  /** Distinct (sessions, MiB) pairs among the samples. */
  distinct_volumes: number;
  /** Why a simpler model was used, if it was. */
  note: string | null;
}

export type FitResult = { model: BootstrapModel; why: null } | { model: null; why: string };

export const MIB = 1024 * 1024;
/** Below this correlation the two variables are told apart; above, one of them stands for both. */
const COLLINEAR_R = 0.98;

/** Solve the normal equations (X'X)β = X'y for a small design; returns β and (X'X)⁻¹, or null if singular. */
function ols(rows: number[][], y: number[]): { beta: number[]; inv: number[][] } | null {
  const p = rows[0]!.length;
  const xtx = Array.from({ length: p }, () => new Array<number>(p).fill(0));
  const xty = new Array<number>(p).fill(0);
  rows.forEach((r, k) => {
    for (let i = 0; i < p; i++) {
      xty[i]! += r[i]! * y[k]!;
      for (let j = 0; j < p; j++) xtx[i]![j]! += r[i]! * r[j]!;
    }
  });
  // Gauss-Jordan on [X'X | I].
  const m = xtx.map((r, i) => [...r, ...Array.from({ length: p }, (_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < p; c++) {
    let piv = c;
    for (let r = c + 1; r < p; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[piv]![c]!)) piv = r;
    const scale = Math.max(1, ...m.map((r) => Math.abs(r[c]!)));
    if (Math.abs(m[piv]![c]!) < 1e-12 * scale) return null;
    [m[c], m[piv]] = [m[piv]!, m[c]!];
    const d = m[c]![c]!;
    for (let j = 0; j < 2 * p; j++) m[c]![j]! /= d;
    for (let r = 0; r < p; r++) {
      if (r === c) continue;
      const f = m[r]![c]!;
      if (f !== 0) for (let j = 0; j < 2 * p; j++) m[r]![j]! -= f * m[c]![j]!;
    }
  }
  const inv = m.map((r) => r.slice(p));
  const beta = inv.map((r) => r.reduce((acc, v, j) => acc + v * xty[j]!, 0));
  return { beta, inv };
}

function mean(v: number[]): number {
  return v.reduce((a, x) => a + x, 0) / v.length;
}

function correlation(x: number[], y: number[]): number {
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my);
    sxx += (x[i]! - mx) ** 2;
    syy += (y[i]! - my) ** 2;
  }
  return sxx === 0 || syy === 0 ? 1 : sxy / Math.sqrt(sxx * syy);
}

function fitWith(
  points: VolumePoint[],
  kind: BootstrapModel['kind'],
  distinct: number,
  note: string | null,
): BootstrapModel | null {
  const cols = (p: VolumePoint): number[] => {
    const mib = p.jsonlBytes / MIB;
    return kind === 'sessions+mib' ? [1, p.sessions, mib] : kind === 'sessions' ? [1, p.sessions] : [1, mib];
  };
  const rows = points.map(cols);
  const y = points.map((p) => p.gapSeconds);
  const r = ols(rows, y);
  if (!r) return null;
  const ssr = rows.reduce((acc, row, k) => acc + (y[k]! - row.reduce((s, v, j) => s + v * r.beta[j]!, 0)) ** 2, 0);
  const n = points.length;
  const dof = n - r.beta.length;
  const s2 = dof > 0 ? ssr / dof : NaN;
  const se = r.inv.map((row, i) => Math.sqrt(Math.max(0, s2 * row[i]!)));
  const cov = r.inv.map((row) => row.map((v) => v * s2));
  const [a, x1, x2] = r.beta;
  return {
    kind,
    a: a!,
    b: kind === 'mib' ? 0 : x1!,
    c: kind === 'sessions+mib' ? x2! : kind === 'mib' ? x1! : 0,
    se: {
      a: se[0]!,
      b: kind === 'mib' ? null : se[1]!,
      c: kind === 'sessions+mib' ? se[2]! : kind === 'mib' ? se[1]! : null,
    },
    rmse_seconds: Math.sqrt(ssr / n),
    sigma_seconds: Math.sqrt(s2),
    cov,
    samples: n,
    distinct_volumes: distinct,
    note,
  };
}

/** At least this many samples before the model says anything. */
export const MIN_SAMPLES_TO_FIT = 3;

/**
 * Fit the model. Both variables when the samples separate them (at least 4 samples, both
 * varying, correlation below 0.98, neither slope negative); else the one that varies,
 * sessions first (it is what a cap acts on). Nothing from fewer than 3 samples or from
 * samples that all have one volume.
 */
export function fitBootstrapModel(points: VolumePoint[]): FitResult {
  const pts = points.filter(
    (p) => Number.isFinite(p.gapSeconds) && p.gapSeconds >= 0 && p.sessions >= 0 && p.jsonlBytes >= 0,
  );
  const distinct = new Set(pts.map((p) => `${p.sessions}:${p.jsonlBytes}`)).size;
  if (pts.length < MIN_SAMPLES_TO_FIT)
    return {
      model: null,
      why: `${pts.length} restart(s) with a measured gap; the model needs at least ${MIN_SAMPLES_TO_FIT}`,
    };
  const sessions = pts.map((p) => p.sessions);
  const mib = pts.map((p) => p.jsonlBytes);
  const sVaries = new Set(sessions).size > 1;
  const mVaries = new Set(mib).size > 1;
  if (!sVaries && !mVaries)
    return {
      model: null,
      why:
        `all ${pts.length} restarts saw the same volume (${sessions[0]} sessions); the model needs restarts at two different volumes (e.g. one ` +
        `after a prune)`,
    };
  let note: string | null = null;
  if (sVaries && mVaries) {
    const r = correlation(sessions, mib);
    if (pts.length < 4) note = 'too few samples for two variables';
    else if (Math.abs(r) > COLLINEAR_R)
      note = `sessions and MiB moved together (correlation ${r.toFixed(3)}): one variable stands for both`;
    else {
      const full = fitWith(pts, 'sessions+mib', distinct, null);
      if (full && full.b >= 0 && full.c >= 0) return { model: full, why: null };
      note = full ? 'a slope came out negative with both variables' : 'the samples do not separate sessions from MiB';
    }
  }
  const one = fitWith(pts, sVaries ? 'sessions' : 'mib', distinct, note);
  if (!one) return { model: null, why: 'the samples do not determine a fit' };
  return { model: one, why: null };
}

export function predictGap(m: BootstrapModel, sessions: number, jsonlBytes: number): number {
  return m.a + m.b * sessions + m.c * (jsonlBytes / MIB);
}

/**
 * The error to expect of one restart's gap at this volume: the restart's own noise and the
 * uncertainty of the coefficients there (the usual prediction interval's standard error,
 * √(σ² + x'·Cov·x)). Larger than the in-sample RMSE, most of all far from the samples.
 */
export function predictionError(m: BootstrapModel, sessions: number, jsonlBytes: number): number {
  const mib = jsonlBytes / MIB;
  const x = m.kind === 'sessions+mib' ? [1, sessions, mib] : m.kind === 'sessions' ? [1, sessions] : [1, mib];
  let v = m.sigma_seconds ** 2;
  for (let i = 0; i < x.length; i++) for (let j = 0; j < x.length; j++) v += x[i]! * (m.cov[i]?.[j] ?? 0) * x[j]!;
  return Math.sqrt(Math.max(0, v));
}

/** What makes the model trustworthy enough to delete by (stated in docs/startup.md#a-startup-time-budget). */
export const MIN_SAMPLES_TO_KEEP = 5;
/** The fit's error must be at most this share of the budget ... */
export const MAX_RMSE_SHARE = 0.2;
/** ... or this many seconds, whichever is larger (gateway.log has whole-second timestamps). */
export const MIN_RMSE_BOUND_SECONDS = 2;

export function rmseBound(budgetSeconds: number): number {
  return Math.max(MIN_RMSE_BOUND_SECONDS, MAX_RMSE_SHARE * budgetSeconds);
}

export interface Trust {
  trusted: boolean;
  /** Why not, in words, with what would change it. */
  why: string | null;
  /** How many more restarts (with a measured gap) it needs, when a count is what is missing. */
  more_restarts: number | null;
  rmse_bound_seconds: number;
}

/** Whether a fit (or its absence) is good enough to delete sessions for a budget. */
export function trustFor(fit: FitResult, samples: number, budgetSeconds: number): Trust {
  const bound = rmseBound(budgetSeconds);
  if (!fit.model) {
    const more = Math.max(MIN_SAMPLES_TO_KEEP - samples, samples >= MIN_SAMPLES_TO_FIT ? 1 : 0);
    return { trusted: false, why: fit.why, more_restarts: more, rmse_bound_seconds: bound };
  }
  const m = fit.model;
  if (m.samples < MIN_SAMPLES_TO_KEEP) {
    return {
      trusted: false,
      why: `${m.samples} restarts measured; deleting by the model needs at least ${MIN_SAMPLES_TO_KEEP}`,
      more_restarts: MIN_SAMPLES_TO_KEEP - m.samples,
      rmse_bound_seconds: bound,
    };
  }
  if (m.b <= 0 && m.c <= 0) {
    return {
      trusted: false,
      why:
        'in the samples the gap does not grow with the sessions or their bytes,' +
        ' so deleting sessions is not shown to shorten it',
      more_restarts: null,
      rmse_bound_seconds: bound,
    };
  }
  if (m.sigma_seconds > bound) {
    return {
      trusted: false,
      why:
        `the restarts' scatter around the fit (±${m.sigma_seconds.toFixed(1)} s) is above the bound for this budget (${bound.toFixed(1)}` +
        ` s: ${MAX_RMSE_SHARE * 100}% of it, at least ${MIN_RMSE_BOUND_SECONDS}` +
        ` s); the gaps vary for reasons other than volume, and more restarts alone ` +
        `may not fix that`,
      more_restarts: null,
      rmse_bound_seconds: bound,
    };
  }
  return { trusted: true, why: null, more_restarts: null, rmse_bound_seconds: bound };
}

/**
 * How many prediction errors of room a cap keeps under the budget: 2, so that about 97% of
 * restarts (one-sided, for Gaussian scatter) land under it when the model holds.
 */
export const CAP_MARGIN = 2;

/**
 * The most sessions that keep the predicted gap plus CAP_MARGIN errors (predictionError) within the
 * budget, assuming the bytes per session stay what they are now. null when even 0 sessions
 * would not; Infinity when the model's gap does not grow with sessions.
 */
export function sessionsForBudget(m: BootstrapModel, budgetSeconds: number, bytesPerSession: number): number | null {
  const fits = (n: number) =>
    predictGap(m, n, n * bytesPerSession) + CAP_MARGIN * predictionError(m, n, n * bytesPerSession) <= budgetSeconds;
  if (!fits(0)) return null;
  const perSession = m.b + m.c * (bytesPerSession / MIB);
  if (perSession <= 0) return Infinity;
  // The error is at least sigma, so the closed form with sigma alone bounds the answer from above.
  // Gap plus error is convex in n (a line plus the norm of an affine map), so the counts that
  // fit are 0..answer: bisect.
  let hi = Math.min(1e12, Math.max(0, Math.floor((budgetSeconds - CAP_MARGIN * m.sigma_seconds - m.a) / perSession)));
  if (fits(hi)) return hi;
  let lo = 0;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}
