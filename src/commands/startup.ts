import { existsSync, statSync } from 'node:fs';
import { ExitCode, GuardError } from '../errors.js';
import {
  analyzeStartupLog,
  DEFAULT_MAX_RESTARTS,
  settleAndMarkPrunes,
  summarize,
  type PruneEffect,
  type RestartEntry,
  type Span,
  type StartupReport,
} from '../startup/index.js';
import { resolveStateDir } from '../io/statedir.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import type { SessionsNow } from '../startup/sessions-now.js';
import { homeFromOpts } from './common.js';
import { fitTable, formatBytes, layout, outputWidth, type Line } from './format.js';
import { printJson } from './json-stream.js';
import { predictionLines } from './render-guard-keys.js';

/**
 * `picoclaw-guard startup [--json] [--log FILE|-] [--last N]`: each gateway restart from
 * gateway.log (or journald's / a redirect's console lines), how it ended, its time to
 * ready and its bootstrap gap, then the trend beside the sessions on the board now and
 * the prune passes in between (docs/picoclaw.md#the-startup-bootstrap, docs/picoclaw.md#gatewaylog).
 *
 * Exit codes: 0 report printed (also when the log is empty or holds only warnings: the
 * report says so and how to fix it); 2 bad flag or --home; 3 the log file is missing or
 * unreadable.
 */

