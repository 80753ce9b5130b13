import { join } from 'node:path';
import { HISTORY_FILE } from '../state/history.js';
import type { PruneReport } from '../prune/report/report.js';
import { firstOf, type SessionList } from '../prune/report/sessions.js';

/**
 * What the daemon keeps of a pass's report for GET /prune. A pass over 20,000 sessions
 * reports 20,000 entries (megabytes once parsed); the daemon holds its last pass until the
 * next one, so an idle daemon would keep that much for an hour. The pass child cuts the
 * report before sending it: every total and field as the pass made them, the first
 * `limit` session entries, how many there were, and where the pass's lasting record is
 * (the prune history; the per-session list is not kept anywhere).
 */
export const SUMMARY_SESSIONS = 100;

export type PassSummary = PruneReport & {
  /** Entries in the pass's full report; `sessions` holds the first `sessions_shown` of them. */
  sessions_total: number;
  sessions_shown: number;
  /** The prune history file the pass appended its line to (passes that deleted or failed). */
  history_file: string;
  /** Undated sessions the pass kept, per agent (from the full list, for the status page). */
  undated_kept_per_agent: Record<string, number>;
};

export function summarizeReport(
  report: PruneReport<SessionList>,
  stateDir: string,
  limit = SUMMARY_SESSIONS,
): PassSummary {
  const perAgent: Record<string, number> = {};
  for (const s of report.sessions)
    if (s.last_activity === null && s.action === 'keep') perAgent[s.agent] = (perAgent[s.agent] ?? 0) + 1;
  const shown = firstOf(report.sessions, limit);
  return {
    ...report,
    sessions: shown,
    sessions_total: report.sessions.length,
    sessions_shown: shown.length,
    history_file: join(stateDir, HISTORY_FILE),
    undated_kept_per_agent: perAgent,
  };
}
