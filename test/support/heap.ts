import { getHeapSpaceStatistics } from 'node:v8';

/**
 * The heap's data (every space but code): V8 compiles and optimises on background threads, so
 * the code spaces change with the machine's load, not with what the code under test keeps.
 */
export function heapData(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (!s.space_name.includes('code')) n += s.space_used_size;
  return n;
}
