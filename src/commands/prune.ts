/**
 * `picoclaw-guard prune`: a dry-run on this thread; an apply in a worker thread that signals can stop
 * (./prune-apply.ts). The text report is in ./prune-text.ts, the run in ./prune-pass.ts. This module imports
 * neither: a pre-start pass answered from the quiet record (./prune-quiet.ts) loads no report code.
 */

export async function run(opts: Record<string, unknown>): Promise<number> {
  if (opts.apply === true) {
    // Before every gateway start: a pass with nothing to do ends here, having written nothing in the home
    // (src/prune/pass-noop.ts), without the worker thread an apply that deletes needs.
    if (opts.preStart === true) {
      // A home as the last quiet pass left it: answered from that pass's record, before the heavy modules load.
      if (opts.json !== true) {
        const { quietPreStart } = await import('./prune-quiet.js');
        const quick = await quietPreStart(opts);
        if (quick !== null) return quick;
      }
      const { executeIfNothingToDo, mainIo } = await import('./prune-pass.js');
      const code = await executeIfNothingToDo(opts, mainIo(opts));
      if (code !== null) return code;
    }
    const { runApply } = await import('./prune-apply.js');
    return runApply(opts);
  }
  const { execute, mainIo } = await import('./prune-pass.js');
  return execute(opts, mainIo(opts));
}
