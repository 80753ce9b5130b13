import { existsSync } from 'node:fs';
import { GuardError, errorMessage } from '../errors.js';
import { systemClock } from '../io/clock.js';
import { statfsFreeSpace } from '../io/freespace.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { runPrunePass } from '../prune/pass.js';
import { summarizeReport, type PassSummary } from './pass-summary.js';

/**
 * One daemon prune pass, in a child process of the daemon (src/daemon/pass-runner.ts says
 * why). Input and report travel over the IPC channel.
 *
 * Stopping: applyPlan is synchronous, so neither a signal handler nor an IPC message can
 * run while it works. `shouldStop` therefore looks for a stop file the daemon creates on
 * SIGTERM (one stat per session, a microsecond or two): the transaction in progress
 * finishes, the remaining sessions are kept for the next pass. SIGTERM/SIGINT sent to the
 * child itself (a terminal's Ctrl-C reaches the whole process group) only set a flag: the
 * daemon decides when the pass ends, and a killed pass would not finish its transaction.
 */
export interface PassInput {
  home: PicoClawHome;
  configPath: string | undefined;
  stateDir: string;
  /** Created by the daemon when the pass must stop. */
  stopFile: string;
  /** Tests only (PICOGUARD_TEST_STEP_DELAY_MS): hold the pass this long after each session. */
  stepDelayMs: number;
  /** Why this pass must skip its age check (the wall clock jumped since the last pass), or null. */
  skipAgeCheck: string | null;
}

/** `report` is already cut to a bounded summary (src/daemon/pass-summary.ts says why). */
export type PassOutput = { ok: true; report: PassSummary } | { ok: false; message: string; exitCode: number | null };

let signalled = false;
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => (signalled = true));

const nap = new Int32Array(new SharedArrayBuffer(4));

async function pass(input: PassInput): Promise<PassOutput> {
  const shouldStop = () => signalled || existsSync(input.stopFile);
  const onProgress =
    input.stepDelayMs > 0
      ? () => {
          // A synchronous pause that still notices the stop file within 20 ms.
          for (let waited = 0; waited < input.stepDelayMs && !shouldStop(); waited += 20) Atomics.wait(nap, 0, 0, 20);
        }
      : undefined;
  try {
    const report = await runPrunePass({
      resolvedHome: input.home,
      configPath: input.configPath,
      apply: true,
      ifEnabled: true,
      clock: systemClock,
      freeSpace: statfsFreeSpace,
      stateDir: input.stateDir,
      shouldStop,
      onProgress,
      skipAgeCheck: input.skipAgeCheck ?? undefined,
      // Summarized in two reads of the plan, never all held at once.
      streamSessions: true,
    });
    return { ok: true, report: summarizeReport(report, input.stateDir) };
  } catch (err) {
    return { ok: false, message: errorMessage(err), exitCode: err instanceof GuardError ? err.exitCode : null };
  }
}

process.once('message', (input: PassInput) => {
  void pass(input).then((out) => {
    process.send!(out, () => process.disconnect());
  });
});
