import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIST, fmtMs, runChild, type BenchContext, type BenchResult, type Table, type Verdict } from './lib.js';

/**
 * Items 4 and 6 (and the crash soak) are measured by scripts that other parts of the
 * project own: bench/live-gateway-soak.ts (the gateway simulator writing while online
 * passes run) and the daemon's footprint script. The suite runs them when they are
 * built, as separate processes, and reads the JSON summary they print last.
 */

export interface ExternalSpec {
  id: string;
  item: number;
  title: string;
  /** Compiled scripts under dist/bench to try, first found wins. */
  scripts: string[];
  args: (ctx: BenchContext) => string[];
  render?: (summary: Record<string, unknown>) => { tables: Table[]; verdicts: Verdict[] };
  missing: Verdict[];
}

/** The last top-level JSON object a script printed (pretty-printed or on one line). */
export function lastJsonObject(stdout: string): Record<string, unknown> | null {
  const lines = stdout.split('\n');
  for (let end = lines.length - 1; end >= 0; end--) {
    const l = lines[end]!.trimEnd();
    if (l.startsWith('{') && l.endsWith('}')) {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        // not JSON
      }
    }
    if (l === '}') {
      for (let start = end; start >= 0; start--) {
        if (lines[start] === '{') {
          try {
            return JSON.parse(lines.slice(start, end + 1).join('\n')) as Record<string, unknown>;
          } catch {
            break;
          }
        }
      }
    }
  }
  return null;
}

export async function runExternal(ctx: BenchContext, spec: ExternalSpec): Promise<BenchResult> {
  const t0 = performance.now();
  const script = spec.scripts.find((s) => existsSync(join(BENCH_DIST, s)));
  const base = { id: spec.id, item: spec.item, title: spec.title, notes: [] as string[] };
  if (!script) {
    return {
      ...base,
      command: `npm run bench -- ${spec.id}`,
      tables: [],
      verdicts: spec.missing,
      notes: [
        `Not measured: none of ${spec.scripts.map((s) => `dist/bench/${s}`).join(', ')}` +
          ` exists (build it, or it is not written yet).`,
      ],
      durationMs: performance.now() - t0,
    };
  }
  const args = spec.args(ctx);
  ctx.log(`${spec.id}: node dist/bench/${script} ${args.join(' ')}`);
  const r = await runChild(process.execPath, [join(BENCH_DIST, script), ...args], { capture: true, passStderr: true });
  for (const l of r.stdout
    .split('\n')
    .filter((x) => x && !x.startsWith(' ') && !/^[{}]/.test(x))
    .slice(-15))
    ctx.log(`    ${l}`);
  const summary = lastJsonObject(r.stdout);
  const rendered = summary && spec.render ? spec.render(summary) : { tables: [], verdicts: [] };
  if (r.code !== 0)
    base.notes.push(
      `dist/bench/${script} exited with ${r.code ?? r.signal}: its checks failed or it crashed (see its output above).`,
    );
  if (!summary) base.notes.push(`dist/bench/${script} printed no JSON summary.`);
  const tables =
    rendered.tables.length > 0 || !summary
      ? rendered.tables
      : [
          {
            title: `Summary printed by dist/bench/${script}`,
            headers: ['key', 'value'],
            rows: Object.entries(summary).map(([k, v]) => [k, JSON.stringify(v)]),
          },
        ];
  return {
    ...base,
    command:
      `npm run bench -- ${spec.id}   (runs: node dist/bench/${script} ${args.filter((a) => !a.startsWith('/')).join(' ')}` +
      `)`,
    tables,
    verdicts:
      rendered.verdicts.length > 0
        ? rendered.verdicts
        : spec.missing.map((v) => ({ ...v, detail: summary ? 'see the summary table' : v.detail })),
    notes: base.notes,
    durationMs: performance.now() - t0,
    data: { script, args, exit: r.code, wallMs: r.wallMs, summary },
  };
}

interface Latency {
  count: number;
  maxMs: number;
  p99Ms: number;
  p50Ms: number;
}

const lat = (l: Latency | undefined) =>
  l ? `${fmtMs(l.p50Ms)} / ${fmtMs(l.p99Ms)} / ${fmtMs(l.maxMs)} (${l.count})` : '-';