async function sessionsNow(home: PicoClawHome): Promise<SessionsNow | { error: string }> {
  try {
    // Imported only when there is a home to look at (seahorse.db support loads a native module).
    return (await import('../startup/sessions-now.js')).sessionsNow(home);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

function findHome(opts: Record<string, unknown>, logGiven: boolean): PicoClawHome | null {
  // Without --log the home is required (its log is the input); with --log it only adds context.
  if (!logGiven || typeof opts.home === 'string') return homeFromOpts(opts);
  try {
    const h = homeFromOpts(opts, false);
    return existsSync(h.home) ? h : null;
  } catch {
    return null;
  }
}

/** Two names of one file (a relative path, a symlink, a bind mount). */
function sameFile(a: string, b: string): boolean {
  const x = statSync(a, { throwIfNoEntry: false });
  const y = statSync(b, { throwIfNoEntry: false });
  return x !== undefined && y !== undefined && x.dev === y.dev && x.ino === y.ino;
}

export function formatSeconds(s: Span | null, none = '-'): string {
  if (s === null) return none;
  const v = s.precision_seconds < 1 ? s.seconds.toFixed(3).replace(/\.?0+$/, '') : String(Math.round(s.seconds));
  return `${s.lower_bound ? '≥' : ''}${v} s`;
}

/** At warn level a restart's progress is not logged: no claim about it can be made. */
const detailed = (r: RestartEntry) => r.level === 'info' || r.level === 'debug';

function noteFor(r: RestartEntry): string {
  const parts: string[] = [];
  if (r.after_prune) parts.push(`after prune (-${r.after_prune.deleted_sessions} sessions)`);
  if (r.end === 'failed' && r.end_detail) {
    if (/already running|singleton/i.test(r.end_detail)) parts.push('refused: another gateway was running');
    else parts.push(r.end_detail.length > 60 ? r.end_detail.slice(0, 57) + '...' : r.end_detail);
  } else if (r.end_detail?.startsWith('killed during')) parts.push(r.end_detail.replace(/;.*$/, ''));
  else if (r.end === 'running' && detailed(r) && r.reached !== 'serving' && r.reached !== 'initialized')
    parts.push(`still ${r.reached === 'bootstrap' ? 'in the bootstrap' : 'starting'}`);
  if (!detailed(r) && r.end !== 'failed') parts.push('warn level: progress not logged');
  if (r.gap.database_locked > 0) parts.push(`database is locked ×${r.gap.database_locked}`);
  if (r.seahorse_off) parts.push('seahorse off (no bootstrap)');
  if (r.reloads > 0) parts.push(`${r.reloads} reload${r.reloads > 1 ? 's' : ''}`);
  return parts.join('; ');
}

function method(s: Span): string {
  const precision = s.precision_seconds < 1 ? `${s.precision_seconds * 1000} ms` : '±1 s, whole-second timestamps';
  return `${s.from} → ${s.to} (${precision})`;
}

function render(
  report: StartupReport,
  shown: RestartEntry[],
  home: PicoClawHome | null,
  now: SessionsNow | { error: string } | null,
  prunes: PruneEffect[],
  width: number,
): string {
  const out: (string | Line)[] = [];
  const src = report.source;
  const what = src.path ?? 'standard input';
  const formats =
    [
      report.lines.json > 0 ? 'JSON' : '',
      report.lines.console > 0 ? 'console' : '',
      report.lines.journald > 0 ? 'journald' : '',
    ]
      .filter(Boolean)
      .join(' + ') || 'no log lines';
  const level = report.content_level === 'none' ? '' : `; the most detailed level in it: ${report.content_level}`;
  out.push(
    src.state === 'empty'
      ? `${what}: empty`
      : `${what}: ${formatBytes(src.bytes_read)}, ${report.lines.total} lines (${formats}${level})`,
  );

  const enable = report.advice.find((a) => a.kind === 'enable_info');
  if (enable) {
    out.push('');
    out.push(`There is almost nothing to read: ${enable.message}`);
    out.push('Set either of:');
    out.push(`  ${enable.settings[0]!.replace('(in config.json)', `(in ${home?.configPath ?? 'config.json'})`)}`);
    out.push(`  ${enable.settings[1]}`);
    out.push('and, for millisecond figures:');
    out.push(`  ${enable.settings[2]!.replace('(in config.json)', `(in ${home?.configPath ?? 'config.json'})`)}`);
  }

  out.push('');
  if (shown.length === 0) {
    out.push(
      report.content_level === 'warn' || report.content_level === 'none'
        ? 'No restart is visible at this log level.'
        : 'No restart markers found (`Log level set to`, `wrote pid file`, `found ' +
            'pid file`, `Gateway startup failed`).',
    );
  } else {
    const more = report.restarts_found > shown.length ? ` (the last ${shown.length} of ${report.restarts_found})` : '';
    out.push(`Restarts${more}:`);
    out.push(
      ...fitTable(
        [
          { header: '#', align: 'right' },
          { header: 'STARTED' },
          { header: 'ENDED' },
          { header: 'READY IN', align: 'right' },
          { header: 'BOOTSTRAP GAP', short: 'GAP', align: 'right' },
          { header: 'INGEST', align: 'right', drop: 1 },
          { header: 'WARNINGS', short: 'WARN', align: 'right', drop: 2 },
          { header: 'NOTE', fit: 'wrap', min: 20 },
        ],
        shown.map((r) => [
          String(r.n),
          r.started_at_text,
          r.end,
          formatSeconds(r.time_to_ready, r.end === 'crashed' && detailed(r) ? 'never' : '-'),
          formatSeconds(r.bootstrap_gap),
          r.reached === 'starting' && r.gap.ingest_lines === 0 ? '-' : String(r.gap.ingest_lines),
          r.gap.warnings === 0 && r.reached === 'starting' ? '-' : String(r.gap.warnings),
          noteFor(r),
        ]),
        width,
      ),
    );
    const methods = new Map<string, Set<string>>();
    for (const r of shown) {
      if (r.time_to_ready)
        (methods.get('READY IN') ?? methods.set('READY IN', new Set()).get('READY IN')!).add(method(r.time_to_ready));
      if (r.bootstrap_gap)
        (methods.get('BOOTSTRAP GAP') ?? methods.set('BOOTSTRAP GAP', new Set()).get('BOOTSTRAP GAP')!).add(
          method({ ...r.bootstrap_gap, to: r.bootstrap_gap.lower_bound ? 'the last line logged' : r.bootstrap_gap.to }),
        );
    }
    if (methods.size > 0) {
      out.push('');
      out.push('How the figures were measured:');
      for (const [col, set] of methods)
        [...set].forEach((m, i) =>
          out.push({ text: `  ${i === 0 ? col.padEnd(13) : ' '.repeat(13)}  ${m}`, indent: 17 }),
        );
      if (shown.some((r) => r.bootstrap_gap?.lower_bound || r.time_to_ready?.lower_bound))
        out.push(`  ${'≥'.padEnd(13)}  the end was never logged (killed, or still running): at least this long`);
      out.push('  INGEST / WARNINGS: `ingest` and WARN lines inside the bootstrap gap.');
    }
  }

  const s = report.summary;
  out.push('');
  out.push('Summary:');
  out.push(
    `  restarts: ${s.restarts}${s.restarts > 0 ? ` (${s.stopped} stopped, ${s.crashed} crashed, ${s.failed} failed, ${s.running}` + ` running)` : ''}` +
      `${report.reloads > 0 ? `; ${report.reloads} config reload(s), not counted as restarts` : ''}`,
  );
  const when = (n: number) => report.restarts.find((r) => r.n === n)?.started_at_text ?? '';
  if (s.latest_gap)
    out.push(
      `  latest bootstrap gap: ${formatSeconds(s.latest_gap)} (restart ${s.latest_gap.restart}` +
        `, ${when(s.latest_gap.restart)})`,
    );
  if (s.latest_ready)
    out.push(`  latest time to ready: ${formatSeconds(s.latest_ready)} (restart ${s.latest_ready.restart})`);
  if (s.trend) {
    const t = s.trend;
    const sign = t.change_seconds > 0 ? '+' : '';
    const slope =
      t.per_day_seconds === null
        ? ''
        : `; least-squares slope ${t.per_day_seconds > 0 ? '+' : ''}${t.per_day_seconds} s/day`;
    out.push(
      `  trend: ${t.first.seconds} s at restart ${t.first.restart} → ${t.latest.seconds}` +
        ` s at restart ${t.latest.restart} (${sign}${t.change_seconds} s, ${t.direction}` +
        `, over ${t.restarts_with_gap} complete gaps${slope})`,
    );
  }
  if (now && 'error' in now) out.push(`  sessions now: unknown (${now.error})`);
  else if (now) {
    out.push(
      `  sessions now: ${now.sessions} in ${now.agents} agent(s), ${formatBytes(now.bytes)}` +
        ` of .jsonl + .meta.json; bootstrapped at each start (agent ${now.bootstrapped.agent}` +
        `): ${now.bootstrapped.sessions}, ${formatBytes(now.bootstrapped.bytes)}` +
        (now.seahorse_bytes !== null ? `; seahorse.db ${formatBytes(now.seahorse_bytes)}` : ''),
    );
  }
  for (const p of prunes) {
    const before = p.gap_before ? `${p.gap_before.seconds} s (restart ${p.gap_before.restart})` : 'no gap before';
    const after = p.gap_after ? `${p.gap_after.seconds} s (restart ${p.gap_after.restart})` : 'no restart since';
    out.push(
      `  prune ${p.at}: deleted ${p.deleted_sessions} sessions (${formatBytes(p.freed_bytes)}` +
        `); bootstrap gap ${before} → ${after}`,
    );
  }
  if (report.timestamps.note) out.push(`  timestamps: ${report.timestamps.note}`);
  for (const n of report.notes) out.push(`  note: ${n}`);
  for (const a of report.advice) {
    if (a.kind === 'enable_info') continue;
    out.push(`  tip: ${a.message}`);
    for (const setting of a.settings) out.push(`       ${setting}`);
  }
  return layout(out, width) + '\n';
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  // A whole number of 1 or more: cli.ts checks it while parsing.
  const last = typeof opts.last === 'number' ? opts.last : undefined;
  const logFlag = typeof opts.log === 'string' ? opts.log : undefined;
  const home = findHome(opts, logFlag !== undefined);
  const path = logFlag === undefined ? home!.logPath : logFlag === '-' ? null : logFlag;

  // Standard input is read from fd 0 directly (two reused buffers), not through process.stdin.
  const report = await analyzeStartupLog(path === null ? { fd: 0 } : { path }, {
    configLogLevel: home?.gateway.logLevel ?? null,
    maxRestarts: Math.max(DEFAULT_MAX_RESTARTS, last ?? 0),
  });
  if (report.source.state === 'missing') {
    throw new GuardError(`no log file at ${path}`, {
      exitCode: ExitCode.DATA,
      path: path ?? undefined,
      hint:
        logFlag === undefined
          ? 'the gateway creates it when it starts (logs/gateway.log in its home); ' +
            'with systemd, read the journal instead: journalctl -u picoclaw -o short-iso ' +
            '| picoclaw-guard startup --log -'
          : 'check the path, or pass - to read standard input',
    });
  }
  if (report.source.state === 'unreadable') {
    throw new GuardError(`cannot read ${path}: ${report.source.error}`, {
      exitCode: ExitCode.DATA,
      path: path ?? undefined,
      hint: "run as a user that can read it (e.g. the gateway's user), or pipe it in with --log -",
    });
  }

  let prunes: PruneEffect[] = [];
  if (home) {
    // The home's own log, however it is named: whether the gateway runs now settles a latest
    // restart with no closing line. Another board's log (or standard input) is read as it is.
    const ownLog = logFlag === undefined || (path !== null && sameFile(path, home.logPath));
    const stateDir = resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined);
    prunes = await settleAndMarkPrunes(report, home, { stateDir, ownLog });
  }
  const now = home ? await sessionsNow(home) : null;
  const prediction = home
    ? await (
        await import('./startup-predict.js')
      ).predictNextStart(
        home,
        resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined),
        report,
        process.env,
      )
    : null;
  const shown = last === undefined ? report.restarts : report.restarts.slice(-last);
  const summary = last === undefined ? report.summary : summarize(shown);

  if (opts.json) {
    printJson({ ...report, restarts: shown, summary, shown_last: last ?? null, sessions_now: now, prunes, prediction });
    return 0;
  }
  const width = outputWidth(opts);
  process.stdout.write(
    render({ ...report, summary }, shown, home, now, prunes, width) +
      (prediction ? layout(predictionLines(prediction), width) + '\n' : ''),
  );
  return 0;
}
