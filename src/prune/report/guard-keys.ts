import type { BootstrapModel } from '../../startup-model/fit.js';
import type { BootstrapPlan } from '../plan/bootstrap-cap.js';
import type { Plan } from '../plan/plan.js';
import { collate } from '../../io/collate.js';

/** The prune report's sections for the guard's own keys (cron runs, the startup-time budget). */
export interface CronReport {
  age_check: 'applied' | 'disabled' | 'skipped_clock';
  keep_runs: number;
  max_age_days: number;
  counts_toward_max_sessions: boolean;
  /** Newest job first. */
  jobs: { job: string; runs: number; kept: number; delete: number; newest: string | null; bytes: number }[];
}

export interface ModelReport {
  kind: BootstrapModel['kind'];
  intercept_seconds: number;
  seconds_per_session: number;
  seconds_per_mib: number;
  standard_errors: { intercept: number; per_session: number | null; per_mib: number | null };
  rmse_seconds: number;
  sigma_seconds: number;
  samples: number;
  distinct_volumes: number;
  note: string | null;
}

export interface BootstrapReport {
  budget_seconds: number;
  state: BootstrapPlan['state'];
  message: string;
  trusted: boolean;
  untrusted_because: string | null;
  more_restarts_needed: number | null;
  rmse_bound_seconds: number;
  model: ModelReport | null;
  before: BootstrapPlan['before'];
  after: BootstrapPlan['after'];
  cap_sessions: number | null;
  deleted_groups: number;
}

const round = (x: number, d = 4) => Math.round(x * 10 ** d) / 10 ** d;

export function modelReport(m: BootstrapModel | null): ModelReport | null {
  if (!m) return null;
  return {
    kind: m.kind,
    intercept_seconds: round(m.a),
    seconds_per_session: round(m.b),
    seconds_per_mib: round(m.c),
    standard_errors: {
      intercept: round(m.se.a),
      per_session: m.se.b === null ? null : round(m.se.b),
      per_mib: m.se.c === null ? null : round(m.se.c),
    },
    rmse_seconds: round(m.rmse_seconds, 3),
    sigma_seconds: round(m.sigma_seconds, 3),
    samples: m.samples,
    distinct_volumes: m.distinct_volumes,
    note: m.note,
  };
}

export function cronReport(
  plan: Plan,
  sessions: Iterable<{ cron_job: string | null; action: string; last_activity: string | null; bytes: number }>,
): CronReport | null {
  const p = plan.policy;
  const by = new Map<string, CronReport['jobs'][number]>();
  for (const s of sessions) {
    if (s.cron_job === null) continue;
    const j = by.get(s.cron_job) ?? { job: s.cron_job, runs: 0, kept: 0, delete: 0, newest: null, bytes: 0 };
    j.runs++;
    j.bytes += s.bytes;
    if (s.action === 'delete') j.delete++;
    else j.kept++;
    if (s.last_activity !== null && (j.newest === null || s.last_activity > j.newest)) j.newest = s.last_activity;
    by.set(s.cron_job, j);
  }
  if (by.size === 0 && p.cron_keep_runs === 0 && p.cron_max_age_days === 0 && p.max_sessions_counts_cron) return null;
  const jobs = [...by.values()].sort((a, b) => collate(b.newest ?? '', a.newest ?? '') || collate(a.job, b.job));
  return {
    age_check: plan.cron.ageCheck,
    keep_runs: p.cron_keep_runs,
    max_age_days: p.cron_max_age_days,
    counts_toward_max_sessions: p.max_sessions_counts_cron,
    jobs,
  };
}

export function bootstrapReport(b: BootstrapPlan): BootstrapReport {
  return {
    budget_seconds: b.budget_seconds,
    state: b.state,
    message: b.message,
    trusted: b.trust.trusted,
    untrusted_because: b.trust.why,
    more_restarts_needed: b.trust.more_restarts,
    rmse_bound_seconds: b.trust.rmse_bound_seconds,
    model: modelReport(b.model),
    before: b.before,
    after: b.after,
    cap_sessions: b.cap_sessions,
    deleted_groups: b.deleted_groups,
  };
}
