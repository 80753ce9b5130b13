import { systemClock } from '../io/clock.js';
import { freeSpaceFromEnv } from '../io/freespace.js';
import { releaseGarbage } from '../io/heap.js';
import { resolveStateDir } from '../io/statedir.js';
import { NOT_CONFIRMED, runPrunePass } from '../prune/pass.js';
import type { Reason } from '../prune/plan.js';
import type { PruneReport } from '../prune/report.js';
import type { SessionList } from '../prune/report-sessions.js';
import { GUARD_ONLY_KEYS, type PolicyKey } from '../prune/policy.js';
import {
  confirmSummary,
  deleteTotals,
  reportSummary,
  writeSummary,
  writeWarnings,
  writeWhere,
} from './prune-summary.js';
import { writeJson } from './json-stream.js';
import { ExitCode } from '../errors.js';
import { cronRulesOn, EXTRA_REASON_SHORT, EXTRA_REASON_TEXT, pruneExtraLines } from './render-extras.js';
import {
  DEFAULT_WIDTH,
  displayWidth,
  formatAge,
  formatBytes,
  LayoutWriter,
  layoutToString,
  outputWidth,
  shortKey,
  tableRule,
  tableShape,
  type Column,
} from './format.js';

const REASON_TEXT: Record<string, string> = {
  max_age_days: 'older than max_age_days',
  max_sessions: 'over max_sessions',
  max_db_size_mb: 'seahorse.db over max_db_size_mb',
  newest: 'newest session (never deleted)',
  undated: 'no usable timestamp (never deleted)',
  within_policy: 'within policy',
  unreadable_meta: 'meta unreadable: kept',
  not_regular_file: '.jsonl is a symlink or folder: kept',
  restored_hold: 'restored: held (see below)',
  changed_since_plan: 'changed since planning: kept',
  archive_failed: 'archive failed: kept',
  not_writable: 'not writable: kept',
  delete_failed: 'delete failed: kept',
  size_limit_reached: 'not needed: db fits',
  interrupted: 'pass stopped: kept',
  ...EXTRA_REASON_TEXT,
} satisfies Record<Reason, string>;

/** The same reasons in at most 20 columns, for a table that has to fit a terminal. */
const REASON_SHORT: Record<string, string> = {
  max_age_days: 'over max_age_days',
  max_sessions: 'over max_sessions',
  max_db_size_mb: 'over max_db_size_mb',
  newest: 'newest session',
  undated: 'no usable date',
  within_policy: 'within policy',
  unreadable_meta: 'meta unreadable',
  not_regular_file: '.jsonl not a file',
  changed_since_plan: 'changed since plan',
  archive_failed: 'archive failed',
  not_writable: 'not writable',
  delete_failed: 'delete failed',
  size_limit_reached: 'db fits',
  interrupted: 'pass stopped',
  // Longer than 20 columns, as the table has always shown it (it used to fall back to the full text).
  restored_hold: 'restored: held (see below)',
  ...EXTRA_REASON_SHORT,
} satisfies Record<Reason, string>;

/** Progress on a terminal (one updating line on stderr), a line every 5 s otherwise. */
function progressReporter(io: PruneIo): (done: number, total: number, what: string) => void {
  const tty = io.stderrTTY;
  let last = 0;
  let shown = '';
  return (done, total) => {
    const now = Date.now();
    // Orphan conversations and the size guard report progress without changing the count: say it once.
    const line = `pruning: ${done}/${total} sessions`;
    if (line === shown) return;
    if (tty) {
      if (now - last < 100 && done < total) return;
      last = now;
      shown = line;
      io.err(`\r${line}${done >= total ? '\n' : ''}`);
    } else if (now - last >= 5000 || (done >= total && last !== 0)) {
      last = now;
      shown = line;
      io.err(`${line}\n`);
    }
  };
}

/** The text report, fitted to `width` columns (Infinity: --wide). */
export function renderPruneText(
  r: PruneReport<SessionList>,
  width: number = DEFAULT_WIDTH,
  o: TextOptions = {},
): string {
  return layoutToString((w) => writePruneText(w, r, o), width);
}

