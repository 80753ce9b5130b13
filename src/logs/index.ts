import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errnoCode } from '../errors.js';
import { tryLock } from '../io/lock.js';
import { probedBefore } from './collapse.js';
import { cutLog, resumeCut, type CutContext, type CutOutcome, type Resumed } from './cut.js';
import { journalPath, readJournal } from './journal.js';
import { keptParts } from '../picoclaw/gatewaylog/parts.js';

export {
  cutLog,
  resumeCut,
  type CutAction,
  type CutContext,
  type CutOutcome,
  type CutStep,
  type Resumed,
} from './cut.js';
export { CollapseError, fallocateCollapse, probeCollapse, type Collapser } from './collapse.js';
export { DEFAULT_LOGS, MIB, parseLogsConfig, type LogsConfig } from './config.js';
export { JOURNAL_NAME, readJournal } from './journal.js';

/** The two logs PicoClaw's gateway writes (pkg/gateway/gateway.go: logPath, logFile, panicFile). */
export function gatewayLogs(logPath: string): string[] {
  return [logPath, join(dirname(logPath), 'gateway_panic.log')];
}

export interface LogsReport {
  version: 1;
  dry_run: boolean;
  limit_bytes: number;
  keep_parts: number;
  /** Another run holds the logs lock: nothing was looked at. */
  locked: boolean;
  /** The cut a killed run left, finished or undone first (in a dry-run: only named, as `pending`). */
  resumed: Resumed | null;
  pending: { file: string; step: string } | null;
  files: CutOutcome[];
}

/**
 * What a run would find without doing anything: the outcomes, or null when there is work (a
 * journal to finish, a file over the limit, more parts than kept). Looked at without the lock,
 * which is not taken otherwise: the daemon asks every few minutes, and an idle board must not
 * write (taking the lock writes its holder note). One stat and one folder listing per file.
 */
function idleOutcomes(files: string[], ctx: CutContext): CutOutcome[] | null {
  if (existsSync(journalPath(ctx.stateDir))) return null;
  const out: CutOutcome[] = [];
  for (const file of files) {
    const kept = keptParts(file).length;
    if (kept > ctx.keepParts) return null;
    let size: number | null = null;
    try {
      const st = statSync(file);
      if (!st.isFile()) return null;
      size = st.size;
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') return null;
    }
    const o: CutOutcome = {
      file,
      action: size === null ? 'absent' : ctx.limitBytes <= 0 ? 'off' : 'under_limit',
      size_bytes: size,
      limit_bytes: ctx.limitBytes,
      removed_bytes: 0,
      part_bytes: 0,
      part: null,
      parts_removed: [],
      parts_kept: kept,
      reason: null,
    };
    if (o.action === 'under_limit' && size! > ctx.limitBytes) {
      // Over the limit where the probe already said no (this process): nothing a run could do.
      const probe = ctx.collapse === undefined ? probedBefore(dirname(file)) : undefined;
      if (probe?.ok !== false) return null;
      o.action = 'unsupported';
      o.reason = probe.reason;
    }
    out.push(o);
  }
  return out;
}

/**
 * One run over `files`: take the logs lock (<state>/logs.lock, released by the kernel if
 * killed), finish or undo the journal of a killed run, then cut each file that is over the
 * limit and prune its parts. A dry-run takes no lock and writes nothing.
 */
export async function boundLogs(files: string[], ctx: CutContext): Promise<LogsReport> {
  const report: LogsReport = {
    version: 1,
    dry_run: ctx.dryRun === true,
    limit_bytes: ctx.limitBytes,
    keep_parts: ctx.keepParts,
    locked: false,
    resumed: null,
    pending: null,
    files: [],
  };
  if (ctx.dryRun) {
    const j = readJournal(ctx.stateDir);
    if (j) report.pending = { file: j.file, step: j.step };
    for (const f of files) report.files.push(await cutLog(f, ctx));
    return report;
  }
  const idle = idleOutcomes(files, ctx);
  if (idle) return { ...report, files: idle };
  mkdirSync(ctx.stateDir, { recursive: true });
  const lock = tryLock(join(ctx.stateDir, 'logs.lock'), `logs pid ${process.pid}`);
  if (!lock.ok) return { ...report, locked: true };
  try {
    report.resumed = await resumeCut(ctx);
    for (const f of files) report.files.push(await cutLog(f, ctx));
  } finally {
    lock.lock.release();
  }
  return report;
}
