import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLiveGateway, stopChildren } from '../test/support/gateway-sim.js';

/**
 * The long run of the live-gateway harness (test/safety/live-gateway.test.ts, "A live gateway"): the gateway
 * simulator (test/support/gateway-sim.ts, its own process) writes turns while online
 * `prune --apply` passes run one after another on the same home. Prints the figures;
 * exits 1 if any check failed.
 *
 *   npm run build && node dist/bench/live-gateway-soak.js [--minutes 5] [--sessions 4000] [--seed 1] [--dir DIR]
 *   [--keep] [--shrink]
 *
 * --shrink: seahorse.db converted to auto_vacuum INCREMENTAL first (what the pre-start pass's VACUUM does with
 * shrink_online), so that every online pass also gives its free pages back (src/prune/apply/shrink.ts).
 */
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    sessions: { type: 'string', default: '4000' },
    agents: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
    'turn-gap-ms': { type: 'string', default: '120' },
    'old-share': { type: 'string', default: '0.1' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    shrink: { type: 'boolean', default: false },
  },
});

const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'pcg-live-soak-'));
process.on('SIGINT', () => {
  stopChildren();
  process.exit(130);
});
const run = await runLiveGateway({
  dir,
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  agents: Number(values.agents),
  durationMs: Number(values.minutes) * 60_000,
  idleMs: 10_000,
  maxAgeDays: [110, 2],
  passGapMs: [200, 1500],
  turnGapMs: Number(values['turn-gap-ms']),
  oldShare: Number(values['old-share']),
  shrink: values.shrink,
  onPass: (p) => {
    const r = p.report;
    process.stdout.write(
      `pass ${String(p.i).padStart(3)} max_age_days ${String(p.maxAgeDays).padStart(3)}` +
        `: ${Math.round(p.end - p.start)} ms, exit ${r?.exit_code ?? p.code}, gateway ` +
        `${r?.gateway?.state}, deleted ${p.deleted.length}, kept as changed ${p.changed.length}` +
        `, ${r?.database.transactions ?? 0} txns, longest ${r?.database.longest_write_ms ?? 0}` +
        ` ms` +
        (r?.database.shrink?.ran
          ? `, shrink ${r.database.shrink.returned_bytes} bytes in ${r.database.shrink.steps} steps` +
            ` (longest ${r.database.shrink.longest_step_ms} ms)`
          : '') +
        `\n`,
    );
  },
});
// The pass windows and outcomes, beside the simulator's log (kept with --dir or --keep).
writeFileSync(
  join(dir, 'passes.json'),
  JSON.stringify(
    run.passes.map((p) => ({
      i: p.i,
      max_age_days: p.maxAgeDays,
      start: p.start,
      end: p.end,
      exit: p.report?.exit_code ?? p.code,
      deleted: p.deleted.length,
      changed: p.changed,
      longest_write_ms: p.report?.database.longest_write_ms ?? null,
      transactions: p.report?.database.transactions ?? null,
    })),
    null,
    1,
  ),
);
process.stdout.write(
  JSON.stringify({ sessions: Number(values.sessions), figures: run.figures, failures: run.failures.length }, null, 2) +
    '\n',
);
for (const f of run.failures) process.stdout.write(`FAILURE: ${f}\n`);
if (!values.keep && !values.dir) rmSync(dir, { recursive: true, force: true });
process.exitCode = run.failures.length === 0 ? 0 : 1;
