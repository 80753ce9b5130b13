import { systemClock } from '../io/clock.js';
import { freeSpaceFromEnv } from '../io/freespace.js';
import { releaseGarbage } from '../io/heap.js';
import { resolveStateDir } from '../io/statedir.js';
import { runPrunePass } from '../prune/pass.js';
import type { Reason } from '../prune/plan.js';
import type { PruneReport } from '../prune/report.js';
import type { SessionList } from '../prune/report-sessions.js';
import { GUARD_ONLY_KEYS, type PolicyKey } from '../prune/policy.js';
import { cronRulesOn, EXTRA_REASON_SHORT, EXTRA_REASON_TEXT, pruneExtraLines } from './render-extras.js';
import {
  DEFAULT_WIDTH,
  displayWidth,
  formatAge,
  formatBytes,
  LayoutWriter,
  layoutToString,
  outputWidth,
  printJson,
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
function progressReporter(): (done: number, total: number, what: string) => void {
  const tty = process.stderr.isTTY;
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
      process.stderr.write(`\r${line}${done >= total ? '\n' : ''}`);
    } else if (now - last >= 5000 || (done >= total && last !== 0)) {
      last = now;
      shown = line;
      process.stderr.write(`${line}\n`);
    }
  };
}

/** The text report, fitted to `width` columns (Infinity: --wide). */
export function renderPruneText(r: PruneReport<SessionList>, width: number = DEFAULT_WIDTH): string {
  return layoutToString((w) => writePruneText(w, r), width);
}

/** The text report, written as it is made: the table's rows are made for each pass over them, never held. */
export function writePruneText(out: LayoutWriter, r: PruneReport<SessionList>): void {
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
  else if (r.age_check === 'refused_clock')
    out.push({
      text:
        'age check: REFUSED (the clock cannot be trusted: nothing is deleted by age; see the warning below, ' +
        'and run once with --trust-clock if the clock is right)',
      indent: 11,
    });
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
    if (displayWidth(tableRule(full)) <= width) out.tableOfShape(full, rows(REASON_TEXT));
    else out.table(columns, rows(REASON_SHORT));
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
  for (const w of r.warnings) out.push(`warning: ${w}`);
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
  out.push(`(${r.duration_ms} ms)`);
}

function* lazyMap<T, U>(xs: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export async function run(opts: Record<string, unknown>): Promise<number> {
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
  const report = await runPrunePass({
    shouldStop: () => Date.now() > stopAt,
    home: typeof opts.home === 'string' ? opts.home : undefined,
    configPath: typeof opts.config === 'string' ? opts.config : undefined,
    flags,
    apply,
    forceVacuum: opts.forceVacuum === true,
    trustClock: opts.trustClock === true,
    ifEnabled: opts.ifEnabled === true,
    clock: systemClock,
    freeSpace: freeSpaceFromEnv(),
    // Read by the dry-run too (restore holds, an owed VACUUM, the startup-time model's samples), so it
    // shows what apply would do; only --apply writes there.
    stateDir: resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined),
    onProgress: apply && !opts.json ? progressReporter() : undefined,
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
  if (opts.json) printJson(report);
  else {
    const w = new LayoutWriter(outputWidth(opts), (c) => process.stdout.write(c));
    writePruneText(w, report);
    w.flush();
  }
  return report.exit_code;
}
