import { Worker } from 'node:worker_threads';
import type { PicoClawHome } from '../picoclaw/home.js';
import type { WorkerInput, WorkerOutput } from './prune-worker.js';

/**
 * Runs prune passes for the daemon in a worker thread.
 *
 * Why a thread: applyPlan is synchronous (SQLite transactions are short and synchronous
 * by design, ops-facts.md §2), so on the main thread a pass would block the event loop
 * for its whole length: /health and /metrics would stop answering (scrapes time out) and
 * a SIGTERM handler could not run until the pass ended, so `shouldStop` could never turn
 * true in time. In a thread the main loop keeps serving, and the stop flag lives in
 * shared memory that the pass reads between sessions.
 *
 * The thread exists only while a pass runs (a few MB for a few seconds an hour).
 */
export interface PassRequest {
  home: PicoClawHome;
  configPath: string | undefined;
  stateDir: string;
  stepDelayMs: number;
}

export class PassRunner {
  private readonly stopBuf = new SharedArrayBuffer(4);
  private readonly flag = new Int32Array(this.stopBuf);
  private worker: Worker | null = null;

  get running(): boolean {
    return this.worker !== null;
  }

  get stopping(): boolean {
    return Atomics.load(this.flag, 0) !== 0;
  }

  constructor() {
    // src/io/sqlite.ts switches on SQLite URIs through the environment, which better-sqlite3
    // reads with getenv() once per process. A worker's process.env is its own copy (no
    // setenv), so the main thread sets it for the real environment before any worker loads it.
    process.env.SQLITE_USE_URI = '1';
  }

  run(req: PassRequest): Promise<WorkerOutput> {
    if (this.worker) return Promise.resolve({ ok: false, message: 'a pass is already running in this daemon', exitCode: null });
    if (this.stopping) return Promise.resolve({ ok: false, message: 'the daemon is stopping', exitCode: null });
    const data: WorkerInput = { ...req, stop: this.stopBuf };
    const worker = new Worker(new URL('./prune-worker.js', import.meta.url), { workerData: data, stdout: false, stderr: false });
    this.worker = worker;
    return new Promise<WorkerOutput>((resolve) => {
      let result: WorkerOutput | null = null;
      worker.once('message', (m: WorkerOutput) => {
        result = m;
        // The pass has returned: its database is closed and its lock released. Nothing
        // the thread might still hold (a keep-alive socket) may keep it around.
        void worker.terminate();
      });
      worker.once('error', (err) => {
        result ??= { ok: false, message: `the prune thread failed: ${err.message}`, exitCode: null };
      });
      worker.once('exit', (code) => {
        this.worker = null;
        resolve(result ?? { ok: false, message: `the prune thread ended (code ${code}) without a report`, exitCode: null });
      });
    });
  }

  /** Ask the running pass (and any later one) to stop between sessions. */
  requestStop(): void {
    Atomics.store(this.flag, 0, 1);
    Atomics.notify(this.flag, 0);
  }

  /**
   * Last resort when a pass does not stop within the grace period (a long VACUUM while
   * the gateway is down): end the thread. SQLite rolls back whatever transaction was
   * open; every delete step is crash-safe by design (test/safety/crash.test.ts).
   */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }
}
