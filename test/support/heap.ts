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

/**
 * Heap data an inventory of `sessions` sessions holds, per session: each build measured between
 * two settled heaps, three times. One measurement now and then is off by a few hundred KB either
 * way: code V8 optimises on a background thread meanwhile brings its data along, or V8 lets go of
 * old bytecode of its own at that moment (seen on Node 24: 83 bytes a session in one measurement of
 * a build that holds 217 in the others). So a bound from above (`'least'`, what a check that a
 * build holds little asks) takes the least of the three, and a bound from below (`'most'`: a
 * control that the measure sees what a build does hold) the most; one outlier moves neither. The
 * caller builds once before, so that compiling the code is not counted.
 */
export function heldPerSession(
  build: () => { sessions: unknown[] },
  sessions: number,
  take: 'least' | 'most' = 'least',
): number {
  const held = () => {
    const before = settledHeapData();
    const inv = build();
    const bytes = settledHeapData() - before;
    if (inv.sessions.length !== sessions) throw new Error(`${inv.sessions.length} sessions, not ${sessions}`);
    return bytes;
  };
  const runs = [held(), held(), held()];
  return (take === 'least' ? Math.min(...runs) : Math.max(...runs)) / sessions;
}

/**
 * Heap data that `release` frees from what `make` built, per session: measured between two settled
 * heaps around the release alone (no build between them, whose code V8 may still be optimising),
 * the median of three (one of them, often the second, may count a few hundred KB that V8 let go
 * of its own at that moment).
 */
export function freedPerSession<T>(make: () => T, release: (x: T) => void, sessions: number): number {
  // Each thing made stays held until all three are measured: only what the release lets go counts.
  const kept: T[] = [];
  const freed = () => {
    const x = make();
    kept.push(x);
    const before = settledHeapData();
    release(x);
    return before - settledHeapData();
  };
  const runs = [freed(), freed(), freed()].sort((a, b) => a - b);
  kept.length = 0;
  return runs[1]! / sessions;
}
