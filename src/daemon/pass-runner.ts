import { fork, type ChildProcess } from 'node:child_process';
import { unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PASS_MEMORY_MB } from '../prune/memory-budget.js';
import { fileURLToPath } from 'node:url';
import type { PicoClawHome } from '../picoclaw/home.js';
import type { PassInput, PassOutput } from './prune-child.js';

/**
 * Runs the daemon's prune passes, each in a short-lived child process.
 *
 * Why not in the daemon itself: applyPlan is synchronous (SQLite transactions are short
 * and synchronous by design: better-sqlite3's API is synchronous, see its README), so on the main thread a pass would
 * block
 * the event loop for its whole length: /health and /metrics would stop answering
 * (scrapes time out), and a SIGTERM handler could not run until the pass ended.
 * Why not a worker thread: the memory a pass allocates stays in the worker's malloc arena
 * after the thread ends, in the daemon for good (MALLOC_ARENA_MAX did not help; BENCHMARKS.md,
 * "Figures that code comments carried"). A child process gives all of it back when it exits;
 * it costs one Node start-up per pass (every check_interval_minutes), never one per request.
 *
 * The unit sets KillMode=mixed, so systemd's SIGTERM reaches the daemon only; the daemon
 * then creates the stop file the pass checks between sessions.
 */
export interface PassRequest {
  home: PicoClawHome;
  configPath: string | undefined;
  stateDir: string;
  stepDelayMs: number;
  /** Why this pass must skip its age check (the wall clock jumped since the last pass), or null. */
  skipAgeCheck: string | null;
}

/**
 * The Node flags the tool runs with, each unless the flags or NODE_OPTIONS already set that option:
 * - `gc` exposed, for the full collections at the end of a phase (src/io/heap.ts);
 * - a 2 MiB young generation. V8 grows its semi-spaces to 16 MiB each when most new objects
 *   survive, as an inventory's records do: on a large home a good part of a pass's peak, for no
 *   gain in time (BENCHMARKS.md, "Figures that code comments carried");
 * - one V8 platform thread, not four. The threads run V8's background work (the optimizing
 *   compiler, parts of the collector); each optimizing compile holds its own scratch memory while
 *   it runs, so several at once raised a command's peak, at random, for no gain in time
 *   (BENCHMARKS.md section 10h).
 * The units set the same through NODE_OPTIONS, and bin/picoclaw-guard on its command line
 * (bench/memory.ts measures them).
 */
export const NODE_FLAGS: readonly string[] = ['--expose-gc', '--max-semi-space-size=2', '--v8-pool-size=1'];

/** Node flags of the pass child: the daemon's own, plus each of NODE_FLAGS that neither they nor NODE_OPTIONS set. */
export function passExecArgv(execArgv: readonly string[], env: NodeJS.ProcessEnv): string[] {
  // An option's name as Node and V8 read it: `_` and `-` are the same; a value follows `=` or a space.
  const name = (a: string) => a.split('=')[0]!.replaceAll('_', '-');
  const given = new Set([...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map(name));
  return [...execArgv, ...NODE_FLAGS.filter((f) => !given.has(name(f)))];
}

/**
 * glibc's malloc arenas for the pass child, unless the daemon's environment sets its own (the units
 * do): glibc gives each thread that allocates its own arena, up to eight per core, and Node's
 * platform and libuv threads each keep one partly filled. One arena: a lower peak for a large pass,
 * at the same time (BENCHMARKS.md section 10e). Ignored by other C libraries (musl).
 */
const MALLOC_ARENAS = '1';

/** The pass child's environment: the daemon's, with its memory budget and malloc arenas unless set. */
export function passEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...env,
    // src/io/sqlite.ts switches SQLite URIs on through this variable (read by better-sqlite3 at load).
    SQLITE_USE_URI: '1',
    PICOGUARD_PASS_MEMORY_MB: env.PICOGUARD_PASS_MEMORY_MB ?? String(DEFAULT_PASS_MEMORY_MB),
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? MALLOC_ARENAS,
  };
}

const CHILD = fileURLToPath(new URL('./prune-child.js', import.meta.url));
let seq = 0;

export class PassRunner {
  private child: ChildProcess | null = null;
  private stopFile: string | null = null;
  private stopRequested = false;

  get running(): boolean {
    return this.child !== null;
  }

  run(req: PassRequest): Promise<PassOutput> {
    if (this.child)
      return Promise.resolve({ ok: false, message: 'a pass is already running in this daemon', exitCode: null });
    if (this.stopRequested) return Promise.resolve({ ok: false, message: 'the daemon is stopping', exitCode: null });
    const stopFile = join(tmpdir(), `picoclaw-guard-stop-${process.pid}-${++seq}`);
    const input: PassInput = { ...req, stopFile };
    const child = fork(CHILD, [], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: passEnv(process.env),
      execArgv: passExecArgv(process.execArgv, process.env),
      serialization: 'advanced',
    });
    this.child = child;
    this.stopFile = stopFile;
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      stderr = (stderr + d).slice(-2000);
    });
    return new Promise<PassOutput>((resolve) => {
      let result: PassOutput | null = null;
      child.once('message', (m: PassOutput) => {
        result = m;
      });
      child.once('error', (err) => {
        result ??= { ok: false, message: `the prune process failed: ${err.message}`, exitCode: null };
      });
      child.send(input);
      // 'close' comes after the exit and after the IPC channel and stderr are drained.
      child.once('close', (code, signal) => {
        this.child = null;
        this.stopFile = null;
        try {
          unlinkSync(stopFile);
        } catch {
          // never created
        }
        const why = signal ? `signal ${signal}` : `code ${code}`;
        resolve(
          result ?? {
            ok: false,
            message: `the prune process ended (${why}) without a report${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`,
            exitCode: null,
          },
        );
      });
    });
  }

  /** Ask the running pass (and any later one) to stop between sessions. */
  requestStop(): void {
    this.stopRequested = true;
    if (this.stopFile) {
      try {
        writeFileSync(this.stopFile, '');
      } catch {
        // tmpdir not writable: the pass runs to its end (or is killed after the grace period)
      }
    }
  }

  /**
   * Last resort when a pass does not stop within the grace period (a long VACUUM while
   * the gateway is down): kill it. SQLite rolls back the open transaction and every
   * delete step is crash-safe by design (test/safety/crash.test.ts).
   */
  async terminate(): Promise<void> {
    const c = this.child;
    if (!c) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  }
}