export interface TextOptions {
  /** Rows of the session table to print (a terminal: the first screens); the rest are counted. Default: all. */
  tableRows?: number;
}

/** A reason as a person reads it; a reason this file does not know (a new verdict) as its name. */
export const reasonText = (reason: string): string =>
  Object.hasOwn(REASON_TEXT, reason) ? REASON_TEXT[reason]! : reason;

/**
 * The text report, written as it is made: the table's rows are made for each pass over them, never held.
 * First where and what (the summary, src/commands/prune-summary.ts), then the table, then the totals;
 * the warnings once more at the end.
 */
export function writePruneText(out: LayoutWriter, r: PruneReport<SessionList>, o: TextOptions = {}): void {
  const width = out.width;
  const dry = r.mode === 'dry-run';
  const pol = Object.entries(r.policy)
    .filter(
      ([k, v]) =>
        k !== 'enabled' &&
        k !== 'check_interval_minutes' &&
        !(GUARD_ONLY_KEYS.has(k as PolicyKey) && v.source === 'default'),
    )
    .map(
      ([k, v]) =>
        `${k}=${v.value === null ? '-' : typeof v.value === 'object' ? JSON.stringify(v.value) : String(v.value as string | number | boolean)}` +
        `${v.source === 'default' ? '' : ` (${v.source})`}`,
    )
    .join('  ');
  out.push(dry ? 'DRY-RUN: nothing is changed. Add --apply to delete.' : 'APPLY');
  out.push(`home: ${r.home}   now: ${r.now}`);
  writeWhere(out, r.where);
  out.push({ text: `policy: ${pol}`, indent: 8 });
  if (r.gateway) out.push({ text: `gateway: ${r.gateway.state} (${r.gateway.reason})`, indent: 9 });
  if (r.skipped) {
    out.push('');
    out.push({ text: `SKIPPED: ${r.skipped}`, indent: 9 });
    return;
  }
  if (r.age_check === 'skipped_clock')
    out.push('age check: SKIPPED (the clock reads before 2024; set the time, e.g. NTP, and run again)');
  else if (r.age_check === 'disabled') out.push('age check: disabled (max_age_days=0)');
  else if (r.age_check === 'skipped_clock_jump')
    out.push('age check: SKIPPED this pass (the wall clock jumped since the last pass; see the warning below)');
  out.push('');
  const summary = reportSummary(r);
  writeSummary(out, summary, reasonText);
  out.push('');
  const nowMs = Date.parse(r.now);
  const cron = cronRulesOn(r);
  const rows = (reasons: Record<string, string>) => () =>
    lazyMap(r.sessions, (s) => [
      s.action === 'delete' ? (dry ? 'DELETE' : 'DELETED') : dry ? 'keep' : 'kept',
      reasons[s.reason] ?? REASON_TEXT[s.reason] ?? s.reason,
      s.agent,
      (s.key ?? '(unreadable meta)') + (s.group ? ' *' : ''),
      s.last_activity ? s.last_activity.replace(/\.\d{3}Z$/, 'Z') : '-',
      s.last_activity ? formatAge(nowMs - Date.parse(s.last_activity)) : '-',
      formatBytes(s.bytes),
      ...(cron ? [s.cron_job ?? ''] : []),
    ]);
  const columns: Column[] = [
    { header: 'ACTION' },
    { header: 'REASON', fit: 'end', min: 14 },
    { header: 'AGENT', fit: 'end', min: 8 },
    { header: 'KEY', fit: 'middle', min: 20 },
    // AGE says the same in fewer columns.
    { header: 'LAST ACTIVITY', drop: 1 },
    { header: 'AGE', align: 'right' },
    { header: 'BYTES', align: 'right' },
    ...(cron ? [{ header: 'CRON JOB', fit: 'middle', min: 10, drop: 2 } as Column] : []),
  ];
  if (r.sessions.length === 0) out.push('No sessions.');
  else {
    // The full reasons when the whole table fits, else the short ones.
    // The rule under the header is the widest line of a table at its natural width.
    const full = tableShape(columns, rows(REASON_TEXT)(), Infinity);
    const limit = o.tableRows ?? Infinity;
    const first = (make: () => Iterable<string[]>) => () => take(make(), limit);
    if (displayWidth(tableRule(full)) <= width) out.tableOfShape(full, first(rows(REASON_TEXT)));
    else out.tableOfShape(tableShape(columns, rows(REASON_SHORT)(), width), first(rows(REASON_SHORT)));
    if (r.sessions.length > limit)
      out.push(
        `  ... ${r.sessions.length - limit} more row(s) not shown on a terminal: --full prints them all, ` +
          `--json the whole report`,
      );
  }
  // Fewer groups than sessions: some session is one of an alias group (read without making every entry).
  if (r.totals.groups < r.totals.sessions) out.push('  * part of an alias group: kept or deleted together');
  const del = r.orphans.filter((o) => o.action === 'delete');
  if (r.orphans.length > 0) {
    out.push('');
    out.push(
      `Orphan seahorse conversations (no session file in any agent's folder): ` +
        `${r.orphans.length}, ${dry ? 'would delete' : 'deleted'} ${del.length}` +
        ` by age`,
    );
    const keyCols = Number.isFinite(width) ? Math.max(20, width - 48) : Infinity;
    for (const o of r.orphans.slice(0, 20))
      out.push(
        `  ${o.action === 'delete' ? (dry ? 'DELETE' : 'DELETED') : dry ? 'keep  ' : 'kept  '}` +
          `  ${shortKey(o.key, keyCols)}  ${o.last_activity?.replace(/\.\d{3}Z$/, 'Z') ?? 'undated'}` +
          `  ${o.messages} messages`,
      );
    if (r.orphans.length > 20) out.push(`  ... and ${r.orphans.length - 20} more (see --json)`);
  }
  for (const o of r.orphan_jsonl) out.push(`  kept: ${o.path}: ${o.reason}`);
  for (const o of r.orphans)
    if (o.action === 'keep' && o.detail)
      out.push(`  kept orphan ${shortKey(o.key, 60)}: ${REASON_TEXT[o.reason] ?? o.reason}: ${o.detail}`);
  for (const c of r.shared_conversations ?? []) {
    if (c.action === 'delete') out.push(`  deleted shared conversation ${shortKey(c.key, 60)}: ${c.detail ?? ''}`);
    else
      out.push(
        `  kept shared conversation ${shortKey(c.key, 60)}: ${REASON_TEXT[c.reason] ?? c.reason}` +
          `${c.detail ? `: ${c.detail}` : ''}`,
      );
  }
  out.push('');
  const t = r.totals;
  out.push(
    `Sessions: ${t.sessions} (${t.groups} after alias grouping); ${dry ? 'would delete' : 'deleted'}` +
      ` ${t.deleted_sessions}, ${dry ? 'keep' : 'kept'} ${t.keep}; ${dry ? 'would free' : 'freed'}` +
      ` ${formatBytes(t.freed_bytes)} of JSONL`,
  );
  const d = r.database;
  if (d.present) {
    let line = `seahorse.db: ${formatBytes(d.bytes_before)}`;
    if (d.bytes_after !== null) line += ` -> ${formatBytes(d.bytes_after)}`;
    // The file and its WAL together: after an apply without VACUUM the deletions sit in the WAL, which grows.
    if (d.bytes_after !== null && d.wal_bytes_after)
      line +=
        ` (file ${formatBytes(d.bytes_after - d.wal_bytes_after)} + WAL ${formatBytes(d.wal_bytes_after)}: the` +
        ` deletions sit in the WAL until SQLite's next checkpoint folds it in; the file shrinks only by VACUUM)`;
    if (t.deleted_seahorse_messages !== null)
      line +=
        `; ${t.deleted_seahorse_messages} messages deleted in ${d.transactions}` +
        ` transactions (longest ${d.longest_write_ms} ms)`;
    out.push(line);
    if (d.size_check.checked) {
      out.push(
        `size check: limit ${formatBytes(d.size_check.limit_bytes)}; ${d.size_check.estimated ? `estimated size after: ${formatBytes(d.size_check.projected_bytes_after ?? 0)}` + ` (an estimate: ${d.size_check.method})` : `${d.size_check.steps.length} step(s)`}`,
      );
      if (d.size_check.shortfall) out.push(`size check stopped: ${d.size_check.shortfall}`);
    }
    if (d.vacuum)
      out.push(
        `VACUUM: ${d.vacuum.ran ? `ran in ${d.vacuum.duration_ms} ms (file + WAL after the deletions shrank by ` + `${formatBytes(d.vacuum.reclaimed_bytes ?? 0)})` : 'not run'}` +
          `: ${d.vacuum.reason}`,
      );
    else if (dry && t.deleted_sessions > 0)
      out.push(
        'VACUUM: decided after deleting (only if it gives back at least 1 MiB and ' +
          'a tenth of the file, and only while the gateway is stopped)',
      );
  } else out.push(`seahorse.db: ${d.bytes_before > 0 ? 'unreadable' : 'none'} (${d.path})`);
  out.push(...pruneExtraLines(r));
  // Why planned or unsafe sessions were kept, one line each; the same reason many times is summed up.
  // Per detail, how many and the first three keys: all that is printed.
  const byDetail = new Map<string, { n: number; keys: string[] }>();
  for (const s of r.sessions)
    if (s.detail && s.action === 'keep') {
      let d = byDetail.get(s.detail);
      if (!d) byDetail.set(s.detail, (d = { n: 0, keys: [] }));
      if (d.n++ < 3) d.keys.push(s.key ?? s.file);
    }
  for (const [detail, { n, keys }] of byDetail) {
    // A detail that starts with "kept" says so itself ("kept with its alias group: ...").
    const why = detail.startsWith('kept ') ? detail.slice(5) : `: ${detail}`;
    if (n <= 3) for (const k of keys) out.push(`kept ${k}${why.startsWith(':') ? why : ` ${why}`}`);
    else out.push(`kept ${n} sessions (${keys.slice(0, 2).join(', ')}, ...)${why.startsWith(':') ? why : ` ${why}`}`);
  }
  // The warnings once more, where a long table ends.
  writeWarnings(out, summary.warnings);
  out.push(`(${r.duration_ms} ms)`);
}

