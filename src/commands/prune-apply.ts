import { writeSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { errnoCode, GuardError, type ExitCodeValue } from '../errors.js';
import { outputWidth } from './format.js';

/**
 * `prune --apply`, stoppable by SIGINT and SIGTERM between two sessions.
 *
 * The deletions are synchronous (better-sqlite3), so a signal handler on the thread that deletes would run only
 * once every session is gone. The pass therefore runs in a worker thread, and this (main) thread, idle, takes the
 * signals: the first sets a flag in shared memory that the worker reads between two sessions (an Atomics.load),
 * so the seahorse transaction and the session in progress finish, the rest is kept (reason `interrupted`), the
 * history line is written and the command exits with ExitCode.INTERRUPTED. A worker costs a second V8 isolate
 * (BENCHMARKS.md, "Surface: the cost of a stoppable prune --apply"); a child process (the daemon's way) would
 * cost a whole Node.js. The worker writes to the
 * process's standard output and error by descriptor, synchronously, as the main thread would.
 *
 * The prompt before deleting (standard input and output both terminals, no --yes) is asked here, where standard
 * input is: the worker sends the summary and waits for the answer.
 */
interface WorkerInput {
  pruneApply: true;
  opts: Record<string, unknown>;
  /** [0]: 0 running, else the index + 1 of the signal in SIGNALS that asked it to stop. */
  stop: Int32Array;
  width: number;
  stdoutTTY: boolean;
  stderrTTY: boolean;
  ask: boolean;
}

type FromWorker =
  | { t: 'confirm'; text: string; question: string; toStderr: boolean }
  | { t: 'done'; code: number }
  | { t: 'guard'; message: string; hint?: string; path?: string; exitCode: ExitCodeValue }
  | { t: 'crash'; text: string };

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** The main thread's side: the worker, the signals, the prompt. */
export async function runApply(opts: Record<string, unknown>): Promise<number> {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const input: WorkerInput = {
    pruneApply: true,
    opts,
    stop,
    width: outputWidth(opts),
    stdoutTTY: !!process.stdout.isTTY,
    stderrTTY: !!process.stderr.isTTY,
    // Units, scripts and CI have no terminal: nothing is asked there.
    ask: !!process.stdin.isTTY && !!process.stdout.isTTY && opts.yes !== true,
  };
  let answer: ((yes: boolean) => void) | null = null;
  const onSignal = (sig: (typeof SIGNALS)[number]) => {
    if (Atomics.load(stop, 0) === 0) {
      Atomics.store(stop, 0, SIGNALS.indexOf(sig) + 1);
      if (answer) answer(false);
      else process.stderr.write(`\n${sig}: stopping after the session in progress (nothing is cut in half)\n`);
    }
  };
  for (const sig of SIGNALS) process.on(sig, onSignal);
  // src/io/sqlite.ts sets this before loading better-sqlite3, whose native code reads the process's environment:
  // a worker's process.env is its own copy, so it is set here, in the real environment, before the worker starts.
  process.env.SQLITE_USE_URI = '1';
  const worker = new Worker(new URL(import.meta.url), { workerData: input });
  try {
    return await new Promise<number>((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        if (m.t === 'confirm') {
          void prompt(m.text, m.question, m.toStderr, (f) => (answer = f)).then((yes) => {
            answer = null;
            worker.postMessage({ yes });
          });
        } else if (m.t === 'done') resolve(m.code);
        else if (m.t === 'guard')
          reject(new GuardError(m.message, { exitCode: m.exitCode, hint: m.hint, path: m.path }));
        else reject(new Error(m.text));
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the prune worker stopped (exit code ${code})`)));
    });
  } finally {
    for (const sig of SIGNALS) process.off(sig, onSignal);
    await worker.terminate();
  }
}

/** The summary, then `Delete N sessions (X) from these folders? [y/N] `; only y or yes goes on. */
function prompt(
  text: string,
  question: string,
  toStderr: boolean,
  onAnswerHook: (f: (yes: boolean) => void) => void,
): Promise<boolean> {
  const out = toStderr ? process.stderr : process.stdout;
  out.write(text);
  out.write(question);
  return new Promise((resolve) => {
    let buf = '';
    const done = (yes: boolean) => {
      process.stdin.off('data', onData);
      process.stdin.off('end', onEnd);
      process.stdin.pause();
      if (!yes) out.write('\nnothing deleted\n');
      resolve(yes);
    };
    const onData = (d: Buffer) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) done(/^\s*y(es)?\s*$/i.test(buf.slice(0, nl)));
    };
    const onEnd = () => done(false);
    onAnswerHook(done);
    process.stdin.on('data', onData);
    process.stdin.once('end', onEnd);
    process.stdin.resume();
  });
}

/** Everything of `s` written to descriptor fd, waiting while a non-blocking pipe is full. */
function writeAllSync(fd: number, s: string, broken: { pipe: boolean }): void {
  if (broken.pipe) return;
  let buf = Buffer.from(s, 'utf8');
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EAGAIN') Atomics.wait(nap, 0, 0, 5);
      else if (code === 'EPIPE') {
        // A reader that closed the pipe (`| head`) is not an error; the pass goes on.
        broken.pipe = true;
        return;
      } else throw err;
    }
  }
}

/** The worker's side: the pass and its report, as the command runs it on the main thread. */
async function workerMain(input: WorkerInput): Promise<void> {
  const port = parentPort!;
  const send = (m: FromWorker) => port.postMessage(m);
  const { execute } = await import('./prune-pass.js');
  const outBroken = { pipe: false };
  const errBroken = { pipe: false };
  try {
    const code = await execute(input.opts, {
      out: (c) => writeAllSync(1, c, outBroken),
      err: (c) => writeAllSync(2, c, errBroken),
      width: input.width,
      stdoutTTY: input.stdoutTTY,
      stderrTTY: input.stderrTTY,
      signalled: () => {
        const i = Atomics.load(input.stop, 0);
        return i === 0 ? null : SIGNALS[i - 1]!;
      },
      confirm: input.ask
        ? (text, question) =>
            new Promise<boolean>((resolve) => {
              port.once('message', (m: { yes: boolean }) => resolve(m.yes));
              send({ t: 'confirm', text, question, toStderr: input.opts.json === true });
            })
        : undefined,
    });
    send({ t: 'done', code });
  } catch (err) {
    if (err instanceof GuardError)
      send({ t: 'guard', message: err.message, hint: err.hint, path: err.path, exitCode: err.exitCode });
    else send({ t: 'crash', text: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
}

if (!isMainThread && (workerData as WorkerInput | null)?.pruneApply === true)
  void workerMain(workerData as WorkerInput);
