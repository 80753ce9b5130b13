/**
 * `picoclaw-guard prune`: a dry-run on this thread; an apply in a worker thread that signals can stop
 * (./prune-apply.ts). The text report is in ./prune-text.ts, the run in ./prune-pass.ts.
 */
export { renderPruneText, writePruneText, reasonText, type TextOptions } from './prune-text.js';

export async function run(opts: Record<string, unknown>): Promise<number> {
  if (opts.apply === true) {
    const { runApply } = await import('./prune-apply.js');
    return runApply(opts);
  }
  const { execute, mainIo } = await import('./prune-pass.js');
  return execute(opts, mainIo(opts));
}
