import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SampleRestart } from '../dev/sample/gateway-events.js';
import { renderGatewayLog } from '../dev/sample/gatewaylog.js';
import {
  CLI,
  cliEnv,
  fmtBytes,
  fmtMs,
  fmtRatio,
  fmtRss,
  fmtSpread,
  median,
  removeDir,
  runOk,
  tempDir,
  type BenchContext,
  type BenchResult,
  type Table,
  type Verdict,
} from './lib.js';

/**
 * Item 7: the startup report (`startup --json --log FILE`) over gateway.log files of
 * 10 MB, 100 MB and 1 GB, beside `wc -l` on the same file in the same rounds, with the
 * command's peak RSS.
 *
 * The logs are PicoClaw's JSON file format at info level with gateway.* runtime events
 * (dev/sample/gatewaylog.ts): one ~10 MB block of 85 restarts rendered once, inside one
 * month (days 1-27), then written again month after month with only the year and month
 * of its timestamps changed, so a bigger file is a longer history that ends this month,
 * not the same restarts repeated.
 */

const DAY = 86_400_000;

/** One month of restarts (Jan 2025, days 1-27): bootstrap lines, traffic, a crash now and then. */
function monthBlock(): string {
  const restarts: SampleRestart[] = [];
  const n = 85;
  const start = Date.UTC(2025, 0, 1, 0, 30);
  const step = (26 * DAY) / n;
  for (let r = 0; r < n; r++) {
    const s = Math.round(start + r * step);
    restarts.push({
      startMs: s,
      sessions: 300 + (r % 40) * 15,
      gapMs: 2000 + (r % 7) * 900,
      end: r % 11 === 5 ? 'crashed' : 'stopped',
      stopMs: s + step - 600_000,
      traffic: 200,
    });
  }
  return renderGatewayLog({
    restarts,
    level: 'info',
    events: true,
    seed: 11,
    home: '/home/pi/.picoclaw',
    utcOffsetMin: 60,
  });
}

