import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full garbage collection at the end of a phase (the store scan, the seahorse mapping, the plan),
 * when most of what the phase made has just died. V8 sizes the old generation from what survived
 * its last full collection, so without one the next phase grows the heap on top of the previous
 * phase's dead objects: on a 20,000-session home that garbage, not the live data, set the peak RSS.
 * A collection costs tens of milliseconds on a heap of that size and is skipped while the heap is
 * small (a few thousand sessions), where the slack stays small too. 12 MB, not 16: the compact
 * inventory of 20,000 sessions ends its seahorse mapping at about 15 MB, and left uncollected
 * there its garbage set the peak of `sessions` (2 MiB more).
 *
 * `gc` is exposed the way jest's leak detector does it (the flag, then a fresh context's `gc`):
 * the process needs no `--expose-gc` on its command line, and nothing else changes in the main
 * context.
 */
const WORTH_IT_BYTES = 12 * 1024 * 1024;

let collect: (() => void) | null | undefined;

function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return (collect = exposed);
  try {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  } catch {
    collect = null;
  }
  return collect;
}

/** Collect now if the heap holds enough to matter; returns whether it did. */
export function releaseGarbage(minHeapBytes = WORTH_IT_BYTES): boolean {
  if (getHeapStatistics().used_heap_size < minHeapBytes) return false;
  const gc = collector();
  if (!gc) return false;
  gc();
  return true;
}
