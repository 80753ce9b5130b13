import { ExitCode } from '../errors.js';
import { systemClock, type Clock } from '../io/clock.js';
import { statfsFreeSpace } from '../io/freespace.js';
import { releaseGarbage } from '../io/heap.js';
import { resolveStateDir } from '../io/statedir.js';
import { NOT_CONFIRMED, runPrunePass, type PassOptions } from '../prune/pass.js';
import { passIfNothingToDo } from '../prune/pass-noop.js';
import type { PruneReport } from '../prune/report/report.js';
import type { SessionEntries, SessionList } from '../prune/report/sessions.js';
import { formatBytes, LayoutWriter, layoutToString, outputWidth } from './format.js';
import { writeJson } from './json-stream.js';
import { confirmSummary, deleteTotals, writeSummary, writeWhere } from './prune-summary.js';
import { reasonText, TERMINAL_TABLE_ROWS, writePruneText } from './prune-text.js';

/** One `prune` run: the flags, the pass, the prompt, the report (text or JSON), and the account of a stop. */
/** Progress on a terminal (one updating line on stderr), a line every 5 s otherwise. */
function progressReporter(io: PruneIo): (done: number, total: number, what: string) => void {
  const tty = io.stderrTTY;
  // When the last line was written (monotonic ms); none yet.
  let last = -Infinity;
  let shown = '';
  return (done, total) => {
    const now = performance.now();
    // Orphan conversations and the size guard report progress without changing the count: say it once.
    const line = `pruning: ${done}/${total} sessions`;
    if (line === shown) return;
    if (tty) {
      if (now - last < 100 && done < total) return;
      last = now;
      shown = line;
      io.err(`\r${line}${done >= total ? '\n' : ''}`);
    } else if (now - last >= 5000 || (done >= total && last !== -Infinity)) {
      last = now;
      shown = line;
      io.err(`${line}\n`);
    }
  };
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * Where a run of the command writes and how it is stopped. The main thread gives its own streams; an
 * apply runs in a worker (./prune-apply.ts says why) that writes to the same file descriptors.
 */
export interface PruneIo {
  out: (chunk: string) => void;
  err: (chunk: string) => void;
  width: number;
  stdoutTTY: boolean;
  stderrTTY: boolean;
  /** A signal asked the apply to stop between two sessions (its name), else null. */
  signalled?: () => string | null;
  /** The prompt before an apply (a terminal without --yes): true to go on. */
  confirm?: (text: string, question: string) => Promise<boolean>;
}

export function mainIo(opts: Record<string, unknown>): PruneIo {
  return {
    out: (c) => process.stdout.write(c),
    err: (c) => process.stderr.write(c),
    width: outputWidth(opts),
    stdoutTTY: !!process.stdout.isTTY,
    stderrTTY: !!process.stderr.isTTY,
  };
}

/** The prompt's question: how many sessions, how many bytes, and that it is about the folders just listed. */
export function confirmQuestion(sessions: number, bytes: number): string {
  return `Delete ${sessions} sessions (${formatBytes(bytes)}) from these folders? [y/N] `;
}

/** `interrupted: deleted N of M sessions, freed X; run again to finish` for a pass a signal stopped. */
export function interruptedLine(r: PruneReport<SessionList>, signal: string): string {
  const left = r.totals.by_reason.interrupted ?? 0;
  const n = r.totals.deleted_sessions;
  return (
    `interrupted: deleted ${n} of ${n + left} sessions, freed ${formatBytes(r.totals.freed_bytes)}; ` +
    `run again to finish (${signal})`
  );
}

/** `deps.clock`: the goldens (dev/goldens.ts) pass a frozen one; the command never does. */
export async function execute(
  opts: Record<string, unknown>,
  io: PruneIo,
  deps: { clock?: Clock } = {},
): Promise<number> {
  return finish(opts, io, await runPrunePass(passOptions(opts, io, deps)));
}

/**
 * `prune --apply --pre-start` on this thread, when a plan from a read that writes nothing finds
 * nothing to do (src/prune/pass-noop.ts): its exit code, after its report. null: there is work,
 * for the real pass (in the worker, ./prune-apply.ts), which plans again under the lock.
 */
export async function executeIfNothingToDo(opts: Record<string, unknown>, io: PruneIo): Promise<number | null> {
  const report = await passIfNothingToDo(passOptions(opts, io, {}), { opts, env: process.env });
  return report ? finish(opts, io, report) : null;
}

function passOptions(
  opts: Record<string, unknown>,
  io: PruneIo,
  deps: { clock?: Clock },
): PassOptions & { streamSessions: true } {
  const flags = {
    // Whole numbers: cli.ts checks them while parsing.
    max_age_days: num(opts.maxAgeDays),
    max_sessions: num(opts.maxSessions),
    max_db_size_mb: num(opts.maxDbSizeMb),
    vacuum: opts.vacuum === false ? false : undefined,
    archive_dir: typeof opts.archive === 'string' ? opts.archive : undefined,
    cron_keep_runs: num(opts.cronKeepRuns),
    cron_max_age_days: num(opts.cronMaxAgeDays),
    max_sessions_counts_cron: opts.maxSessionsCountsCron,
    max_bootstrap_seconds: num(opts.maxBootstrapSeconds),
  };
  const apply = opts.apply === true;
  // A deadline keeps a pre-start pass from holding the gateway back: it stops between sessions.
  const deadline = num(opts.deadline) ?? (opts.preStart ? 120 : undefined);
  // Elapsed time, not the wall clock: a board without an RTC has its clock set by NTP during the pre-start pass.
  const stopAt = deadline === undefined ? Infinity : performance.now() + deadline * 1000;
  const signalled = io.signalled ?? (() => null);
  const ask = io.confirm;
  return {
    shouldStop: () => performance.now() > stopAt || signalled() !== null,
    stopReason: () => {
      const sig = signalled();
      return sig ? `interrupted by ${sig}` : null;
    },
    refuseOutsideHome: opts.allowOutsideHome !== true,
    confirm: ask
      ? (c) => {
          const text = layoutToString((w) => {
            const v = confirmSummary(c);
            writeWhere(w, v.where);
            w.push('');
            writeSummary(w, v, reasonText);
          }, io.width);
          const del = deleteTotals(c.verdicts);
          return ask(text + '\n', confirmQuestion(del.sessions, del.bytes));
        }
      : undefined,
    home: typeof opts.home === 'string' ? opts.home : undefined,
    configPath: typeof opts.config === 'string' ? opts.config : undefined,
    flags,
    apply,
    forceVacuum: opts.forceVacuum === true,
    trustClock: opts.trustClock === true,
    ifEnabled: opts.ifEnabled === true,
    clock: deps.clock ?? systemClock,
    freeSpace: statfsFreeSpace,
    // Read by the dry-run too (restore holds, an owed VACUUM, the startup-time model's samples), so it
    // shows what apply would do; only --apply writes there.
    stateDir: resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined),
    onProgress: apply && !opts.json ? progressReporter(io) : undefined,
    noArchivePaths: !opts.json,
    // Printed or written as JSON entry by entry: never all held at once.
    streamSessions: true,
  };
}

