import { describe, expect, it } from 'vitest';
import { releaseGarbage } from '../../src/io/heap.js';

describe('releaseGarbage', () => {
  it('runs a full collection with gc exposed (as the launcher runs the CLI): what just died is gone at once', () => {
    let junk: { i: number; s: string }[] | null = Array.from({ length: 200_000 }, (_, i) => ({ i, s: `row ${i}` }));
    const held = process.memoryUsage().heapUsed;
    expect(junk.length).toBe(200_000);
    junk = null;
    expect(releaseGarbage(0)).toBe(true);
    // 200,000 small objects and strings are well over 8 MB; a young-generation pass alone would not free old space.
    expect(held - process.memoryUsage().heapUsed).toBeGreaterThan(8 * 1024 * 1024);
  });

  it('does nothing while the heap is under the threshold', () => {
    expect(releaseGarbage(Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});
