import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildHome,
  CLI,
  cliEnv,
  fmtMs,
  fmtRatio,
  fmtRss,
  median,
  quantile,
  removeDir,
  ROOT,
  runOk,
  tempDir,
  type BenchContext,
  type BenchResult,
  type Verdict,
} from './lib.js';

/**
 * Item 5: what a command costs before it does anything. `--help`, `health --json` and
 * `sessions --json` on a small home (the builder's default: 60 sessions, seahorse on),
 * beside bare `node -e 0` in the same rounds. Three more rows split the gap between bare
 * Node and `--help`: an empty ES module (Node's ESM loader), importing commander alone,
 * and `--version` (commander parses, no help text).
 *
 * Timed runs are plain spawns (no GNU time wrapper, whose own fork would blur a 50 ms
 * figure); one extra run of each under GNU time gives its peak RSS.
 */

interface Row {
  label: string;
  args: string[];
  okCodes: number[];
  cwd?: string;
  wall: number[];
  rssKb: number | null;
}

export async function run(ctx: BenchContext): Promise<BenchResult> {
  const t0 = performance.now();
  const dir = tempDir('startup');
  const state = join(dir, 'state');
  const env = cliEnv(state);
  const home = await buildHome(ctx, 'startup-home', {}, join(dir, 'home'));
  const empty = join(dir, 'empty.mjs');
  writeFileSync(empty, '');
  const node = process.execPath;
  const rows: Row[] = [
    { label: 'node -e 0', args: ['-e', '0'], okCodes: [0], wall: [], rssKb: null },
    { label: 'node empty.mjs (ESM loader)', args: [empty], okCodes: [0], wall: [], rssKb: null },
    {
      label: 'node -e "import \'commander\'"',
      args: ['--input-type=module', '-e', "import 'commander'"],
      okCodes: [0],
      cwd: ROOT,
      wall: [],
      rssKb: null,
    },
    { label: 'picoclaw-guard --version', args: [CLI, '--version'], okCodes: [0], wall: [], rssKb: null },
    { label: 'picoclaw-guard --help', args: [CLI, '--help'], okCodes: [0], wall: [], rssKb: null },
    {
      label: 'picoclaw-guard health --json',
      args: [CLI, 'health', '--json', '--home', home.home, '--state-dir', state],
      okCodes: [0, 10, 11],
      wall: [],
      rssKb: null,
    },
    {
      label: `picoclaw-guard sessions --json (${home.sessions} sessions)`,
      args: [CLI, 'sessions', '--json', '--home', home.home],
      okCodes: [0],
      wall: [],
      rssKb: null,
    },
  ];
  const runs = ctx.quick ? 7 : Math.max(15, ctx.runs * 4);
  ctx.log(`startup: ${runs} interleaved rounds (+2 warm-up)`);
  for (let i = 0; i < runs + 2; i++) {
    for (const r of rows) {
      const x = await runOk(node, r.args, { env, cwd: r.cwd, rss: false, okCodes: r.okCodes });
      if (i >= 2) r.wall.push(x.wallMs);
    }
  }
  for (const r of rows) r.rssKb = (await runOk(node, r.args, { env, cwd: r.cwd, okCodes: r.okCodes })).rssKb;
  const bare = median(rows[0]!.wall);
  const table = {
    title: `Start-up cost (${runs} interleaved rounds; median, p90)`,
    headers: ['command', 'median', 'p90', 'min', 'vs node -e 0', 'peak RSS'],
    right: [1, 2, 3, 4, 5],
    rows: rows.map((r) => [
      r.label,
      fmtMs(median(r.wall)),
      fmtMs(quantile(r.wall, 0.9)),
      fmtMs(Math.min(...r.wall)),
      fmtRatio(median(r.wall) / bare),
      fmtRss(r.rssKb),
    ]),
    notes: [
      'Wall time from spawn to exit, measured by the parent; the three rows under ' +
        'node -e 0 split the gap between bare Node and --help.',
    ],
  };
  const help = rows.find((r) => r.label.endsWith('--help'))!;
  const health = rows.find((r) => r.label.includes('health'))!;
  const ratio = median(help.wall) / bare;
  const verdicts: Verdict[] = [
    {
      goal: '--help within 1.5x of bare node -e 0',
      status: ratio <= 1.5 ? 'met' : 'missed',
      detail: `${fmtRatio(ratio)}: ${fmtMs(median(help.wall))} vs ${fmtMs(bare)}`,
    },
    {
      goal: 'health --json under 0.5 s',
      status: median(health.wall) < 500 ? 'met' : 'missed',
      detail: `${fmtMs(median(health.wall))} (p90 ${fmtMs(quantile(health.wall, 0.9))})`,
    },
  ];
  removeDir(dir, ctx);
  return {
    id: 'startup',
    item: 5,
    title: 'Start-up cost',
    command: 'npm run bench -- startup',
    tables: [table],
    verdicts,
    notes: [],
    durationMs: performance.now() - t0,
    data: rows.map((r) => ({ label: r.label, wall: r.wall, rssKb: r.rssKb })),
  };
}
