import { closeSync, constants, fstatSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { writeFileAtomic } from '../io/atomic.js';
import { join } from 'node:path';
import { readSmallText } from '../io/smallfile.js';

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
const MAX_READ = 4 * 1024 * 1024;

/** Past this size the history keeps only its newest half (months of hourly passes either way). */
export const HISTORY_MAX_BYTES = 1024 * 1024;

export function appendHistory(stateDir: string, e: PruneHistoryEntry): void {
  mkdirSync(stateDir, { recursive: true });
  const path = join(stateDir, HISTORY_FILE);
  let size = 0;
  try {
    size = statSync(path).size;
  } catch {
    size = 0;
  }
  if (size > HISTORY_MAX_BYTES) {
    const text = readSmallText(path, 'history');
    const tail = text.slice(text.length - HISTORY_MAX_BYTES / 2);
    writeFileAtomic(path, tail.slice(tail.indexOf('\n') + 1));
  }
  // Non-blocking and regular files only: a FIFO put here must not hang the pass (ENXIO instead).
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${path} is not a regular file`);
    writeSync(fd, JSON.stringify(e) + '\n');
  } finally {
    closeSync(fd);
  }
}

/**
 * Every readable entry of one home (all homes without `home`), oldest first; bad lines are
 * skipped, and a missing or unreadable file reads as no entries. Only the newest 4 MiB are parsed.
 */
export function readHistory(stateDir: string, home?: string): PruneHistoryEntry[] {
  let text: string;
  try {
    text = readSmallText(join(stateDir, HISTORY_FILE), 'history');
  } catch {
    return [];
  }
  if (text.length > MAX_READ) text = text.slice(text.length - MAX_READ);
  const out: PruneHistoryEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const e = JSON.parse(line) as PruneHistoryEntry;
      if (typeof e.at === 'string' && (home === undefined || e.home === home)) out.push(e);
    } catch {
      // a torn last line after a crash: skip it
    }
  }
  return out;
}
