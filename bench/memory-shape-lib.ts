import { Rng } from '../dev/sample/random.js';
import type { SampleOptions } from '../dev/sample/builder.js';
import { fmtInt, fmtMs, median, type Table } from './lib.js';

/**
 * The pure half of bench/memory-shape.ts: what a run recorded (one sample per CLI process),
 * the tables and the verdicts drawn from it, and the random shape of a held-out home. Kept
 * apart from the driver so that a test can check the arithmetic on figures it chose.
 */

export type Build = 'old' | 'new';

/** A home the round runs on: one of the size steps, a sparse-id copy of one, or a held-out home. */
export interface HomeInfo {
  id: string;
  kind: 'size' | 'sparse' | 'held';
  sessions: number;
  messages: number;
  /** The highest seahorse message id. */
  maxId: number;
  /** Bytes on disk (JSONL, metadata, seahorse.db, logs). */
  diskBytes: number;
}

export interface Sample {
  build: Build;
  home: string;
  cmd: string;
  /** Peak RSS, kB (GNU time %M, or VmHWM polled). */
  rssKb: number | null;
  wallMs: number;
  /** 1-minute load average just after the run. */
  load: number;
  /** The pass stopped between two sessions (exit 7). */
  stopped?: boolean;
}

export interface ShapeRun {
  version: 1;
  started: string;
  durationMs: number;
  machine: string;
  measuredBy: string;
  clis: Record<Build, string>;
  runs: number;
  homes: HomeInfo[];
  samples: Sample[];
  heldOut?: { seed: number; shape: HeldShape };
}

/** Commands whose figures enter the verdicts; the daemon's own peak is shown beside them. */
export const COMMANDS = [
  'sessions',
  'sessions --json',
  'prune',
  'prune --json',
  'prune --wide',
  'prune --apply',
  "daemon's pass child",
] as const;
export const DAEMON_OWN = 'daemon during the pass (its own peak)';

export const GOALS = { growthMiB: 15, capMiB: 90, timeSessions: 20_000 } as const;

const MiB = 1024;

export function parseRun(text: string): ShapeRun {
  const line = text.trim().split('\n').pop() ?? '';
  const r = JSON.parse(line) as Partial<ShapeRun>;
  if (r.version !== 1 || !Array.isArray(r.samples) || !Array.isArray(r.homes) || !r.clis)
    throw new Error('not a memory-shape run (version 1 JSON line expected)');
  for (const s of r.samples)
    if ((s.build !== 'old' && s.build !== 'new') || typeof s.cmd !== 'string' || typeof s.wallMs !== 'number')
      throw new Error(`bad sample: ${JSON.stringify(s)}`);
  return r as ShapeRun;
}

/** Runs done in parts (e.g. the small sizes, then the large ones) as one: homes by id, all samples. */
export function mergeRuns(runs: ShapeRun[]): ShapeRun {
  if (!runs.length) throw new Error('no runs to merge');
  const first = runs[0]!;
  for (const r of runs)
    if (r.clis.old !== first.clis.old || r.clis.new !== first.clis.new)
      throw new Error('runs of different builds cannot be merged');
  const homes = new Map<string, HomeInfo>();
  for (const r of runs) for (const h of r.homes) homes.set(h.id, h);
  const held = runs.find((r) => r.heldOut)?.heldOut;
  return {
    ...first,
    durationMs: runs.reduce((a, r) => a + r.durationMs, 0),
    runs: Math.max(...runs.map((r) => r.runs)),
    homes: [...homes.values()],
    samples: runs.flatMap((r) => r.samples),
    ...(held ? { heldOut: held } : {}),
  };
}

const of = (run: ShapeRun, b: Build, home: string, cmd: string) =>
  run.samples.filter((s) => s.build === b && s.home === home && s.cmd === cmd);

/** Peak RSS (kB) over a cell's runs, or null when none was measured. */
export function peakKb(run: ShapeRun, b: Build, home: string, cmd: string): number | null {
  const xs = of(run, b, home, cmd)
    .map((s) => s.rssKb)
    .filter((x): x is number => x !== null);
  return xs.length ? Math.max(...xs) : null;
}

