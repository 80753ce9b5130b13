import { parentPort, workerData } from 'node:worker_threads';
import { GuardError, errorMessage } from '../errors.js';
import { systemClock } from '../io/clock.js';
import { freeSpaceFromEnv } from '../io/freespace.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { runPrunePass } from '../prune/pass.js';
import type { PruneReport } from '../prune/report.js';

/**
 * One daemon prune pass, in a worker thread (src/daemon/pass-runner.ts says why).
 *
 * The stop flag is a SharedArrayBuffer the main thread sets on SIGTERM: applyPlan checks
 * it (shouldStop) between sessions, synchronously, while this thread is busy in SQLite
 * and unlink calls, so the transaction in progress finishes and the rest is kept for
 * the next pass.
 */
export interface WorkerInput {
  home: PicoClawHome;
  configPath: string | undefined;
  stateDir: string;
  stop: SharedArrayBuffer;
  /** Tests only (PICOGUARD_TEST_STEP_DELAY_MS): hold the pass this long after each session. */
  stepDelayMs: number;
}

export type WorkerOutput = { ok: true; report: PruneReport } | { ok: false; message: string; exitCode: number | null };

const input = workerData as WorkerInput;
const flag = new Int32Array(input.stop);
const shouldStop = () => Atomics.load(flag, 0) !== 0;
// Atomics.wait returns at once when the main thread sets the flag and notifies.
const onProgress = input.stepDelayMs > 0 ? () => void Atomics.wait(flag, 0, 0, input.stepDelayMs) : undefined;

async function main(): Promise<WorkerOutput> {
  try {
    const report = await runPrunePass({
      resolvedHome: input.home,
      configPath: input.configPath,
      apply: true,
      ifEnabled: true,
      clock: systemClock,
      freeSpace: freeSpaceFromEnv(),
      stateDir: input.stateDir,
      shouldStop,
      onProgress,
    });
    return { ok: true, report };
  } catch (err) {
    return { ok: false, message: errorMessage(err), exitCode: err instanceof GuardError ? err.exitCode : null };
  }
}

parentPort!.postMessage(await main());
