import { join } from 'node:path';
import {
  buildHome,
  CLI,
  cliEnv,
  dropCaches,
  fmtBytes,
  fmtInt,
  fmtMs,
  fmtRatio,
  fmtRss,
  fmtSpread,
  freeBytes,
  median,
  removeDir,
  runOk,
  tempDir,
  tmpBase,
  type BenchContext,
  type BenchResult,
  type BuiltHome,
  type Table,
  type Verdict,
} from './lib.js';

/**
 * Item 1: planning scales with sessions, not bytes. `prune` (dry-run) and `sessions`,
 * both with --json, on homes of 200, 2,000 and 20,000 sessions, and on two homes of
 * 2,000 sessions that differ only in the size of their tool results (about 20 MB and
 * about 2 GB of JSONL). Each figure is the median of several runs, interleaved home by
 * home so that drift in the machine hits every home alike; the ratio is taken from
 * medians of the same rounds.
 *
 * Every home is built the same way: seahorse on, 8 messages per session on average, and
 * at most 1 KiB of each message's text stored in seahorse.db (`seahorseContentBytes`;
 * without the cap the 2 GB home would need a ~6 GB database, see BENCHMARKS.md).
 */

type Cmd = 'prune' | 'sessions';
const CMDS: Cmd[] = ['prune', 'sessions'];

interface Sample {
  wallMs: number;
  rssKb: number | null;
}

interface HomeFigures {
  label: string;
  built: BuiltHome;
  warm: Record<Cmd, Sample[]>;
  cold: Record<Cmd, Sample[]>;
}

const SHAPE = { agents: 3, messagesPerSession: 8, seahorse: true, seahorseContentBytes: 1024, spanDays: 120 } as const;

function cmdArgs(cmd: Cmd, home: string): string[] {
  return cmd === 'prune' ? [CLI, 'prune', '--home', home, '--json'] : [CLI, 'sessions', '--home', home, '--json'];
}

async function measure(
  ctx: BenchContext,
  h: HomeFigures,
  cmd: Cmd,
  env: NodeJS.ProcessEnv,
  cold: boolean,
): Promise<Sample> {
  if (cold) dropCaches();
  const r = await runOk(process.execPath, cmdArgs(cmd, h.built.home), { env, capture: true });
  // Check that the command saw the whole home (a fast wrong answer is no figure).
  const j = JSON.parse(r.stdout) as { mode?: string; totals?: { sessions?: number }; sessions?: unknown[] };
  const seen =
    cmd === 'prune' ? j.totals?.sessions : Array.isArray(j.sessions) ? j.sessions.length : j.totals?.sessions;
  if (cmd === 'prune' && j.mode !== 'dry-run') throw new Error(`prune on ${h.label} was not a dry-run`);
  if (seen !== undefined && seen !== h.built.sessions)
    throw new Error(`${cmd} on ${h.label} saw ${seen} sessions, the home has ${h.built.sessions}`);
  const s = { wallMs: r.wallMs, rssKb: r.rssKb };
  (cold ? h.cold : h.warm)[cmd].push(s);
  ctx.log(
    `    ${h.label.padEnd(22)} ${cmd.padEnd(8)} ${cold ? 'cold' : 'warm'} ${fmtMs(r.wallMs).padStart(9)}` +
      `  ${fmtRss(r.rssKb)}`,
  );
  return s;
}

/** Warm-up once each, then `runs` rounds over every home and command. */
async function rounds(
  ctx: BenchContext,
  homes: HomeFigures[],
  env: NodeJS.ProcessEnv,
  runs: number,
  cold: boolean,
): Promise<void> {
  if (!cold)
    for (const h of homes)
      for (const c of CMDS) await runOk(process.execPath, cmdArgs(c, h.built.home), { env, rss: false });
  for (let i = 0; i < runs; i++) for (const h of homes) for (const c of CMDS) await measure(ctx, h, c, env, cold);
}

const med = (xs: Sample[]) => median(xs.map((x) => x.wallMs));
const peak = (xs: Sample[]) => (xs.some((x) => x.rssKb !== null) ? Math.max(...xs.map((x) => x.rssKb ?? 0)) : null);
const walls = (xs: Sample[]) => xs.map((x) => x.wallMs);

function fresh(label: string, built: BuiltHome): HomeFigures {
  return { label, built, warm: { prune: [], sessions: [] }, cold: { prune: [], sessions: [] } };
}

