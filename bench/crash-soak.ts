import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCrashHarness } from '../test/support/crash.js';

/**
 * The long run of the crash harness (test/safety/crash.test.ts, "Crash at any moment"): a few-thousand-session
 * home, at least 100 SIGKILLs of a real `prune --apply`, each followed by the checks and a
 * recovery pass. Prints the figures; exits 1 if any check failed.
 *
 *   npm run build && node dist/bench/crash-soak.js [--sessions 3000] [--kills 120] [--seed 1] [--cutoff-days 80,115]
 *   [--keep-share 0.95] [--dir DIR] [--keep]
 */
const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '3000' },
    agents: { type: 'string', default: '4' },
    kills: { type: 'string', default: '120' },
    seed: { type: 'string', default: '1' },
    // The age cutoff falls 80 to 115 days back and max_sessions keeps 95% of the rest: about a
    // quarter of the sessions go, which keeps a kill plus its recovery pass near 15 s on 3000 sessions.
    'cutoff-days': { type: 'string', default: '80,115' },
    'keep-share': { type: 'string', default: '0.95' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'pcg-crash-soak-'));
const kills = Number(values.kills);
const t0 = performance.now();
const run = await runCrashHarness({
  dir,
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  agents: Number(values.agents),
  kills,
  cutoffDays: values['cutoff-days'].split(',').map(Number) as [number, number],
  keepShare: Number(values['keep-share']),
  // Setup plus about 8 s a kill on a small board-sized home, with room to spare.
  stableForMs: Math.max(30 * 60_000, kills * 30_000),
  keepFailed: true,
  onKill: (r) => {
    const what = r.kill.mode === 'delay' ? `after ${r.kill.ms} ms` : `at ${r.kill.mode} event ${r.kill.nth}`;
    process.stdout.write(
      `kill ${String(r.i).padStart(3)} ${what.padEnd(22)} ${r.killed ? 'killed' : 'completed'}` +
        ` at ${r.killWallMs} ms, phase ${r.phase}, ${r.deletedGroupsAtKill} victims gone; recovery exit ` +
        `${r.recoveryExit}, deleted ${r.recoveryDeleted}${r.failures.length ? `  FAILED: ${r.failures.join(' | ')}` : ''}` +
        `\n`,
    );
  },
});
const fx = run.fixture;
const totalMs = performance.now() - t0;
const killed = run.results.filter((r) => r.killed).length;
const summary = {
  home: {
    sessions: fx.plan.totals.sessions,
    groups: fx.plan.totals.groups,
    agents: fx.sample.agents.length,
    conversations: fx.pristineDump.conversations!.length,
    messages: fx.pristineDump.messages!.length,
  },
  policy: fx.policyArgs.join(' '),
  plan: {
    delete_sessions: fx.plan.totals.delete,
    keep_sessions: fx.plan.totals.keep,
    by_reason: fx.plan.totals.by_reason,
    delete_orphans: fx.deletedOrphans.length,
  },
  reference_pass: fx.reference,
  kills_attempted: run.results.length,
  killed_mid_pass: killed,
  completed_before_kill: run.results.length - killed,
  phases: run.phases,
  failures: run.failures.length,
  setup_s: Math.round(run.setupMs / 100) / 10,
  kills_s: Math.round(run.killsMs / 100) / 10,
  total_s: Math.round(totalMs / 100) / 10,
};
process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
for (const f of run.failures) process.stdout.write(`FAILURE: ${f}\n`);
if (!values.keep && run.failures.length === 0 && !values.dir) rmSync(dir, { recursive: true, force: true });
process.exitCode = run.failures.length === 0 ? 0 : 1;
