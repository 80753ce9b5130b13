import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { CRASH, DAEMON, ONLINE, runExternal } from './external.js';
import {
  CLI,
  fmtMs,
  machine,
  machineLine,
  markdownTable,
  renderTable,
  setTmpBase,
  tmpBase,
  type BenchContext,
  type BenchResult,
  type Machine,
} from './lib.js';

/**
 * The benchmark suite behind BENCHMARKS.md: `npm run build && npm run bench [-- NAMES] [OPTIONS]`.
 * Not part of `npm test`. Each benchmark builds its own homes with the sample-home
 * builder, measures the real CLI (or the guard's deletion code) in child processes,
 * prints its tables and says where each goal stands. BENCHMARKS.md records a full run.
 */

const HELP =
  `usage: npm run bench -- [NAME ...] [--quick] [--runs N] [--cold] [--tmp ` +
  `DIR] [--keep] [--md FILE] [--json FILE]

NAME (default: all but crash-soak, in this order):
  startup     5  start-up cost: --help, health, sessions beside node -e ` +
  `0
  logs        7  startup report over 10 MB / 100 MB / 1 GB gateway logs ` +
  `beside wc -l
  planning    1  prune dry-run and sessions at 200 / 2,000 / 20,000 sessions,` +
  ` 20 MB vs 2 GB
  seahorse    2,3 deleting half of seahorse.db (20k / 50k / 200k messages) ` +
  `vs PicoClaw's triggers; VACUUM
  online      4  gateway simulator + online passes (runs dist/bench/live-gateway-soak.js)
  daemon      6  daemon footprint (runs dist/bench/daemon-footprint.js ` +
  `when it exists)
  crash-soak     the crash-safety harness (dist/bench/crash-soak.js), ` +
  `only when named
Numbers work too: 1 2 3 4 5 6 7.

  --quick      a few-minute smoke run: smaller homes, fewer runs
  --runs N     timed runs per figure (default 5, --quick 3); medians are ` +
  `reported
  --cold       planning: also measure the 2,000-session homes with the ` +
  `page cache dropped (root)
  --tmp DIR    where temporary homes go (default: ${tmpdir()}); needs ~5 GB free for the full run
  --keep       keep the temporary homes
  --md FILE    also write the tables as Markdown (for BENCHMARKS.md)
  --json FILE  also write every raw figure as JSON`;

const ORDER = ['startup', 'logs', 'planning', 'seahorse', 'online', 'daemon'];
const ALIASES: Record<string, string> = {
  '1': 'planning',
  '2': 'seahorse',
  '3': 'seahorse',
  vacuum: 'seahorse',
  '4': 'online',
  '5': 'startup',
  '6': 'daemon',
  '7': 'logs',
  crash: 'crash-soak',
};

async function runOne(name: string, ctx: BenchContext): Promise<BenchResult> {
  switch (name) {
    case 'planning':
      return (await import('./planning.js')).run(ctx);
    case 'seahorse':
      return (await import('./seahorse.js')).run(ctx);
    case 'startup':
      return (await import('./startup-cost.js')).run(ctx);
    case 'logs':
      return (await import('./logs.js')).run(ctx);
    case 'online':
      return runExternal(ctx, ONLINE);
    case 'daemon':
      return runExternal(ctx, DAEMON);
    case 'crash-soak':
      return runExternal(ctx, CRASH);
    default:
      throw new Error(`unknown benchmark ${name}`);
  }
}

const MARK: Record<string, string> = { met: 'MET', missed: 'MISSED', 'not measured': 'NOT MEASURED', info: 'INFO' };

function printResult(r: BenchResult): void {
  const out: string[] = ['', `== ${r.item ? `${r.item}. ` : ''}${r.title}  (${fmtMs(r.durationMs)})`];
  for (const t of r.tables) out.push('', renderTable(t));
  for (const n of r.notes) out.push(`note: ${n}`);
  out.push('');
  for (const v of r.verdicts) out.push(`[${MARK[v.status]}] ${v.goal}: ${v.detail}`);
  process.stdout.write(out.join('\n') + '\n');
}

function markdown(m: Machine, argv: string[], results: BenchResult[]): string {
  const out: string[] = [
    `Run: \`npm run bench${argv.length ? ' -- ' + argv.join(' ') : ''}\`, ${m.date}`,
    '',
    `Machine: ${machineLine(m)}`,
    '',
  ];
  for (const r of results) {
    out.push(
      `### ${r.item ? `${r.item}. ` : ''}${r.title}`,
      '',
      `Command: \`${r.command}\` (${fmtMs(r.durationMs)})`,
      '',
    );
    for (const t of r.tables) {
      out.push(`**${t.title}**`, '', markdownTable(t), '');
      for (const n of t.notes ?? []) out.push(`- ${n}`);
      if (t.notes?.length) out.push('');
    }
    for (const v of r.verdicts) out.push(`- **${MARK[v.status]}**: ${v.goal}: ${v.detail}`);
    for (const n of r.notes) out.push(`- Note: ${n}`);
    out.push('');
  }
  return out.join('\n');
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      cold: { type: 'boolean', default: false },
      tmp: { type: 'string' },
      keep: { type: 'boolean', default: false },
      md: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  const names: string[] = [];
  for (const p of positionals.length ? positionals : ORDER) {
    const n = ALIASES[p] ?? p;
    if (![...ORDER, 'crash-soak'].includes(n)) {
      process.stderr.write(`unknown benchmark: ${p}\n\n${HELP}\n`);
      return 2;
    }
    if (!names.includes(n)) names.push(n);
  }
  if (!existsSync(CLI)) {
    process.stderr.write(`${CLI} is missing: run npm run build first\n`);
    return 2;
  }
  const runs = values.runs ? Number(values.runs) : values.quick ? 3 : 5;
  if (!Number.isInteger(runs) || runs < 1) {
    process.stderr.write('--runs takes a whole number of at least 1\n');
    return 2;
  }
  setTmpBase(values.tmp ?? tmpdir());
  const cleanup = () => {
    if (!values.keep) rmSync(tmpBase(), { recursive: true, force: true });
  };
  process.on('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  const ctx: BenchContext = {
    quick: values.quick,
    runs,
    tmp: tmpBase(),
    keep: values.keep,
    cold: values.cold,
    log: (l) => process.stderr.write(l + '\n'),
  };
  const m = machine(tmpBase());
  process.stdout.write(
    `picoclaw-guard benchmarks${values.quick ? ' (--quick)' : ''}: ${names.join(', ')}` +
      `\n${m.date}\n${machineLine(m)}\ntemp: ${tmpBase()}\n`,
  );
  const results: BenchResult[] = [];
  let failed = false;
  for (const n of names) {
    try {
      const r = await runOne(n, ctx);
      results.push(r);
      printResult(r);
    } catch (err) {
      failed = true;
      process.stdout.write(`\n== ${n}: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    }
  }
  cleanup();
  process.stdout.write('\nSummary\n');
  for (const r of results)
    for (const v of r.verdicts)
      process.stdout.write(`  ${r.item ? `${r.item}.` : '  '} [${MARK[v.status]}] ${v.goal}\n`);
  if (values.md)
    writeFileSync(
      values.md,
      markdown(
        m,
        argv.filter((a) => a !== '--md' && a !== values.md && a !== '--json' && a !== values.json),
        results,
      ),
    );
  if (values.json) writeFileSync(values.json, JSON.stringify({ machine: m, argv, results }, null, 2) + '\n');
  return failed ? 1 : 0;
}

process.exitCode = await main();
