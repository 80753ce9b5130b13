import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdNumbers } from '../../src/io/id-numbers.js';
import { settledHeapData as settled } from '../support/heap.js';

describe('IdNumbers', () => {
  it('answers as the Map it was made from', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.integer({ min: -5, max: 2 ** 40 }), fc.maxSafeNat()), {
          selector: ([id]) => id,
          maxLength: 200,
        }),
        fc.array(fc.integer({ min: -10, max: 2 ** 41 }), { maxLength: 50 }),
        (entries, probes) => {
          const map = new Map(entries);
          const t = IdNumbers.from(map);
          expect(t.size).toBe(map.size);
          for (const [id, n] of entries) expect(t.get(id)).toBe(n);
          for (const id of probes) expect(t.get(id)).toBe(map.get(id));
          expect([...t.values()].sort((a, b) => a - b)).toEqual([...map.values()].sort((a, b) => a - b));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds 20,000 entries in under a third of what the Map holds', () => {
    const entries = Array.from({ length: 20_000 }, (_, i): [number, number] => [i * 3 + 1, i * 1000.5]);
    const b0 = settled();
    const map = new Map(entries);
    const asMap = settled() - b0;
    const ab0 = process.memoryUsage().arrayBuffers;
    const h0 = settled();
    const t = IdNumbers.from(map);
    const asTable = settled() - h0 + (process.memoryUsage().arrayBuffers - ab0);
    expect(t.get(4)).toBe(1000.5);
    expect(map.size).toBe(20_000);
    expect(asMap).toBeGreaterThan(3 * asTable);
  });
});