export async function run(ctx: BenchContext): Promise<BenchResult> {
  const t0 = performance.now();
  const state = tempDir('planning-state');
  const env = cliEnv(state);
  const counts = ctx.quick ? [200, 2000] : [200, 2000, 20_000];
  const smallTool = 4500;
  const bigTool = ctx.quick ? 45_000 : 450_000;
  const notes: string[] = [];

  // Phase A: session count.
  ctx.log('planning: homes by session count');
  const scale: HomeFigures[] = [];
  for (const n of counts)
    scale.push(
      fresh(
        `${fmtInt(n)} sessions`,
        await buildHome(ctx, `plan-${n}`, { ...SHAPE, sessions: n, toolResultBytes: smallTool }),
      ),
    );
  await rounds(ctx, scale, env, ctx.runs, false);
  const base = scale.find((h) => h.built.sessions === 2000)!;
  for (const h of scale) if (h !== base) removeDir(join(h.built.home, '..'), ctx);

  // Phase B: same sessions, 100x the bytes.
  const need = 2000 * bigTool * 1.4 + 2 * 1024 ** 3;
  let big: HomeFigures | null = null;
  /** Cold start of the process alone (node, commander, no home read): `--help` after a cache drop. */
  const coldHelp: number[] = [];
  const small = fresh(`2,000 / ${fmtBytes(base.built.jsonlBytes)}`, base.built);
  if (freeBytes(tmpBase()) < need) {
    notes.push(
      `The big-JSONL home was not built: ${fmtBytes(freeBytes(tmpBase()))} free under ` +
        `${tmpBase()}, it needs about ${fmtBytes(need)}.`,
    );
  } else {
    ctx.log('planning: same sessions, 100x the bytes');
    const b = await buildHome(ctx, 'plan-bytes', { ...SHAPE, sessions: 2000, toolResultBytes: bigTool });
    big = fresh(`2,000 / ${fmtBytes(b.jsonlBytes)}`, b);
    await rounds(ctx, [small, big], env, ctx.runs, false);
    if (ctx.cold) {
      if (dropCaches()) {
        ctx.log('planning: cold page cache (dropped before each run)');
        const n = Math.max(3, Math.min(ctx.runs, 5));
        await rounds(ctx, [small, big], env, n, true);
        for (let i = 0; i < n; i++) {
          dropCaches();
          coldHelp.push((await runOk(process.execPath, [CLI, '--help'], { env, rss: false })).wallMs);
        }
      } else
        notes.push('Cold-cache runs were asked for but /proc/sys/vm/drop_caches is not writable (not root): skipped.');
    }
  }

  const tables: Table[] = [];
  /** What each 1,000 sessions above the smallest home add (start-up cost taken out). */
  const marginal = (h: HomeFigures, c: Cmd) =>
    ((med(h.warm[c]) - med(scale[0]!.warm[c])) / (h.built.sessions - scale[0]!.built.sessions)) * 1000;
  tables.push({
    title: 'Planning by session count (warm page cache; median of runs, min–max in brackets)',
    headers: [
      'home',
      'sessions',
      'JSONL',
      'seahorse.db',
      'prune dry-run',
      'sessions',
      'each 1k sessions more: prune / sessions',
      'peak RSS prune / sessions',
    ],
    right: [1, 2, 3, 6],
    rows: scale.map((h) => [
      h.label,
      fmtInt(h.built.sessions),
      fmtBytes(h.built.jsonlBytes),
      fmtBytes(h.built.seahorseBytes),
      fmtSpread(walls(h.warm.prune)),
      fmtSpread(walls(h.warm.sessions)),
      h === scale[0] ? '-' : `${fmtMs(marginal(h, 'prune'))} / ${fmtMs(marginal(h, 'sessions'))}`,
      `${fmtRss(peak(h.warm.prune))} / ${fmtRss(peak(h.warm.sessions))}`,
    ]),
    notes: [
      `${ctx.runs} runs each, after one warm-up run; 3 agents, ~8 messages per session, ` +
        `seahorse on (text capped at 1 KiB per message).`,
    ],
  });
  const verdicts: Verdict[] = [];
  if (big) {
    const rows: string[][] = [];
    const add = (mode: 'warm' | 'cold') => {
      for (const h of [small, big]) {
        rows.push([
          h.label,
          mode,
          fmtBytes(h.built.jsonlBytes),
          fmtSpread(walls(h[mode].prune)),
          fmtSpread(walls(h[mode].sessions)),
          `${fmtRss(peak(h[mode].prune))} / ${fmtRss(peak(h[mode].sessions))}`,
        ]);
      }
      rows.push([
        `ratio big / small`,
        mode,
        fmtRatio(big.built.jsonlBytes / small.built.jsonlBytes),
        fmtRatio(med(big[mode].prune) / med(small[mode].prune)),
        fmtRatio(med(big[mode].sessions) / med(small[mode].sessions)),
        '',
      ]);
    };
    add('warm');
    if (big.cold.prune.length > 0) {
      add('cold');
      rows.push(['picoclaw-guard --help (no home read)', 'cold', '-', fmtSpread(coldHelp), '', '']);
    }
    tables.push({
      title: 'Same 2,000 sessions, 100x the JSONL bytes (measured in the same rounds)',
      headers: ['home', 'cache', 'JSONL', 'prune dry-run', 'sessions', 'peak RSS prune / sessions'],
      right: [2],
      rows,
      notes:
        big.cold.prune.length > 0
          ? [
              'cold: `sync; echo 3 > /proc/sys/vm/drop_caches` before each run (page ' +
                'cache, dentries and inodes all dropped: Node, its modules and better-sqlite3 ' +
                'are read from disk again too; the --help row is that fixed part).',
            ]
          : [],
    });
    const worst = Math.max(med(big.warm.prune), med(big.warm.sessions));
    const coldWorst = big.cold.prune.length > 0 ? Math.max(med(big.cold.prune), med(big.cold.sessions)) : null;
    verdicts.push({
      goal: `2,000 sessions / ${fmtBytes(big.built.jsonlBytes)} of JSONL: prune dry-run and sessions under 1 s`,
      status: worst < 1000 ? 'met' : 'missed',
      detail:
        `prune ${fmtMs(med(big.warm.prune))}, sessions ${fmtMs(med(big.warm.sessions))}` +
        ` (warm)${coldWorst !== null ? `; cold cache: prune ${fmtMs(med(big.cold.prune))}, sessions ${fmtMs(med(big.cold.sessions))}` + `${coldWorst >= 1000 ? ' (over 1 s cold)' : ''}` : ''}`,
    });
    const rp = med(big.warm.prune) / med(small.warm.prune);
    const rs = med(big.warm.sessions) / med(small.warm.sessions);
    verdicts.push({
      goal: `the ${fmtBytes(big.built.jsonlBytes)} home within 1.5x of the ${fmtBytes(small.built.jsonlBytes)} one`,
      status: Math.max(rp, rs) <= 1.5 ? 'met' : 'missed',
      detail: `prune ${fmtRatio(rp)}, sessions ${fmtRatio(rs)} (warm)${big.cold.prune.length > 0 ? `; cold: prune ${fmtRatio(med(big.cold.prune) / med(small.cold.prune))}` + `, sessions ${fmtRatio(med(big.cold.sessions) / med(small.cold.sessions))}` : ''}`,
    });
    removeDir(join(big.built.home, '..'), ctx);
  } else {
    verdicts.push({
      goal: '2,000 sessions / 2 GB under 1 s; within 1.5x of 20 MB',
      status: 'not measured',
      detail: notes[notes.length - 1] ?? '',
    });
  }
  const top = scale[scale.length - 1]!;
  if (top.built.sessions >= 20_000) {
    const worst = Math.max(med(top.warm.prune), med(top.warm.sessions));
    verdicts.push({
      goal: '20,000 sessions under 10 s',
      status: worst < 10_000 ? 'met' : 'missed',
      detail: `prune ${fmtMs(med(top.warm.prune))}, sessions ${fmtMs(med(top.warm.sessions))}`,
    });
  } else {
    verdicts.push({
      goal: '20,000 sessions under 10 s',
      status: 'not measured',
      detail: '--quick stops at 2,000 sessions',
    });
  }
  if (ctx.quick) notes.push('--quick: 200 and 2,000 sessions only, and a 10x (not 100x) bytes comparison.');
  removeDir(join(base.built.home, '..'), ctx);
  removeDir(state, ctx);
  return {
    id: 'planning',
    item: 1,
    title: 'Planning scales with sessions, not bytes',
    command: 'npm run bench -- planning' + (ctx.cold ? ' --cold' : ''),
    tables,
    verdicts,
    notes,
    durationMs: performance.now() - t0,
    data: { scale: scale.map(strip), small: strip(small), big: big ? strip(big) : null, coldHelp },
  };
}

function strip(h: HomeFigures) {
  return { label: h.label, built: h.built, warm: h.warm, cold: h.cold };
}
