import type { Reason } from '../prune/plan/plan.js';
import { KEPT_AT_APPLY, type PruneReport } from '../prune/report/report.js';
import type { SessionList } from '../prune/report/sessions.js';
import { GUARD_ONLY_KEYS, type PolicyKey } from '../prune/policy.js';
import { reportSummary, writeSummary, writeWarnings, writeWhere } from './prune-summary.js';
import { cronRulesOn, GUARD_KEY_REASON_SHORT, GUARD_KEY_REASON_TEXT, pruneGuardKeyLines } from './render-guard-keys.js';
import {
  DEFAULT_WIDTH,
  displayWidth,
  formatAge,
  formatBytes,
  type LayoutWriter,
  layoutToString,
  shortKey,
  tableRule,
  tableShape,
  type Column,
} from './format.js';

/** The prune report as text: where and what first, the table, the totals, the warnings again. */
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
  pinned: 'pinned (never deleted; see below)',
  requested: 'asked for (picoclaw-guard delete)',
  not_selected: 'not the session asked for',
  changed_since_plan: 'changed since planning: kept',
  archive_failed: 'archive failed: kept',
  not_writable: 'not writable: kept',
  delete_failed: 'delete failed: kept',
  size_limit_reached: 'not needed: db fits',
  interrupted: 'pass stopped: kept',
  ...GUARD_KEY_REASON_TEXT,
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
  // Longer than 20 columns: the table has always shown this one whole.
  restored_hold: 'restored: held (see below)',
  pinned: 'pinned',
  requested: 'asked for',
  not_selected: 'not asked for',
  ...GUARD_KEY_REASON_SHORT,
} satisfies Record<Reason, string>;

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
  /**
   * The table lists the deleted sessions only; the kept ones are counted in the summary. What a pre-start
   * pass prints goes to the journal on every gateway start: a line a session there says nothing a person
   * asked for, and writes the card. Default: every session.
   */
  deletedOnly?: boolean;
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
  else if (r.age_check === 'refused_clock')
    out.push({
      text:
        'age check: REFUSED (the clock cannot be trusted: nothing is deleted by age; see the warning below, ' +
        'and run once with --trust-clock if the clock is right)',
      indent: 11,
    });
  out.push('');
  const summary = reportSummary(r);
  writeSummary(out, summary, reasonText);
  out.push('');
  const nowMs = Date.parse(r.now);
  const cron = cronRulesOn(r);
  const listed = o.deletedOnly ? () => filtered(r.sessions, (s) => attempted(s.action, s.reason)) : () => r.sessions;
  const rows = (reasons: Record<string, string>) => () =>
    lazyMap(listed(), (s) => [
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
  const listedCount = o.deletedOnly
    ? r.totals.delete + [...KEPT_AT_APPLY].reduce((n, reason) => n + (r.totals.by_reason[reason] ?? 0), 0)
    : r.sessions.length;
  const unlisted = r.sessions.length - listedCount;
  if (r.sessions.length === 0) out.push('No sessions.');
  else if (listedCount === 0)
    out.push(`No session deleted; the ${unlisted} kept are counted above (picoclaw-guard prune lists them).`);
  else {
    // The full reasons when the whole table fits, else the short ones.
    // The rule under the header is the widest line of a table at its natural width.
    const full = tableShape(columns, rows(REASON_TEXT)(), Infinity);
    const limit = o.tableRows ?? Infinity;
    const first = (make: () => Iterable<string[]>) => () => take(make(), limit);
    if (displayWidth(tableRule(full)) <= width) out.tableOfShape(full, first(rows(REASON_TEXT)));
    else out.tableOfShape(tableShape(columns, rows(REASON_SHORT)(), width), first(rows(REASON_SHORT)));
    if (listedCount > limit)
      out.push(
        `  ... ${listedCount - limit} more row(s) not shown on a terminal: --full prints them all, ` +
          `--json the whole report`,
      );
    if (unlisted > 0) out.push(`  the ${unlisted} kept session(s) are counted above (picoclaw-guard prune lists them)`);
  }
  // Fewer groups than sessions: some session is one of an alias group (read without making every entry).
  if (listedCount > 0 && r.totals.groups < r.totals.sessions)
    out.push('  * part of an alias group: kept or deleted together');
  const del = r.orphans.filter((o) => o.action === 'delete');
  if (r.orphans.length > 0) {
    out.push('');
    out.push(
      `Orphan seahorse conversations (no session file in any agent's folder): ` +
        `${r.orphans.length}, ${dry ? 'would delete' : 'deleted'} ${del.length}` +
        ` by age`,
    );
    const keyCols = Number.isFinite(width) ? Math.max(20, width - 48) : Infinity;
    const shown = o.deletedOnly ? del : r.orphans;
    for (const o of shown.slice(0, 20))
      out.push(
        `  ${o.action === 'delete' ? (dry ? 'DELETE' : 'DELETED') : dry ? 'keep  ' : 'kept  '}` +
          `  ${shortKey(o.key, keyCols)}  ${o.last_activity?.replace(/\.\d{3}Z$/, 'Z') ?? 'undated'}` +
          `  ${o.messages} messages`,
      );
    if (shown.length > 20) out.push(`  ... and ${shown.length - 20} more (see --json)`);
  }
  const keptNotes = !o.deletedOnly;
  if (keptNotes) for (const j of r.orphan_jsonl) out.push(`  kept: ${j.path}: ${j.reason}`);
  if (keptNotes)
    for (const o of r.orphans)
      if (o.action === 'keep' && o.detail)
        out.push(`  kept orphan ${shortKey(o.key, 60)}: ${REASON_TEXT[o.reason] ?? o.reason}: ${o.detail}`);
  for (const c of r.shared_conversations ?? []) {
    if (c.action === 'delete') out.push(`  deleted shared conversation ${shortKey(c.key, 60)}: ${c.detail ?? ''}`);
    else if (keptNotes)
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
  out.push(...pruneGuardKeyLines(r));
  // Why planned or unsafe sessions were kept, one line each; the same reason many times is summed up.
  // Per detail, how many and the first three keys: all that is printed.
  const byDetail = new Map<string, { n: number; keys: string[] }>();
  if (listedCount > 0)
    for (const s of listed())
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

/** A session the pass deleted, or meant to and kept for what it found. */
const attempted = (action: string, reason: string): boolean => action === 'delete' || KEPT_AT_APPLY.has(reason);

function* filtered<T>(xs: Iterable<T>, pass: (x: T) => boolean): Generator<T> {
  for (const x of xs) if (pass(x)) yield x;
}

function* lazyMap<T, U>(xs: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

/** On a terminal the table shows its first rows (the summary stays on the first screen); --full, --wide, a pipe: all */
export const TERMINAL_TABLE_ROWS = 20;
