import { fixedClock } from '../src/io/clock.js';
import { downGateway } from './gateway-state.js';
import { runPrunePass } from '../src/prune/pass.js';

/**
 * Tests only (test/safety/interrupted-deletion.test.ts): one `prune --apply` pass, in this process,
 * that SIGKILLs itself at the Nth step of the deleter (before a session's seahorse rows, its .jsonl,
 * its .meta.json, or once it is deleted but its journal not yet cleared; before an orphan's or a shared
 * conversation's rows, or once they are gone). N = 0 runs the pass to its
 * end. A real kill at an exact step: the crash harness (test/support/crash.ts) kills at moments it
 * can only aim at from outside. The hook is a function given to the pass, never an environment
 * variable: nothing the shipped CLI reads can reach it.
 *
 *   node dist/dev/kill-at-step.js '{"home": "...", "stateDir": "...", "archive": "...", "nowMs": 0, "nth": 3}'
 *
 * Prints one JSON line at the end: the steps it went through and the report's exit code.
 */
interface Args {
  home: string;
  stateDir: string;
  archive: string | null;
  nowMs: number;
  nth: number;
  flags: Record<string, unknown>;
}

const a = JSON.parse(process.argv[2] ?? '{}') as Args;
const down = downGateway;
let steps = 0;
const report = await runPrunePass({
  home: a.home,
  env: { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: process.env.PICOCLAW_GUARD_CONFIG },
  apply: true,
  clock: fixedClock(a.nowMs),
  stateDir: a.stateDir,
  probe: down,
  flags: { ...a.flags, ...(a.archive ? { archive_dir: a.archive } : {}) },
  onStep: () => {
    if (++steps === a.nth) process.kill(process.pid, 'SIGKILL');
  },
  onConversationStep: () => {
    if (++steps === a.nth) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write(JSON.stringify({ steps, exit: report.exit_code, warnings: report.warnings }) + '\n');
