import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { errnoCode, errorMessage, ExitCode } from '../errors.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { journalPath } from '../state/deletion-journal.js';
import { appendHistory } from '../state/history.js';
import { runPrunePass, type PassOptions } from './pass.js';
import { quietBefore, recordQuietPass } from './pass-quiet.js';
import { planDeletes } from './pass-safety.js';
import type { PruneReport } from './report/report.js';
import type { SessionEntries } from './report/sessions.js';

/**
 * An apply pass with nothing to do does nothing (the pre-start unit's pass, before every gateway start).
 *
 * The pass lock and seahorse.db's write connection both write in the PicoClaw home: the lock's
 * database, its journal and its holder note in the home's root; the write connection's -wal and
 * -shm beside seahorse.db (created, then checkpointed and removed when it closes), with their
 * fsyncs, and new mtimes on both folders. On a home within policy none of it is needed. So the
 * plan is made first from a read that writes nothing (a dry-run, seahorse.db opened the way
 * seahorseReadMode allows with the gateway down), and only when that plan has work is the
 * real pass run: it takes the lock, opens for writing and plans again under the lock, as every
 * apply does. The plan made here only decides whether to start; it deletes nothing.
 *
 * A pass without the lock is harmless because it only reads: another pass deleting at the same
 * moment can make it see a half-deleted session, which is work (the real pass then finds the lock
 * held, as before) or nothing to do (that other pass is doing it).
 *
 * Work is anything an apply would do or refuse: a deletion in the plan (the age and count steps,
 * orphans, shared conversations), the size guard (seahorse.db over max_db_size_mb), an owed VACUUM,
 * a deletion journal to finish, a seahorse.db the quiet read could not open, a store an apply would
 * refuse (not writable, a holds, pins or archive problem: the dry-run's "--apply would skip"), and
 * everything outside the quiet case (the gateway not down, --force-vacuum, --trust-clock, one
 * session asked for, a prompt). A pass with nothing to do appends its history line, as any apply.
 */
type Planned = Parameters<NonNullable<PassOptions['onPlanned']>>[0];

export async function passIfNothingToDo(
  o: PassOptions & { streamSessions: true },
  /** The command's options and environment, for the record the next pass may answer from (./pass-quiet.ts). */
  quiet?: { opts: Record<string, unknown>; env: NodeJS.ProcessEnv; settleMs?: number },
): Promise<PruneReport<SessionEntries> | null> {
  if (!o.apply || o.forceVacuum || o.trustClock || o.only || o.confirm) return null;
  // Before the home is read: a change while it is read is then a difference (./pass-quiet.ts).
  const before = quiet && o.stateDir ? quietBefore(quiet, o.stateDir) : null;
  let planned: Planned | null = null;
  const report = await runPrunePass({
    ...o,
    apply: false,
    quietRead: true,
    onPlanned: (p) => (planned = p),
  });
  const p = planned as Planned | null;
  if (!p || report.skipped || report.gateway?.state !== 'down' || report.exit_code !== ExitCode.OK) return null;
  if (planDeletes(p.plan) || p.plan.size.checked) return null;
  if (p.owed && p.plan.policy.vacuum) return null;
  if (p.seahorse === 'error') return null;
  if (report.warnings.some((w) => w.includes('--apply would skip'))) return null;
  if (o.stateDir && interruptedDeletion(o.stateDir, p.home)) return null;
  if (!storesWritable(p.home)) return null;

  // The report of an apply that deleted nothing.
  report.mode = 'apply';
  report.totals.would_delete_sessions = null;
  report.database.bytes_after = report.database.bytes_before;
  report.database.wal_bytes_after = report.database.wal_bytes_before;
  report.database.size_check.estimated = false;
  if (report.database.present) {
    report.totals.deleted_seahorse_messages = 0;
    report.database.longest_write_ms = 0;
    report.database.transactions = 0;
  }
  if (o.stateDir) {
    try {
      appendHistory(o.stateDir, {
        at: o.clock().toISOString(),
        home: report.home,
        mode: 'apply',
        outcome: 'ok',
        deleted_sessions: 0,
        deleted_orphans: 0,
        freed_bytes: 0,
        sessions_before: report.totals.sessions,
        sessions_after: report.totals.sessions,
        duration_ms: report.duration_ms,
        reason: null,
        undated_sessions: p.plan.undated.groups,
        displaced_by_undated: p.plan.undated.displaced,
        size_limit_unmet: null,
        vacuum_owed_since: null,
      });
    } catch (err) {
      report.warnings.push(`could not record the pass in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`);
    }
    if (before) {
      const w = recordQuietPass(before, p.plan, o.clock(), report.totals.sessions, [...report.warnings]);
      if (w) report.warnings.push(w);
    }
  }
  return report;
}

/** A deletion journal for this home (./apply/finish-interrupted.ts finishes it under the lock). */
function interruptedDeletion(stateDir: string, home: PicoClawHome): boolean {
  try {
    return existsSync(journalPath(stateDir, realpathSync(home.home)));
  } catch {
    // The real pass says what is wrong with the home.
    return true;
  }
}

/** What an apply's preflight checks (./pass-seahorse.ts): every store can delete. access(2) writes nothing. */
function storesWritable(home: PicoClawHome): boolean {
  try {
    for (const { dir } of home.sessionsDirs) if (existsSync(dir)) accessSync(dir, constants.W_OK | constants.X_OK);
    if (existsSync(home.seahorsePath)) accessSync(home.seahorsePath, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
