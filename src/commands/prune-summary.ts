import type { Whereabouts } from '../picoclaw/home.js';
import type { ConfirmInput, DbSummary } from '../prune/pass.js';
import type { PruneReport } from '../prune/report/report.js';
import type { SessionList } from '../prune/report/sessions.js';
import type { VerdictCount } from '../prune/report/summary.js';
import { formatBytes, table, type LayoutWriter } from './format.js';

/**
 * The first screen of a prune plan, and the prompt before an apply: where the pass works (every
 * sessions folder and seahorse.db by real path, marked when outside the home), what it does
 * (sessions and bytes by verdict), and every warning. The full table comes after it.
 */
export interface SummaryView {
  dry: boolean;
  where: Whereabouts | null;
  verdicts: VerdictCount[];
  orphansDelete: number;
  warnings: string[];
  db: DbSummary | null;
}

/** The folders a pass reads and deletes from, one line each; outside ones marked. */
export function writeWhere(out: LayoutWriter, where: Whereabouts | null): void {
  if (!where) return;
  out.push(`where (real paths; home ${where.home_real}):`);
  for (const p of where.paths) {
    const label = p.kind === 'sessions' ? `sessions (${p.agents.join(', ')})` : 'seahorse.db';
    const mark = p.inside ? '' : ' OUTSIDE THE HOME';
    const named = p.real === p.path ? '' : ` (configured as ${p.path})`;
    out.push({ text: `  ${label}: ${p.real}${mark}${named}`, indent: 4 });
  }
}

/** Warnings the summary adds to the pass's own: folders outside the home. */
export function whereWarnings(where: Whereabouts | null): string[] {
  if (!where || where.outside === 0) return [];
  return [
    `${where.outside} of the folders above lie outside the home ${where.home_real} (config.json names them by ` +
      `an absolute or ~/ path, or through a symlink): a copy of a home still prunes the original's sessions`,
  ];
}

/** Every warning, once: the pass's own, folders outside the home, undated sessions, an unmet size limit. */
export function summaryWarnings(o: {
  where: Whereabouts | null;
  warnings: string[];
  undated: { sessions: number; displaced: number } | null;
  limitUnmet: string | null;
}): string[] {
  const out = [...whereWarnings(o.where), ...o.warnings];
  // Displacing ones have the pass's own warning.
  if (o.undated && o.undated.sessions > 0 && o.undated.displaced === 0)
    out.push(
      `${o.undated.sessions} session(s) have no usable timestamp: never deleted (picoclaw-guard sessions lists them)`,
    );
  const unmet = o.limitUnmet;
  if (unmet && !out.some((w) => w.includes(unmet))) out.push(`max_db_size_mb cannot be met: ${unmet}`);
  return out;
}

export function reportWarnings(r: PruneReport<SessionList>): string[] {
  return summaryWarnings({ ...r, limitUnmet: r.database.size_check.limit_unmet });
}

export function reportSummary(r: PruneReport<SessionList>): SummaryView {
  return {
    dry: r.mode === 'dry-run',
    where: r.where,
    verdicts: r.totals.by_verdict,
    orphansDelete: r.orphans.filter((o) => o.action === 'delete').length,
    warnings: reportWarnings(r),
    db: r.database.present
      ? {
          bytes: r.database.bytes_after ?? r.database.bytes_before,
          estimatedAfter: r.mode === 'dry-run' ? r.database.size_check.projected_bytes_after : null,
          limitBytes: r.database.size_check.limit_bytes,
        }
      : null,
  };
}

export function confirmSummary(c: ConfirmInput): SummaryView {
  return {
    dry: true,
    where: c.where,
    verdicts: c.verdicts,
    orphansDelete: c.orphans,
    warnings: summaryWarnings(c),
    db: c.db,
  };
}

/** Sessions and bytes an apply deletes (or would). */
export function deleteTotals(v: VerdictCount[]): { sessions: number; bytes: number } {
  let sessions = 0;
  let bytes = 0;
  for (const x of v)
    if (x.action === 'delete') {
      sessions += x.sessions;
      bytes += x.bytes;
    }
  return { sessions, bytes };
}

/** The summary: one line of totals, a small table by verdict, and every warning. */
export function writeSummary(out: LayoutWriter, s: SummaryView, reasonText: (reason: string) => string): void {
  let all = 0;
  for (const v of s.verdicts) all += v.sessions;
  const del = deleteTotals(s.verdicts);
  out.push(
    `Summary: ${s.dry ? 'would delete' : 'deleted'} ${del.sessions} of ${all} session(s) (${formatBytes(del.bytes)})` +
      `, ${s.dry ? 'keep' : 'kept'} ${all - del.sessions}` +
      (s.orphansDelete > 0 ? `; ${s.orphansDelete} orphan seahorse conversation(s)` : ''),
  );
  if (s.verdicts.length > 0) {
    const rows = s.verdicts.map((v) => [
      v.action === 'delete' ? (s.dry ? 'DELETE' : 'DELETED') : s.dry ? 'keep' : 'kept',
      String(v.sessions),
      formatBytes(v.bytes),
      reasonText(v.reason),
    ]);
    for (const line of table(['', 'SESSIONS', 'BYTES', 'REASON'], rows, ['left', 'right', 'right']).split('\n'))
      out.push(`  ${line}`);
  }
  if (s.db)
    out.push(
      `seahorse.db: ${formatBytes(s.db.bytes)} (with its WAL)` +
        (s.db.estimatedAfter !== null
          ? `, about ${formatBytes(s.db.estimatedAfter)} after the plan and a VACUUM`
          : '') +
        (s.db.limitBytes > 0 ? `; max_db_size_mb ${formatBytes(s.db.limitBytes)}` : ''),
    );
  writeWarnings(out, s.warnings);
}

export function writeWarnings(out: LayoutWriter, warnings: string[]): void {
  for (const w of warnings) out.push({ text: `warning: ${w}`, indent: 9 });
}