/** Write `months` copies of the block, each shifted to its own month, ending this month. */
function writeLog(path: string, block: string, targetBytes: number): { bytes: number; months: number } {
  const blockBytes = Buffer.byteLength(block);
  const months = Math.max(1, Math.round(targetBytes / blockBytes));
  const now = new Date();
  const endIndex = now.getUTCFullYear() * 12 + now.getUTCMonth();
  const fd = openSync(path, 'w');
  try {
    for (let k = 0; k < months; k++) {
      const m = endIndex - (months - 1) + k;
      const ym = `${String(Math.floor(m / 12)).padStart(4, '0')}-${String((m % 12) + 1).padStart(2, '0')}-`;
      writeSync(fd, block.replace(/"2025-01-(?=\d\dT)/g, `"${ym}`));
    }
  } finally {
    closeSync(fd);
  }
  return { bytes: statSync(path).size, months };
}

interface SizeFig {
  label: string;
  bytes: number;
  lines: number;
  restarts: number | null;
  guard: { wallMs: number; rssKb: number | null }[];
  wc: { wallMs: number; rssKb: number | null }[];
}

export async function run(ctx: BenchContext): Promise<BenchResult> {
  const t0 = performance.now();
  const dir = tempDir('logs');
  const state = join(dir, 'state');
  // No --home: HOME points at an empty folder, so no ~/.picoclaw of this machine is read.
  const env = { ...cliEnv(state), HOME: dir };
  const targets: [string, number][] = ctx.quick
    ? [
        ['10 MB', 10e6],
        ['100 MB', 100e6],
      ]
    : [
        ['10 MB', 10e6],
        ['100 MB', 100e6],
        ['1 GB', 1e9],
      ];
  ctx.log('logs: rendering the month block');
  const block = monthBlock();
  const figs: SizeFig[] = [];
  for (const [label, bytes] of targets) {
    const path = join(dir, 'gateway.log');
    const w = writeLog(path, block, bytes);
    const fig: SizeFig = { label, bytes: w.bytes, lines: 0, restarts: null, guard: [], wc: [] };
    ctx.log(`  ${label}: ${fmtBytes(w.bytes)} (${w.months} months of restarts)`);
    const runs = bytes >= 1e9 ? Math.min(ctx.runs, 3) : ctx.runs;
    // Warm the page cache once, as both readers will see it.
    await runOk('wc', ['-l', path], { rss: false, capture: true });
    for (let i = 0; i < runs; i++) {
      const g = await runOk(process.execPath, [CLI, 'startup', '--json', '--log', path, '--state-dir', state], {
        env,
        capture: true,
      });
      const rep = JSON.parse(g.stdout) as { lines?: { total?: number }; restarts_found?: number };
      fig.restarts = rep.restarts_found ?? null;
      fig.guard.push({ wallMs: g.wallMs, rssKb: g.rssKb });
      const c = await runOk('wc', ['-l', path], { capture: true });
      fig.lines = Number(c.stdout.trim().split(/\s+/)[0]);
      fig.wc.push({ wallMs: c.wallMs, rssKb: c.rssKb });
      if (rep.lines?.total !== undefined && Math.abs(rep.lines.total - fig.lines) > 1)
        throw new Error(`startup read ${rep.lines.total} lines, wc -l says ${fig.lines}`);
      ctx.log(`    run ${i + 1}: startup ${fmtMs(g.wallMs)} (${fmtRss(g.rssKb)}), wc -l ${fmtMs(c.wallMs)}`);
    }
    figs.push(fig);
  }
  const mbps = (bytes: number, ms: number) => `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;
  const table: Table = {
    title: 'startup --json --log FILE beside wc -l (warm page cache; median of runs, min–max)',
    headers: [
      'log',
      'lines',
      'restarts found',
      'startup',
      'throughput',
      'wc -l',
      'wc -l throughput',
      'startup / wc -l',
      'startup peak RSS',
    ],
    right: [1, 2, 4, 6, 7, 8],
    rows: figs.map((f) => {
      const g = median(f.guard.map((x) => x.wallMs));
      const w = median(f.wc.map((x) => x.wallMs));
      return [
        `${f.label} (${fmtBytes(f.bytes)})`,
        f.lines.toLocaleString('en-US'),
        f.restarts === null ? '-' : f.restarts.toLocaleString('en-US'),
        fmtSpread(f.guard.map((x) => x.wallMs)),
        mbps(f.bytes, g),
        fmtSpread(f.wc.map((x) => x.wallMs)),
        mbps(f.bytes, w),
        fmtRatio(g / w),
        fmtRss(Math.max(...f.guard.map((x) => x.rssKb ?? 0))),
      ];
    }),
    notes: [
      'PicoClaw JSON log lines at info level with gateway.* events; 85 restarts ' +
        'a month, each with its seahorse bootstrap lines and 200 routed messages.',
    ],
  };
  const verdicts: Verdict[] = [];
  const gb = figs.find((f) => f.bytes >= 0.9e9);
  if (gb) {
    const peak = Math.max(...gb.guard.map((x) => x.rssKb ?? 0));
    verdicts.push({
      goal: 'peak memory under 100 MB at 1 GB',
      status: peak < 100 * 1024 ? 'met' : 'missed',
      detail:
        `${fmtRss(peak)}; ${mbps(gb.bytes, median(gb.guard.map((x) => x.wallMs)))}` +
        `, ${fmtRatio(median(gb.guard.map((x) => x.wallMs)) / median(gb.wc.map((x) => x.wallMs)))}` +
        ` the time of wc -l`,
    });
  } else {
    const top = figs[figs.length - 1]!;
    verdicts.push({
      goal: 'peak memory under 100 MB at 1 GB',
      status: 'not measured',
      detail: `--quick stops at ${top.label}: ${fmtRss(Math.max(...top.guard.map((x) => x.rssKb ?? 0)))} there`,
    });
  }
  removeDir(dir, ctx);
  return {
    id: 'logs',
    item: 7,
    title: 'Log analysis',
    command: 'npm run bench -- logs',
    tables: [table],
    verdicts,
    notes: [],
    durationMs: performance.now() - t0,
    data: figs,
  };
}
