import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdNumbers, IdNumbersBuilder } from '../../src/io/id-numbers.js';
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

  it('is made entry by entry in id order as a Map of the same entries, ids that are not numbers summed apart', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: -5, max: 2 ** 45 }), { maxLength: 3000 }),
        fc.array(fc.oneof(fc.constant(null), fc.string({ maxLength: 3 }), fc.constant(Number.NaN)), { maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 1000 })), { maxLength: 50 }),
        (ids, others, adds) => {
          ids.sort((a, b) => a - b);
          const b = new IdNumbersBuilder();
          const map = new Map<number, number>();
          ids.forEach((id, i) => {
            expect(b.push(id, i * 3)).toBe(i);
            map.set(id, i * 3);
          });
          let apart = 0;
          others.forEach((o, i) => {
            expect(b.push(o, 10 + i)).toBe(-1);
            apart += 10 + i;
          });
          for (const [at, n] of adds) {
            if (ids.length === 0) break;
            const id = ids[at % ids.length]!;
            expect(b.indexOf(id)).toBe(at % ids.length);
            b.addAt(b.indexOf(id), n);
            map.set(id, map.get(id)! + n);
          }
          expect(b.indexOf('1')).toBe(-1);
          const t = b.done();
          expect(t.size).toBe(map.size);
          for (const [id, n] of map) expect(t.get(id)).toBe(n);
          expect(t.get(2 ** 46)).toBeUndefined();
          let sum = 0;
          for (const v of t.values()) sum += v;
          expect(sum).toBe([...map.values()].reduce((x, y) => x + y, 0) + apart);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('refuses an id that is not above the last one (a table out of order would find nothing)', () => {
    const b = new IdNumbersBuilder();
    b.push(5, 1);
    expect(() => b.push(5, 1)).toThrow(/not above 5/);
    expect(() => b.push(4, 1)).toThrow(/not above 5/);
  });
});
