import { getHeapStatistics } from 'node:v8';

/**
 * A full garbage collection at the end of a phase (the store scan, the seahorse mapping, the plan),
 * when most of what the phase made has just died. V8 sizes the old generation from what survived
 * its last full collection, so without one the next phase grows the heap on top of the previous
 * phase's dead objects: on a 20,000-session home that garbage, not the live data, set the peak RSS.
 * A collection costs tens of milliseconds on a heap of that size and is skipped while the heap is
 * small (a few thousand sessions), where the slack stays small too. 12 MB, not 16: with 16 the
 * garbage of a large home's seahorse mapping was left uncollected and set the peak of `sessions`
 * (the figures: BENCHMARKS.md, 'Figures that code comments carried').
 *
 * `gc` is there when Node runs with `--expose-gc`: the launcher (bin/picoclaw-guard), the units'
 * NODE_OPTIONS and the daemon's pass child (NODE_FLAGS in src/daemon/pass-runner.ts) all give it.
 * Without it (node dist/src/cli.js run by hand) nothing is collected early: the command is the same,
 * only its peak is higher.
 */
const WORTH_IT_BYTES = 12 * 1024 * 1024;

function collector(): (() => void) | null {
  const exposed = (globalThis as { gc?: () => void }).gc;
  return typeof exposed === 'function' ? exposed : null;
}

/** Collect now if the heap holds enough to matter; returns whether it did. */
export function releaseGarbage(minHeapBytes = WORTH_IT_BYTES): boolean {
  if (getHeapStatistics().used_heap_size < minHeapBytes) return false;
  const gc = collector();
  if (!gc) return false;
  gc();
  return true;
}
