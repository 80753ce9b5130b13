import { jsonLines } from './store.js';

/**
 * The guard's prune history, `prune-history.jsonl` in the state folder (never a sessions
 * folder): one JSON line per `--apply` pass that reached its deletions, whether or not it
 * deleted anything: `prune --apply`, the pre-start unit and the daemon's passes alike.
 * Readers: the startup report and the daemon's readings mark the restarts that followed a
 * prune; `health` shows the newest line as the last prune; the daemon's schedule counts the
 * newest `ok` line as a completed pass (./marker.ts); its status page lists the newest 50.
 */
export interface PruneHistoryEntry {
  /** ISO time the pass finished (the system clock when the line is written, not the pass's injected clock). */
  at: string;
  home: string;
  mode: 'apply';
  /** A pass that fails or is skipped writes no line (its exit code says why). */
  outcome: 'ok' | 'partial';
  deleted_sessions: number;
  deleted_orphans: number;
  freed_bytes: number;
  sessions_before: number;
  sessions_after: number;
  duration_ms: number;
  /** Why the pass stopped early ("interrupted by SIGINT": a signal stopped `prune --apply`), else null. */
  reason: string | null;
  /** Sessions with no usable timestamp (never deleted, yet counted toward max_sessions); absent in older lines. */
  undated_sessions?: number;
  /** Dated sessions those undated ones pushed out under max_sessions. */
  displaced_by_undated?: number;
  /** Why seahorse.db stays over max_db_size_mb when no deletion can bring it under (which sessions hold the rows). */
  size_limit_unmet?: string | null;
  /** Set while a VACUUM deferred by an online pass waits for an offline one. */
  vacuum_owed_since?: string | null;
}

export const HISTORY_FILE = 'prune-history.jsonl';

/** Past this size the history keeps only its newest half (months of hourly passes either way). */
export const HISTORY_MAX_BYTES = 1024 * 1024;

/** One JSON line per pass, bounded by its writer; a torn last line (a kill mid-append) is never an entry. */
export const historyFile = jsonLines<PruneHistoryEntry>(HISTORY_FILE, {
  validate: (raw) =>
    typeof raw === 'object' && raw !== null && typeof (raw as PruneHistoryEntry).at === 'string'
      ? (raw as PruneHistoryEntry)
      : null,
  maxBytes: HISTORY_MAX_BYTES,
  keepBytes: HISTORY_MAX_BYTES / 2,
  // Only the newest 4 MiB are parsed.
  readBytes: 4 * 1024 * 1024,
  remedy: 'move it away (the startup report and the schedule then see no earlier passes)',
});

/** Record one pass; throws StateWriteError (the caller warns and goes on: src/state/store.ts). */
export function appendHistory(stateDir: string, e: PruneHistoryEntry): void {
  historyFile.append(stateDir, e);
}

/**
 * Every readable entry of one home (all homes without `home`), oldest first; bad lines are
 * skipped, and a missing or unreadable file reads as no entries (a history that cannot be read
 * only costs a report its past passes, and the schedule a catch-up pass).
 */
export function readHistory(stateDir: string, home?: string): PruneHistoryEntry[] {
  const all = historyFile.read(stateDir).value;
  return home === undefined ? all : all.filter((e) => e.home === home);
}
