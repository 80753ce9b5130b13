import { realpathSync } from 'node:fs';
import { ExitCode, GuardError, diskFault, errnoCode, errorMessage } from '../errors.js';
import { fileId } from '../io/file-id.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { journalPath, readJournal } from '../state/deletion-journal.js';
import type { Interrupted } from './apply/finish-interrupted.js';
import { busyTimeoutMs } from './pass-seahorse.js';
import type { Plan } from './plan/plan.js';
import type { PruneReport } from './report/report.js';
import type { SessionList } from './report/sessions.js';

/**
 * What a pass does about the disk and about an earlier pass that did not finish: the key its state
 * gives seahorse.db, the deletion a killed pass left half-way, a damaged database, a full disk.
 */

/**
 * The key of seahorse.db in the guard's state: its device and inode, so that one database is one
 * record however it is reached (a symlink, a bind mount, a hard link). A record an older guard
 * keyed by the real path is still found (`legacy`).
 */
export function dbKeyOf(p: string): { key: string; legacy: string } {
  let legacy = p;
  try {
    legacy = realpathSync(p);
  } catch {
    // absent: the path is all there is
  }
  const id = fileId(p);
  return { key: id ? `dev:ino ${id}` : legacy, legacy };
}

/** Whether the plan deletes anything: a session group, an orphan, a shared conversation, or the size guard's. */
export function planDeletes(plan: Plan): boolean {
  return (
    plan.groups.some((g) => g.action === 'delete' || g.sizeEligible) ||
    plan.orphans.some((x) => x.action === 'delete') ||
    plan.shared.length > 0
  );
}

/** A full disk when the pass records itself: the report stands, and the pass ends with NO_SPACE. */
export function noteStateFault(report: PruneReport<SessionList>, err: unknown): void {
  if (diskFault(err) !== 'no_space') return;
  if (report.exit_code === ExitCode.OK || report.exit_code === ExitCode.PARTIAL) report.exit_code = ExitCode.NO_SPACE;
}

/** The report's refusal when quick_check finds seahorse.db damaged. */
export function damagedRefusal(path: string, finding: string): string {
  return (
    `${path} is damaged (PRAGMA quick_check: ${finding}); nothing was deleted anywhere: ` +
    `deleting from a damaged database can lose rows it still holds. Restore it from a backup, or move it ` +
    `aside (PicoClaw starts a new seahorse.db from the JSONL history)`
  );
}

/**
 * A full or damaged disk met outside the deletions (reading the inventory, measuring the database):
 * one line naming it, with its exit code. Nothing was deleted before that point. Anything else as it is.
 */
export function diskFaultError(err: unknown, home: PicoClawHome): unknown {
  const fault = diskFault(err);
  if (!fault || err instanceof GuardError) return err;
  return new GuardError(
    `${fault === 'no_space' ? 'the disk is full' : 'the disk or seahorse.db is damaged'} (${errnoCode(err) ?? 'error'}: ` +
      `${errorMessage(err)}) while reading ${home.home}; nothing was deleted`,
    {
      exitCode: fault === 'no_space' ? ExitCode.NO_SPACE : ExitCode.DATA,
      path: home.seahorsePath,
      hint:
        fault === 'no_space'
          ? 'free some space on that file system and run again'
          : `check the disk; PRAGMA integrity_check on ${home.seahorsePath} tells whether the database is damaged`,
      cause: err,
    },
  );
}

/**
 * A deletion a killed pass left half-way is finished first (apply), so that its remains are never
 * planned, and archived again, as a session of their own (./finish-interrupted.ts); a dry-run says so.
 */
export async function recoverInterrupted(
  o: { apply: boolean; stateDir: string | null },
  home: PicoClawHome,
  online: boolean,
  env: NodeJS.ProcessEnv,
): Promise<{ notes: string[]; refusal: Interrupted['refusal'] }> {
  if (!o.stateDir) return { notes: [], refusal: null };
  const homeReal = realpathSync(home.home);
  if (!o.apply) {
    const note = interruptedNote(o.stateDir, homeReal);
    return { notes: note ? [note] : [], refusal: null };
  }
  // The deleter's modules, loaded by an apply only (a dry-run and the pre-start pass with nothing to do load none).
  const { finishInterrupted } = await import('./apply/finish-interrupted.js');
  const done = finishInterrupted({
    stateDir: o.stateDir,
    homeReal,
    seahorsePath: home.seahorsePath,
    online,
    busyTimeoutMs: busyTimeoutMs(env),
  });
  return { notes: done.note ? [done.note] : [], refusal: done.refusal };
}

/** For a dry-run: the deletion --apply would finish first, or null. */
function interruptedNote(stateDir: string, homeReal: string): string | null {
  try {
    const j = readJournal(journalPath(stateDir, homeReal));
    return j ? `an earlier pass was interrupted while deleting ${j.what}: --apply finishes that first` : null;
  } catch (err) {
    return `the deletion journal in ${stateDir} cannot be read (${errorMessage(err)}): --apply would skip the pass`;
  }
}