export const ONLINE: ExternalSpec = {
  id: 'online',
  item: 4,
  title: 'Online passes are gentle',
  scripts: ['live-gateway-soak.js'],
  args: (ctx) => (ctx.quick ? ['--minutes', '1', '--sessions', '1000'] : ['--minutes', '3']),
  render: (s) => {
    const f = (s.figures ?? {}) as {
      passes?: number;
      passMs?: number;
      longestGuardWriteMs?: number;
      guardTransactions?: number;
      turns?: number;
      turnsDuringPasses?: number;
      writerFailures?: Record<string, number>;
      seahorseWrite?: { duringPasses: Latency; noPass: Latency };
      fileWrite?: { duringPasses: Latency; noPass: Latency };
    };
    const tables: Table[] = [
      {
        title: 'Gateway simulator writing while online prune --apply passes run (one soak)',
        headers: ['figure', 'value'],
        rows: [
          ['sessions in the home', typeof s.sessions === 'number' ? String(s.sessions) : '-'],
          ['passes / time in passes', `${f.passes ?? '-'} / ${fmtMs(f.passMs)}`],
          ['guard write transactions', String(f.guardTransactions ?? '-')],
          ['longest guard write transaction', fmtMs(f.longestGuardWriteMs)],
          ['simulator seahorse write during passes: p50 / p99 / max (n)', lat(f.seahorseWrite?.duringPasses)],
          ['simulator seahorse write, no pass running: p50 / p99 / max (n)', lat(f.seahorseWrite?.noPass)],
          ['simulator JSONL append during passes: p50 / p99 / max (n)', lat(f.fileWrite?.duringPasses)],
          ['simulator JSONL append, no pass running: p50 / p99 / max (n)', lat(f.fileWrite?.noPass)],
          ['simulator turns (during passes)', `${f.turns ?? '-'} (${f.turnsDuringPasses ?? '-'})`],
          ['simulator write failures', JSON.stringify(f.writerFailures ?? {})],
          ['soak check failures', typeof s.failures === 'number' ? String(s.failures) : '-'],
        ],
      },
    ];
    const longest = f.longestGuardWriteMs;
    const verdicts: Verdict[] = [
      {
        goal: 'longest guard write lock under 250 ms',
        status: longest === undefined ? 'not measured' : longest < 250 ? 'met' : 'missed',
        detail:
          `${fmtMs(longest)}; the simulator's seahorse writes, p99 / slowest: ${fmtMs(f.seahorseWrite?.duringPasses.p99Ms)}` +
          ` / ${fmtMs(f.seahorseWrite?.duringPasses.maxMs)} during passes vs ${fmtMs(f.seahorseWrite?.noPass.p99Ms)}` +
          ` / ${fmtMs(f.seahorseWrite?.noPass.maxMs)} with no pass running${f.writerFailures && Object.keys(f.writerFailures).length ? `; simulator write failures: ${JSON.stringify(f.writerFailures)}` : ''}`,
      },
    ];
    return { tables, verdicts };
  },
  missing: [
    {
      goal: 'longest guard write lock under 250 ms; simulator slowest write during vs without a pass',
      status: 'not measured',
      detail: 'bench/live-gateway-soak.ts not built',
    },
  ],
};

export const DAEMON: ExternalSpec = {
  id: 'daemon',
  item: 6,
  title: 'Daemon footprint',
  scripts: ['daemon-footprint.js', 'daemon-soak.js', 'daemon.js'],
  args: (ctx) => (ctx.quick ? ['--quick'] : []),
  missing: [
    {
      goal:
        'idle RSS under 60 MB; CPU time and bytes written per idle hour (0); /health ' +
        'and /metrics p99 under 10 ms at 50 req/s',
      status: 'not measured',
      detail: 'no daemon footprint script in bench/',
    },
  ],
};

export const CRASH: ExternalSpec = {
  id: 'crash-soak',
  item: 0,
  title: 'Crash soak (the safety harness of test/safety; not a cost figure)',
  scripts: ['crash-soak.js'],
  args: (ctx) => (ctx.quick ? ['--sessions', '500', '--kills', '10'] : []),
  missing: [{ goal: 'crash soak', status: 'not measured', detail: 'bench/crash-soak.ts not built' }],
};