function* take<T>(xs: Iterable<T>, n: number): Generator<T> {
  if (n <= 0) return;
  let i = 0;
  for (const x of xs) {
    yield x;
    if (++i >= n) return;
  }
}

function* lazyMap<T, U>(xs: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

/** On a terminal the table shows its first rows (the summary stays on the first screen); --full, --wide, a pipe: all */
export const TERMINAL_TABLE_ROWS = 20;

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

export async function run(opts: Record<string, unknown>): Promise<number> {
  if (opts.apply === true) {
    const { runApply } = await import('./prune-apply.js');
    return runApply(opts);
  }
  return execute(opts, mainIo(opts));
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

export async function execute(opts: Record<string, unknown>, io: PruneIo): Promise<number> {
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
  const stopAt = deadline === undefined ? Infinity : Date.now() + deadline * 1000;
  const signalled = io.signalled ?? (() => null);
  const ask = io.confirm;
  const report = await runPrunePass({
    shouldStop: () => Date.now() > stopAt || signalled() !== null,
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
    ifEnabled: opts.ifEnabled === true,
    clock: systemClock,
    freeSpace: freeSpaceFromEnv(),
    // Read by the dry-run too (restore holds, an owed VACUUM, the startup-time model's samples), so it
    // shows what apply would do; only --apply writes there.
    stateDir: resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined),
    onProgress: apply && !opts.json ? progressReporter(io) : undefined,
    noArchivePaths: !opts.json,
    // Printed or written as JSON entry by entry: never all held at once.
    streamSessions: true,
  });
  if (apply && opts.preStart === true) {
    const { recordPreStartSample } = await import('./pre-start-sample.js');
    const w = recordPreStartSample(
      report,
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