/** What follows a pass: the pre-start sample, the report (text or JSON), the account of a stop. */
async function finish(
  opts: Record<string, unknown>,
  io: PruneIo,
  report: PruneReport<SessionEntries>,
): Promise<number> {
  const apply = opts.apply === true;
  const signalled = io.signalled ?? (() => null);
  if (apply && opts.preStart === true) {
    const { recordPreStartSample } = await import('./pre-start-sample.js');
    const w = recordPreStartSample(
      report.gateway?.state,
      typeof opts.home === 'string' ? opts.home : undefined,
      resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined),
    );
    if (w) report.warnings.push(w);
  }
  // The inventory and the plan are dead once the report is made: what prints it starts clean.
  releaseGarbage();
  if (report.skipped === NOT_CONFIRMED && !opts.json) {
    // The prompt said so; the summary is on the screen above it.
  } else if (opts.json) writeJson(report, io.out);
  else {
    const w = new LayoutWriter(io.width, io.out);
    writePruneText(w, report, {
      tableRows: io.stdoutTTY && opts.full !== true && opts.wide !== true ? TERMINAL_TABLE_ROWS : undefined,
      // Before every gateway start, into the journal: what went, not every session that stayed.
      deletedOnly: opts.preStart === true && opts.full !== true,
    });
    w.flush();
  }
  const sig = signalled();
  if (apply && sig) {
    if (report.skipped) io.err(`interrupted: nothing was deleted (${sig})\n`);
    else io.err(interruptedLine(report, sig) + '\n');
    return ExitCode.INTERRUPTED;
  }
  return report.exit_code;
}