export function wallOf(run: ShapeRun, b: Build, home: string, cmd: string): number[] {
  return of(run, b, home, cmd).map((s) => s.wallMs);
}

const mib = (kb: number | null) => (kb === null ? '-' : `${(kb / MiB).toFixed(1)}`);
const signed = (kb: number | null) => (kb === null ? '-' : `${kb >= 0 ? '+' : ''}${(kb / MiB).toFixed(1)}`);

export function cmdsOf(run: ShapeRun): string[] {
  const seen = new Set(run.samples.map((s) => s.cmd));
  return [...COMMANDS, DAEMON_OWN].filter((c) => seen.has(c));
}

const sizeHomes = (run: ShapeRun) => run.homes.filter((h) => h.kind === 'size').sort((a, b) => a.sessions - b.sessions);
const heldHomes = (run: ShapeRun) => run.homes.filter((h) => h.kind === 'held').sort((a, b) => a.sessions - b.sessions);

/** Growth (kB) of a command's peak from the first home to the last. */
export function growthKb(run: ShapeRun, b: Build, cmd: string, small: string, large: string): number | null {
  const a = peakKb(run, b, small, cmd);
  const z = peakKb(run, b, large, cmd);
  return a === null || z === null ? null : z - a;
}

export function homeLabel(h: HomeInfo): string {
  const base = `${fmtInt(h.sessions)}`;
  if (h.kind === 'sparse') return `${base} sparse (max id ${fmtInt(h.maxId)})`;
  if (h.kind === 'held') return `${base} held-out`;
  return base;
}

export interface GoalVerdict {
  goal: string;
  status: 'met' | 'met within noise' | 'missed' | 'not measured';
  detail: string;
}

/** The time cell: median of each build's runs, the ratio new/old, and the noise both builds' runs show. */
export function timeRatio(
  run: ShapeRun,
  home: string,
  cmd: string,
): { old: number; new: number; ratio: number; noise: number | null; load: number } | null {
  const o = wallOf(run, 'old', home, cmd);
  const n = wallOf(run, 'new', home, cmd);
  if (!o.length || !n.length) return null;
  // Noise: the largest relative spread (max-min over the median) of either build's own runs;
  // unknown with one run each.
  const spread = (xs: number[]) => (xs.length > 1 ? (Math.max(...xs) - Math.min(...xs)) / median(xs) : null);
  const sp = [spread(o), spread(n)].filter((x): x is number => x !== null);
  const loads = run.samples.filter((s) => s.home === home && s.cmd === cmd).map((s) => s.load);
  return {
    old: median(o),
    new: median(n),
    ratio: median(n) / median(o),
    noise: sp.length ? Math.max(...sp) : null,
    load: median(loads),
  };
}

