import { ExitCode } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { resolveStateDir } from '../io/statedir.js';
import { boundLogs, gatewayLogs, MIB, parseLogsConfig, type CutOutcome, type LogsReport } from '../logs/index.js';
import { homeFromOpts } from './common.js';
import { escapeControl, formatBytes } from './format.js';
import { printJson } from './json-stream.js';

/**
 * `picoclaw-guard logs [--dry-run] [--json]`: cut gateway.log and gateway_panic.log that have
 * grown past logs.max_size_mb, keeping what is cut in compressed parts (docs/logs.md). The
 * daemon does the same at each refresh; this is for boards without it, and to look.
 * Exit 0 done (or nothing to do), 4 another cut holds the lock, 6 a log over its limit could
 * not be cut (nothing of it changed: the reason is printed), 2 bad option or config, 3 the
 * journal of a cut in progress cannot be used (src/logs/journal.ts).
 */
function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function sizeArg(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const cfg = loadGuardConfig(str(opts.config));
  const logs = parseLogsConfig(cfg.sections.logs, cfg.path);
  const home = homeFromOpts(opts);
  const maxMb = sizeArg(opts.maxSizeMb) ?? logs.max_size_mb;
  const keep = sizeArg(opts.keepParts) ?? logs.keep_parts;
  const report = await boundLogs(gatewayLogs(home.logPath), {
    stateDir: resolveStateDir(str(opts.stateDir)),
    limitBytes: maxMb * MIB,
    keepParts: keep,
    dryRun: opts.dryRun === true,
  });
  if (opts.json) printJson(report);
  else process.stdout.write(renderLogs(report));
  if (report.locked) return ExitCode.LOCKED;
  return report.files.some((f) => f.action === 'unsupported' || f.action === 'skipped')
    ? ExitCode.SKIPPED
    : ExitCode.OK;
}

function what(f: CutOutcome): string {
  const size = f.size_bytes === null ? '' : `${formatBytes(f.size_bytes)}: `;
  switch (f.action) {
    case 'absent':
      return 'not there (the gateway creates it when it starts)';
    case 'off':
      return `${size}not cut (logs.max_size_mb is 0)`;
    case 'under_limit':
      return `${size}under the limit of ${formatBytes(f.limit_bytes)}${f.reason ? ` (${f.reason})` : ''}`;
    case 'cut':
      return `${size}cut ${formatBytes(f.removed_bytes)} off the head; its lines are in ${f.part}`;
    case 'would_cut':
      return `${size}would cut ${formatBytes(f.removed_bytes)} off the head, its lines into ${f.part}`;
    case 'unsupported':
      return `${size}over the limit but NOT cut: ${f.reason} (nothing changed; see docs/logs.md)`;
    case 'skipped':
      return `${size}over the limit but not cut this time: ${f.reason}`;
  }
}

export function renderLogs(r: LogsReport): string {
  if (r.locked) return 'another run is cutting the logs now (the logs lock is held): nothing done\n';
  const out: string[] = [];
  if (r.dry_run) out.push('dry-run: nothing is written');
  if (r.pending)
    out.push(`a cut killed at step ${r.pending.step} is pending for ${r.pending.file}: the next run finishes it`);
  if (r.resumed)
    out.push(
      `a cut killed at step ${r.resumed.step} of ${r.resumed.file}: ${r.resumed.outcome}${r.resumed.reason ? ` (${r.resumed.reason})` : ''}`,
    );
  for (const f of r.files) {
    out.push(`${f.file}: ${what(f)}`);
    const verb = r.dry_run ? 'would delete' : 'deleted';
    for (const p of f.parts_removed) out.push(`  ${verb} the oldest part ${p}`);
    out.push(`  ${f.parts_kept} part${f.parts_kept === 1 ? '' : 's'} kept (at most ${r.keep_parts})`);
  }
  return out.map(escapeControl).join('\n') + '\n';
}
