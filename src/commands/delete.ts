import { createInterface } from 'node:readline/promises';
import { ExitCode } from '../errors.js';
import { systemClock } from '../io/clock.js';
import { statfsFreeSpace } from '../io/freespace.js';
import { resolveStateDir } from '../io/statedir.js';
import { runPrunePass } from '../prune/pass.js';
import type { PruneReport, PruneSessionEntry } from '../prune/report/report.js';
import type { Selection } from '../prune/plan/select.js';
import { escapeControl, formatBytes, layout, outputWidth } from './format.js';
import { printJson } from './json-stream.js';

/**
 * `picoclaw-guard delete KEY`: one session and its whole alias group, through the one deleter
 * (src/prune/apply/apply.ts) in an ordinary pass: the pass lock, the gateway probe, the re-check of each
 * file and seahorse row just before it goes, the archive (--archive or prune.archive_dir), the
 * history line. A dry-run unless --apply; with --apply on a terminal it asks first (--yes skips).
 * The pass plans the whole home (a pinned session is refused, an unreadable one too) and narrows the
 * plan to the group (src/prune/plan/select.ts).
 */

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** The selected group's entries in a report: deleted as asked, or kept by a re-check. */
function groupEntries(r: PruneReport, sel: Selection): PruneSessionEntry[] {
  const ids = new Set((sel.selected ?? []).map((m) => `${m.agent}\0${m.file}`));
  return r.sessions.filter((s) => ids.has(`${s.agent}\0${s.file}`));
}

function deleteJson(r: PruneReport, group: PruneSessionEntry[]) {
  return {
    mode: r.mode,
    skipped: r.skipped,
    exit_code: r.exit_code,
    now: r.now,
    home: r.home,
    gateway: r.gateway,
    group,
    deleted_sessions: r.totals.deleted_sessions,
    freed_bytes: r.totals.freed_bytes,
    deleted_seahorse_messages: r.totals.deleted_seahorse_messages,
    database: r.database,
    warnings: r.warnings,
  };
}

function deleteText(r: PruneReport, group: PruneSessionEntry[], width: number): string {
  const dry = r.mode === 'dry-run';
  const lines: string[] = [dry ? 'DRY-RUN: nothing is changed. Add --apply to delete.' : 'APPLY', `home: ${r.home}`];
  if (r.gateway) lines.push(`gateway: ${r.gateway.state} (${r.gateway.reason})`);
  if (r.skipped) {
    lines.push(`SKIPPED: ${r.skipped}`);
    return layout(lines, width);
  }
  const bytes = group.reduce((n, s) => n + s.bytes, 0);
  const rows = group.reduce((n, s) => n + s.seahorse_messages, 0);
  lines.push(
    `${dry ? 'would delete' : 'deleted'} ${group.length === 1 ? 'one session' : `an alias group of ${group.length} sessions`}` +
      ` (${formatBytes(bytes)} of JSONL and meta, ${rows} seahorse messages):`,
  );
  for (const s of group)
    lines.push(
      `  ${s.action === 'delete' ? (dry ? 'DELETE' : 'DELETED') : 'kept'}  ${s.agent}  ${escapeControl(s.key ?? s.file)}` +
        `  ${s.last_activity ?? 'undated'}  ${formatBytes(s.bytes)}` +
        (s.action === 'keep' && s.detail ? `  (${s.reason}: ${s.detail})` : s.archive ? `  archive: ${s.archive}` : ''),
    );
  const d = r.database;
  if (d.present && d.bytes_after !== null)
    lines.push(`seahorse.db: ${formatBytes(d.bytes_before)} -> ${formatBytes(d.bytes_after)} (file + WAL)`);
  for (const w of r.warnings) lines.push(`warning: ${w}`);
  return layout(lines, width);
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const apply = opts.apply === true;
  const base = {
    home: str(opts.home),
    configPath: str(opts.config),
    flags: { archive_dir: str(opts.archive), vacuum: opts.vacuum === false ? false : undefined },
    clock: systemClock,
    freeSpace: statfsFreeSpace,
    stateDir: resolveStateDir(str(opts.stateDir)),
  };
  const sel: Selection = { typed: typeof args[0] === 'string' ? args[0] : '', agent: str(opts.agent) };
  const ask = apply && opts.yes !== true && !opts.json && process.stdin.isTTY && process.stdout.isTTY;
  const width = outputWidth(opts);
  let report = await runPrunePass({ ...base, apply: apply && !ask, only: sel });
  if (ask && !report.skipped) {
    const group = groupEntries(report, sel);
    process.stdout.write(deleteText(report, group, width) + '\n');
    const bytes = group.reduce((n, s) => n + s.bytes, 0);
    const folders = [...new Set(group.map((s) => s.agent))].join(', ');
    if (!(await confirm(`Delete ${group.length} session(s) (${formatBytes(bytes)}) of agent ${folders}? [y/N] `))) {
      process.stdout.write('nothing deleted\n');
      return ExitCode.OK;
    }
    // The very group confirmed, as the exact key: changed meanwhile, it is refused.
    const first = group.find((s) => s.key !== null);
    const confirmed: Selection = {
      typed: first?.key ?? sel.typed,
      agent: first?.agent ?? sel.agent,
      expectMembers: group.map((s) => ({ agent: s.agent, file: s.file })),
    };
    report = await runPrunePass({ ...base, apply: true, only: confirmed });
    sel.selected = confirmed.selected;
  }
  const group = groupEntries(report, sel);
  if (opts.json) printJson(deleteJson(report, group));
  else process.stdout.write(deleteText(report, group, width) + '\n');
  return report.exit_code;
}
