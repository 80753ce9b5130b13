#!/usr/bin/env node
/**
 * Throughput and peak memory of `picoclaw-guard startup`, beside `wc -l` on the same file.
 * Not a test (vitest runs test/**\/*.test.ts only): run it by hand after `npm run build`:
 *
 *   node test/startup/bench-startup.mjs [--gb] [--dir /tmp/pcg-bench]
 *
 * It writes two 10 MB sample logs (dense: a restart every ~70 KB; typical: a restart a week
 * among ~2000 messages), repeats each to 100 MB (and 1 GB with --gb), then times each run
 * three times with /usr/bin/time -v and keeps the fastest. Figures go to stdout as a table.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(root, 'dist/src/cli.js');
const { renderGatewayLog } = await import(join(root, 'dist/dev/sample/gatewaylog.js'));
const args = process.argv.slice(2);
const dir = args.includes('--dir') ? args[args.indexOf('--dir') + 1] : '/tmp/pcg-bench';
const sizes = args.includes('--gb') ? [10, 100, 1000] : [10, 100];
mkdirSync(dir, { recursive: true });
if (!existsSync('/usr/bin/time')) throw new Error('needs /usr/bin/time (apt-get install -y time)');

const DAY = 86_400_000;
const base = Date.UTC(2026, 0, 1, 8);
const shapes = {
  dense: Array.from({ length: 150 }, (_, i) => ({
    startMs: base + i * DAY,
    sessions: 20 + i * 5,
    gapMs: 2000 + i * 400,
    end: i % 10 === 3 ? 'crashed' : i % 17 === 5 ? 'failed' : 'stopped',
    stopMs: base + i * DAY + DAY / 2,
    traffic: 118,
    reloads: i % 5 === 0 ? 1 : 0,
  })),
  typical: Array.from({ length: 12 }, (_, i) => ({
    startMs: base + i * 7 * DAY,
    sessions: 100 + i * 60,
    gapMs: 8000 + i * 4000,
    end: i % 4 === 3 ? 'crashed' : 'stopped',
    stopMs: base + i * 7 * DAY + 6 * DAY,
    traffic: 1650,
    reloads: 1,
  })),
};

/** Fastest of `runs` wall times (hrtime around the spawn), and the peak RSS of a /usr/bin/time -v run. */
function timed(cmd, argv, runs = 5) {
  let seconds = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed: ${r.stderr}`);
    seconds = Math.min(seconds, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const r = spawnSync('/usr/bin/time', ['-v', cmd, ...argv], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  const rssKiB = Number(r.stderr.match(/Maximum resident set size \(kbytes\): (\d+)/)[1]);
  return { seconds, rssKiB };
}

// The CLI's fixed cost (Node start, module loading) on an empty log, to report the scan rate net of it.
const empty = join(dir, 'empty.log');
writeFileSync(empty, '');
const fixed = timed(process.execPath, [cli, 'startup', '--log', empty, '--json']).seconds;

const rows = [];
for (const [shape, restarts] of Object.entries(shapes)) {
  const unit = join(dir, `${shape}-10.log`);
  writeFileSync(
    unit,
    renderGatewayLog({ restarts, level: 'info', events: true, seed: 9, home: '/home/pi/.picoclaw', utcOffsetMin: 120 }),
  );
  const unitBytes = statSync(unit).size;
  for (const mb of sizes) {
    const file = join(dir, `${shape}-${mb}.log`);
    if (mb !== 10) {
      rmSync(file, { force: true });
      const block = readFileSync(unit);
      const times = Math.round((mb * 1e6) / unitBytes);
      for (let i = 0; i < times; i++) appendFileSync(file, block);
    }
    const bytes = statSync(file).size;
    const wc = timed('wc', ['-l', file]);
    const guard = timed(process.execPath, [cli, 'startup', '--log', file, '--json']);
    rows.push({
      shape,
      MB: Math.round(bytes / 1e6),
      'wc -l s': wc.seconds.toFixed(3),
      'wc -l MB/s': Math.round(bytes / 1e6 / wc.seconds),
      'startup s': guard.seconds.toFixed(3),
      'startup MB/s': Math.round(bytes / 1e6 / guard.seconds),
      'net MB/s': Math.round(bytes / 1e6 / (guard.seconds - fixed)),
      'vs wc -l': (wc.seconds / guard.seconds).toFixed(3),
      'peak RSS MB': Math.round(guard.rssKiB / 1024),
    });
  }
}
console.log(`CLI fixed cost (empty log): ${fixed.toFixed(3)} s`);
console.table(rows);
