import { WHOLE_MIB } from '../io/bytes.js';
import type { Reason } from '../prune/plan/plan.js';
import type { PruneReport } from '../prune/report/report.js';
import type { SessionList } from '../prune/report/sessions.js';
import type { StartupPrediction } from '../startup-model/learn.js';
import { fitTable, formatAge, formatBytes } from './format.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * Text for the guard's own keys (cron runs, the startup-time budget), shared by `prune`,
 * `sessions` and `startup`. Each part appears only when its key is set or its data exists,
 * so the output under PicoClaw's defaults is what it always was.
 */

/** The reasons the guard's own keys give for a deletion, in the words of the prune report. */
export const GUARD_KEY_REASON_TEXT = {
  cron_keep_runs: 'older run of its cron job (cron_keep_runs)',
  cron_max_age_days: 'cron run older than cron_max_age_days',
  max_bootstrap_seconds: 'over the startup budget (max_bootstrap_seconds)',
} satisfies Partial<Record<Reason, string>>;

/** The same in at most 20 columns (a table fitted to the terminal). */
export const GUARD_KEY_REASON_SHORT = {
  cron_keep_runs: 'older cron run',
  cron_max_age_days: 'cron run too old',
  max_bootstrap_seconds: 'over startup budget',
} satisfies Partial<Record<Reason, string>>;

/** Whether any cron rule is on: then the prune table shows each cron run's job. */
export function cronRulesOn(r: PruneReport<SessionList>): boolean {
  const c = r.cron;
  return !!c && (c.keep_runs > 0 || c.max_age_days > 0 || !c.counts_toward_max_sessions);
}

/** The prune report's lines for the cron rules and the startup budget (after the totals). */
export function pruneGuardKeyLines(r: PruneReport<SessionList>): string[] {
  const out: string[] = [];
  const c = r.cron;
  if (c && cronRulesOn(r)) {
    const rules = [
      c.keep_runs > 0 ? `keep the newest ${c.keep_runs} run(s) per job` : '',
      c.max_age_days > 0
        ? c.age_check === 'skipped_clock'
          ? 'cron_max_age_days SKIPPED (the clock reads before 2024)'
          : `runs idle over ${c.max_age_days} d go`
        : '',
      c.counts_toward_max_sessions ? '' : 'runs do not count toward max_sessions',
    ].filter(Boolean);
    const runs = c.jobs.reduce((n, j) => n + j.runs, 0);
    const del = c.jobs.reduce((n, j) => n + j.delete, 0);
    out.push(
      `cron runs: ${runs} of ${c.jobs.length} job(s); ${rules.join('; ')}; ${r.mode === 'dry-run' ? 'would delete' : 'deleted'}` +
        ` ${del}`,
    );
  }
  if (r.bootstrap) out.push(`startup budget: ${r.bootstrap.message}`);
  return out;
}

/** `sessions`: cron runs grouped by job (runs, newest, bytes), newest job first. */
export function cronJobsTable(
  jobs: { job: string; runs: number; newest: string | null; bytes: number }[],
  nowMs: number,
  width: number = Infinity,
): string[] {
  if (jobs.length === 0) return [];
  return [
    '',
    'Cron jobs (each agent-turn run is its own session):',
    ...fitTable(
      [
        { header: 'JOB', fit: 'middle', min: 16 },
        { header: 'RUNS', align: 'right' },
        { header: 'NEWEST RUN', drop: 1 },
        { header: 'AGE', align: 'right' },
        { header: 'BYTES', align: 'right' },
      ],
      jobs.map((j) => [
        j.job,
        String(j.runs),
        j.newest ? j.newest.replace(/\.\d{3}Z$/, 'Z') : '-',
        j.newest ? formatAge(nowMs - instantMs(j.newest)) : '-',
        formatBytes(j.bytes),
      ]),
      width,
    ),
  ];
}

/** "next restart: about 48 s (±9 s) for 212 sessions / 31 MiB; under 30 s needs ≤ 120 sessions". */
export function predictionLine(p: {
  predicted_seconds: number;
  error_seconds: number;
  sessions: number;
  jsonl_bytes: number;
  target_seconds: number;
  sessions_for_target: number | null;
}): string {
  const target =
    p.sessions_for_target === null
      ? `under ${p.target_seconds} s cannot be reached by deleting sessions`
      : Number.isFinite(p.sessions_for_target)
        ? `under ${p.target_seconds} s needs ≤ ${p.sessions_for_target} sessions`
        : `the gap does not grow with sessions`;
  return (
    `next restart: about ${Math.round(p.predicted_seconds)} s (±${Math.max(1, Math.round(p.error_seconds))}` +
    ` s) for ${p.sessions} sessions / ${formatBytes(p.jsonl_bytes, WHOLE_MIB)}` +
    `; ${target}`
  );
}

/** `startup`: the next restart's prediction and the model behind it. */
export function predictionLines(p: StartupPrediction | { error: string }): string[] {
  if ('error' in p) return [`  next restart: no prediction (${p.error})`];
  if (p.state !== 'ok' || !p.model || p.predicted_seconds === null) {
    return [
      `  next restart: no prediction yet: ${p.why}` +
        (p.trust.more_restarts ? ` (${p.trust.more_restarts} more restart(s) with a measured gap)` : ''),
    ];
  }
  const m = p.model;
  const terms = [
    `${m.a.toFixed(1)} s`,
    m.kind !== 'mib' ? `${m.b.toFixed(3)} s/session` : '',
    m.kind !== 'sessions' ? `${m.c.toFixed(2)} s/MiB` : '',
  ]
    .filter(Boolean)
    .join(' + ');
  const out = [
    `  ${predictionLine({ predicted_seconds: p.predicted_seconds, error_seconds: p.error_seconds ?? 0, sessions: p.volume.sessions, jsonl_bytes: p.volume.jsonl_bytes, target_seconds: p.target_seconds, sessions_for_target: p.sessions_for_target })}`,
    `  model: gap ≈ ${terms} (least squares on ${m.samples} restarts, ${m.distinct_volumes}` +
      ` volumes; RMSE ${m.rmse_seconds.toFixed(1)} s${m.note ? `; ${m.note}` : ''}` +
      `)`,
  ];
  if (!p.trust.trusted)
    out.push(
      `  max_bootstrap_seconds would delete nothing yet: ${p.trust.why}${p.trust.more_restarts ? ` (${p.trust.more_restarts} more restart(s))` : ''}`,
    );
  return out;
}