export function verdicts(run: ShapeRun): GoalVerdict[] {
  const out: GoalVerdict[] = [];
  const sizes = sizeHomes(run);
  const cmds = cmdsOf(run).filter((c) => c !== DAEMON_OWN);
  const worst = (xs: [string, number | null][]) =>
    xs.filter((x): x is [string, number] => x[1] !== null).sort((a, b) => b[1] - a[1])[0];
  const growthGoal = (label: string, small: HomeInfo | undefined, large: HomeInfo | undefined) => {
    const goal = `${label}: every command's peak RSS differs by at most ${GOALS.growthMiB} MiB`;
    if (!small || !large || small === large) {
      out.push({ goal, status: 'not measured', detail: 'needs two sizes' });
      return;
    }
    const g = (b: Build) => cmds.map((c): [string, number | null] => [c, growthKb(run, b, c, small.id, large.id)]);
    const wn = worst(g('new'));
    const wo = worst(g('old'));
    const missing = g('new')
      .filter((x) => x[1] === null)
      .map((x) => x[0]);
    const range = `${homeLabel(small)} → ${homeLabel(large)} sessions`;
    if (!wn) {
      out.push({ goal, status: 'not measured', detail: range });
      return;
    }
    out.push({
      goal,
      status: wn[1] <= GOALS.growthMiB * MiB ? 'met' : 'missed',
      detail:
        `${range}: largest growth ${signed(wn[1])} MiB (${wn[0]})` +
        (wo ? `; today's build ${signed(wo[1])} MiB (${wo[0]})` : '') +
        (missing.length ? `; not measured: ${missing.join(', ')}` : ''),
    });
  };
  const sizeGoals = () => {
    growthGoal(
      `Growth ${sizes[0] ? fmtInt(sizes[0].sessions) : '?'} → ${sizes.length ? fmtInt(sizes[sizes.length - 1]!.sessions) : '?'}`,
      sizes[0],
      sizes[sizes.length - 1],
    );

    const capHomes = [
      ...(sizes.length ? [sizes[sizes.length - 1]!] : []),
      ...run.homes.filter((h) => h.kind === 'sparse'),
    ];
    const capGoal = `Every command under ${GOALS.capMiB} MiB at the largest size and on sparse ids`;
    const cells = (b: Build) =>
      capHomes.flatMap((h) =>
        cmds.map((c): [string, number | null] => [`${c} @ ${homeLabel(h)}`, peakKb(run, b, h.id, c)]),
      );
    const cn = worst(cells('new'));
    const co = worst(cells('old'));
    if (!cn) out.push({ goal: capGoal, status: 'not measured', detail: '' });
    else
      out.push({
        goal: capGoal,
        status: cn[1] < GOALS.capMiB * MiB ? 'met' : 'missed',
        detail:
          `highest ${mib(cn[1])} MiB (${cn[0]})` +
          (co ? `; today's build ${mib(co[1])} MiB (${co[0]})` : '') +
          (run.homes.some((h) => h.kind === 'sparse') ? '' : '; no sparse-id home in this run'),
      });

    const t = sizes.find((h) => h.sessions === GOALS.timeSessions);
    const timeGoal = `Time at ${fmtInt(GOALS.timeSessions)} sessions no worse than today (new/old, same rounds)`;
    if (!t) out.push({ goal: timeGoal, status: 'not measured', detail: `no ${GOALS.timeSessions}-session home` });
    else {
      const rs = cmds.flatMap((c) => {
        const r = timeRatio(run, t.id, c);
        return r ? [{ c, ...r }] : [];
      });
      if (!rs.length) out.push({ goal: timeGoal, status: 'not measured', detail: '' });
      else {
        const w = rs.sort((a, b) => b.ratio - a.ratio)[0]!;
        const noise = Math.max(...rs.map((r) => r.noise ?? 0));
        const known = rs.every((r) => r.noise !== null);
        const status: GoalVerdict['status'] =
          w.ratio <= 1 ? 'met' : known && w.ratio <= 1 + noise ? 'met within noise' : 'missed';
        out.push({
          goal: timeGoal,
          status,
          detail:
            `highest ratio ${w.ratio.toFixed(2)} (${w.c}: ${fmtMs(w.old)} → ${fmtMs(w.new)}, load ${w.load.toFixed(2)})` +
            `; noise (largest spread of one build's own runs) ${known ? `${(noise * 100).toFixed(0)}%` : 'unknown (one run each)'}`,
        });
      }
    }
  };
  const held = heldHomes(run);
  // A held-out round alone has no size steps: only its own verdict.
  if (sizes.length || !held.length) sizeGoals();
  if (held.length) growthGoal(`Held-out homes (seed ${run.heldOut?.seed ?? '?'})`, held[0], held[held.length - 1]);
  return out;
}

