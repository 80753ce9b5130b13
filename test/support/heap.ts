import { getHeapSpaceStatistics } from 'node:v8';
import { releaseGarbage } from '../../src/io/heap.js';

/**
 * The heap's data (every space but code): V8 compiles and optimises on background threads, so
 * the code spaces change with the machine's load, not with what the code under test keeps.
 */
export function heapData(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (!s.space_name.includes('code')) n += s.space_used_size;
  return n;
}

/**
 * heapData after two full collections: V8 sweeps a collection's pages on background threads, and
 * pages not yet swept still count what died in them; a second collection finishes the first's
 * sweeping. Throws when no collection can be forced (the measurement would mean nothing).
 */
export function settledHeapData(): number {
  if (!releaseGarbage(0)) throw new Error('no full collection could be forced');
  releaseGarbage(0);
  return heapData();
}
