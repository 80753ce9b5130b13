import { USABLE_SINCE_MS } from '../../picoclaw/time.js';
import type { PlanGroup, PlanOrphan } from './types.js';
import type { Policy } from '../policy.js';

/**
 * Cron runs have their own budget. Every agent-turn run of a cron job is a brand-new
 * session under the key `agent:cron-<jobID>-<uuid>` (PicoClaw pkg/tools/cron.go
 * ExecuteJob: `fmt.Sprintf("agent:cron-%s-%s", job.ID, uuid.New().String())`), so on a busy
 * board they crowd out real chats under `max_sessions`. These rules follow Kubernetes'
 * CronJob `successfulJobsHistoryLimit`: keep the newest N runs of each job.
 *
 * Every earlier rule still holds: only groups the planner left deletable (not the newest,
 * not undated, not unreadable) are touched, an alias group goes whole, and the age rule
 * is skipped while the clock reads before 2024.
 */

const DAY_MS = 86_400_000;
/** The start of every cron run's key. */
export const CRON_KEY_PREFIX = 'agent:cron-';
/** uuid.New().String(): lower-case 8-4-4-4-12 hex (github.com/google/uuid). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The job ID of a cron run's key, or null when the key is not one. Job IDs are 16 hex
 * characters (pkg/cron/service.go generateID), or decimal UnixNano when crypto/rand fails,
 * or anything a hand-edited jobs.json holds (dashes included): the ID is whatever lies
 * between the prefix and the trailing UUID, which has a fixed shape.
 */
export function cronJobId(key: string | null): string | null {
  if (key === null || !key.startsWith(CRON_KEY_PREFIX)) return null;
  const rest = key.slice(CRON_KEY_PREFIX.length);
  if (rest.length < 38 || rest[rest.length - 37] !== '-') return null;
  if (!UUID.test(rest.slice(-36))) return null;
  return rest.slice(0, -37);
}

/** The job a group's sessions are runs of: every member a run of the same job, else null (treated as a chat). */
export function groupCronJob(keys: (string | null)[]): string | null {
  let job: string | null = null;
  for (const k of keys) {
    const j = cronJobId(k);
    if (j === null || (job !== null && j !== job)) return null;
    job = j;
  }
  return job;
}

/** Whether a group counts toward (and may be deleted by) `max_sessions`. */
export function countsTowardMaxSessions(policy: Policy, cronJob: string | null): boolean {
  return policy.max_sessions_counts_cron || cronJob === null;
}

export interface CronPlan {
  /** cron_max_age_days: applied, off (0), or skipped because the clock reads before 2024 or is not believed. */
  ageCheck: 'applied' | 'disabled' | 'skipped_clock';
}

/**
 * The two cron rules, on the planner's groups (oldest first). Mutates `groups` verdicts;
 * `deletable[g.id]` is the planner's "not protected" flag.
 */
export function applyCronRules(
  groups: PlanGroup[],
  deletable: Uint8Array,
  policy: Policy,
  now: number,
  /** The clock is not believed (src/prune/plan/plan.ts clockSignals) or jumped: nothing goes by age. */
  ageRefused = false,
): CronPlan {
  let ageCheck: CronPlan['ageCheck'] = 'disabled';
  if (policy.cron_max_age_days > 0) {
    if (now < USABLE_SINCE_MS || ageRefused) ageCheck = 'skipped_clock';
    else {
      ageCheck = 'applied';
      const cutoff = now - policy.cron_max_age_days * DAY_MS;
      for (const g of groups) {
        if (g.cronJob !== null && g.action === 'keep' && deletable[g.id] && g.lastActivityMs! < cutoff) {
          g.action = 'delete';
          g.reason = 'cron_max_age_days';
        }
      }
    }
  }
  if (policy.cron_keep_runs > 0) {
    const byJob = new Map<string, PlanGroup[]>();
    for (const g of groups) {
      if (g.cronJob === null) continue;
      const runs = byJob.get(g.cronJob);
      if (runs) runs.push(g);
      else byJob.set(g.cronJob, [g]);
    }
    // As max_sessions does: undated and protected runs count, the runs dropped are the oldest dated ones.
    for (const runs of byJob.values()) {
      let kept = runs.filter((g) => g.action === 'keep').length;
      for (const g of runs) {
        if (kept <= policy.cron_keep_runs) break;
        if (g.action === 'keep' && deletable[g.id]) {
          g.action = 'delete';
          g.reason = 'cron_keep_runs';
          kept--;
        }
      }
    }
  }
  return { ageCheck };
}

/** Orphan conversations of cron runs (no session file left) go by cron_max_age_days too. */
export function applyCronAgeToOrphans(orphans: PlanOrphan[], policy: Policy, now: number): void {
  if (policy.cron_max_age_days <= 0 || now < USABLE_SINCE_MS) return;
  const cutoff = now - policy.cron_max_age_days * DAY_MS;
  for (const o of orphans) {
    const t = o.conversation.lastActivityMs;
    if (
      o.action === 'keep' &&
      o.reason === 'within_policy' &&
      t !== null &&
      t < cutoff &&
      cronJobId(o.conversation.key) !== null
    ) {
      o.action = 'delete';
      o.reason = 'cron_max_age_days';
    }
  }
}

export interface CronJobRuns {
  job: string;
  runs: number;
  /** Last activity of its newest run (ISO), or null when none is dated. */
  newest: string | null;
  /** .jsonl + .meta.json bytes of all its runs. */
  bytes: number;
  agents: string[];
}

/** Cron runs grouped by job, newest job first (for `sessions`). */
export function cronJobsOf(
  sessions: Iterable<{
    key: string | null;
    agent: string;
    lastActivityMs: number | null;
    jsonlBytes: number;
    metaBytes: number;
  }>,
): CronJobRuns[] {
  const by = new Map<string, { runs: number; newest: number | null; bytes: number; agents: Set<string> }>();
  for (const s of sessions) {
    const job = cronJobId(s.key);
    if (job === null) continue;
    const j = by.get(job) ?? { runs: 0, newest: null, bytes: 0, agents: new Set<string>() };
    j.runs++;
    j.bytes += s.jsonlBytes + s.metaBytes;
    j.agents.add(s.agent);
    if (s.lastActivityMs !== null && (j.newest === null || s.lastActivityMs > j.newest)) j.newest = s.lastActivityMs;
    by.set(job, j);
  }
  return [...by.entries()]
    .sort(([ja, a], [jb, b]) => (b.newest ?? -Infinity) - (a.newest ?? -Infinity) || (ja < jb ? -1 : ja > jb ? 1 : 0))
    .map(([job, j]) => ({
      job,
      runs: j.runs,
      newest: j.newest === null ? null : new Date(j.newest).toISOString(),
      bytes: j.bytes,
      agents: [...j.agents].sort(),
    }));
}