/** The tables for BENCHMARKS.md: peak RSS per home, growth, time at the time-goal size. */
export function tables(run: ShapeRun): Table[] {
  const cmds = cmdsOf(run);
  const homes = run.homes.filter((h) => run.samples.some((s) => s.home === h.id));
  const out: Table[] = [];
  const headers = ['command', ...homes.flatMap((h) => [`${homeLabel(h)} today`, `${homeLabel(h)} new`])];
  out.push({
    title: `Peak RSS, MiB (max of ${run.runs} run${run.runs > 1 ? 's' : ''}; today = ${run.clis.old}, new = ${run.clis.new})`,
    headers,
    right: headers.map((_, i) => i).slice(1),
    rows: cmds.map((c) => [
      c,
      ...homes.flatMap((h) =>
        (['old', 'new'] as const).map((b) => {
          const p = peakKb(run, b, h.id, c);
          const stopped = run.samples.some((s) => s.build === b && s.home === h.id && s.cmd === c && s.stopped);
          return `${mib(p)}${stopped ? ' (exit 7)' : ''}`;
        }),
      ),
    ]),
  });
  const pairs: [string, HomeInfo, HomeInfo][] = [];
  const sizes = sizeHomes(run).filter((h) => homes.includes(h));
  if (sizes.length > 1) pairs.push(['sizes', sizes[0]!, sizes[sizes.length - 1]!]);
  const held = heldHomes(run).filter((h) => homes.includes(h));
  if (held.length > 1) pairs.push(['held-out', held[0]!, held[held.length - 1]!]);
  for (const sp of run.homes.filter((h) => h.kind === 'sparse' && homes.includes(h))) {
    const dense = sizes.find((h) => h.sessions === sp.sessions);
    if (dense) pairs.push(['sparse ids', dense, sp]);
  }
  if (pairs.length) {
    const gh = ['command', ...pairs.flatMap(([, a, z]) => [`${homeLabel(a)} → ${homeLabel(z)} today`, 'new'])];
    out.push({
      title: 'Growth of peak RSS, MiB',
      headers: gh,
      right: gh.map((_, i) => i).slice(1),
      rows: cmds.map((c) => [
        c,
        ...pairs.flatMap(([, a, z]) => (['old', 'new'] as const).map((b) => signed(growthKb(run, b, c, a.id, z.id)))),
      ]),
    });
  }
  const t = sizes.find((h) => h.sessions === GOALS.timeSessions);
  if (t) {
    const th = ['command', 'today (median)', 'new (median)', 'new/old', 'runs', 'spread', 'load avg'];
    out.push({
      title: `Wall time at ${homeLabel(t)} sessions`,
      headers: th,
      right: [1, 2, 3, 4, 5, 6],
      rows: cmds.flatMap((c) => {
        const r = timeRatio(run, t.id, c);
        if (!r) return [];
        return [
          [
            c,
            fmtMs(r.old),
            fmtMs(r.new),
            r.ratio.toFixed(2),
            String(wallOf(run, 'new', t.id, c).length),
            r.noise === null ? '-' : `${(r.noise * 100).toFixed(0)}%`,
            r.load.toFixed(2),
          ],
        ];
      }),
    });
  }
  const hh = ['home', 'sessions', 'messages', 'max message id', 'on disk'];
  out.push({
    title: 'Homes',
    headers: hh,
    right: [1, 2, 3, 4],
    rows: run.homes.map((h) => [
      h.id,
      fmtInt(h.sessions),
      fmtInt(h.messages),
      fmtInt(h.maxId),
      `${(h.diskBytes / 1024 / 1024).toFixed(0)} MiB`,
    ]),
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Held-out homes: a shape drawn from a seed, so the memory shape is checked on homes nobody tuned.

export interface HeldShape {
  build: Omit<SampleOptions, 'dir' | 'sessions'>;
  /** Mean gap between live message ids (1: dense, as built). */
  idGap: number;
}

export function heldOutShape(seed: number): HeldShape {
  const rng = new Rng(seed ^ 0x5bd1e995);
  const cron = 0.05 + rng.next() * 0.65;
  const alias = rng.next() * 0.2;
  const undated = rng.next() * 0.1;
  const pre2024 = rng.next() * 0.05;
  return {
    build: {
      seed: rng.int(1, 2 ** 31 - 1),
      agents: rng.int(1, 4),
      messagesPerSession: rng.int(1, 40),
      spanDays: rng.int(20, 400),
      seahorse: true,
      seahorseContentBytes: rng.int(128, 2048),
      toolResultBytes: rng.int(200, 3000),
      restarts: rng.int(2, 60),
      kindShares: { cron, alias, undated, pre2024 },
      peerDigits: rng.int(5, 15),
    },
    idGap: rng.chance(0.5) ? 1 : rng.int(2, 200),
  };
}
