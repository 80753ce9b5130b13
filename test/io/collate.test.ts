import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localeOrder } from '../../src/io/collate.js';

const sign = (n: number) => Math.sign(n);
const iso = fc
  .date({ min: new Date(0), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
  .map((d) => d.toISOString());
const simple = fc.stringMatching(/^[0-9a-z]{0,12}$/);
const mixed = fc.string({
  unit: fc.constantFrom('a', 'B', 'z', '0', '9', '-', ':', '.', '_', ' ', 'é', 'É', 'T', 'Z', '\u0000', '\u00a0'),
});

describe('localeOrder', () => {
  it('orders every pair as localeCompare does: simple ids, ISO times, and anything else', () => {
    const text = fc.oneof(iso, simple, mixed, fc.constant(''));
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(sign(localeOrder(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(sign(a.localeCompare(b)));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees on the cases where code units and collation part ways (they go to localeCompare)', () => {
    for (const [a, b] of [
      ['a', 'B'],
      ['ab', 'a-b'],
      ['2026-01-01T00:00:00.000Z', '2026-01-01 00:00:00'],
      ['a', 'A'],
      ['', '\u0000'],
      ['é', 'f'],
    ] as const) {
      expect(sign(localeOrder(a, b)), `${a} vs ${b}`).toBe(sign(a.localeCompare(b)));
      expect(sign(localeOrder(b, a)), `${b} vs ${a}`).toBe(sign(b.localeCompare(a)));
    }
  });
});
