import { discoverHome } from '../src/picoclaw/home.js';
import { restoreArchives } from '../src/archive/restore.js';
import { RESTORE_STEPS, type RestoreStep } from '../src/archive/restore-write.js';

/**
 * A restore that kills itself with SIGKILL at one step of its writing, for the crash test
 * (test/safety/restore-crash.test.ts): the real code, a real kill, at an exact point (after the
 * step's system calls, before the next), which a signal sent from outside could not hit.
 *   node dist/dev/restore-kill.js STEP[#N] PATH HOME STATE_DIR [--beside]
 * STEP is one of RESTORE_STEPS; #N kills at its Nth occurrence (a folder restores several sessions).
 * Exits 0 when the step never came (the restore ran through).
 */
const [stepArg, path, home, stateDir, ...rest] = process.argv.slice(2);
const [step, nth] = (stepArg ?? '').split('#') as [RestoreStep, string | undefined];
if (!RESTORE_STEPS.includes(step) || !path || !home || !stateDir) {
  process.stderr.write(
    `usage: restore-kill STEP[#N] PATH HOME STATE_DIR [--beside] (STEP: ${RESTORE_STEPS.join(', ')})\n`,
  );
  process.exit(2);
}
let seen = 0;
await restoreArchives(path, {
  home: discoverHome({ home }),
  list: false,
  beside: rest.includes('--beside'),
  stateDir,
  holdDays: 7,
  nowMs: Date.now(),
  onStep: (s) => {
    if (s === step && ++seen === Number(nth ?? 1)) process.kill(process.pid, 'SIGKILL');
  },
});
