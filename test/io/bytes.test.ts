import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes, WHOLE_MIB } from '../../src/io/bytes.js';
import { ARCHIVE_BYTES } from '../../src/archive/fields.js';

const MiB = 1024 * 1024;
/** Byte counts from 0 to past a TiB, whole and fractional (estimates are fractions). */
const sizes = fc.oneof(fc.nat({ max: 2 ** 42 }), fc.double({ min: 0, max: 2 ** 42, noNaN: true }));

describe('formatBytes: one formatter, with options where a figure keeps one unit', () => {
  it('by default: the largest unit that keeps the figure at or above 1, one decimal below 100', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(150 * MiB)).toBe('150 MiB');
    expect(formatBytes(Number.NaN)).toBe('-');
  });

  it('archive sizes: MiB or GiB with one decimal, as the archive and restore messages always read', () => {
    expect(formatBytes(0, ARCHIVE_BYTES)).toBe('0.0 MiB');
    expect(formatBytes(256 * MiB, ARCHIVE_BYTES)).toBe('256.0 MiB');
    expect(formatBytes(4 * 1024 ** 3, ARCHIVE_BYTES)).toBe('4.0 GiB');
    expect(formatBytes(5 * 1024 ** 4, ARCHIVE_BYTES)).toBe('5120.0 GiB');
    // The same text as the formatter it replaced, for any size.
    fc.assert(
      fc.property(sizes, (b) => {
        const before = b >= 1024 ** 3 ? `${(b / 1024 ** 3).toFixed(1)} GiB` : `${(b / 1024 ** 2).toFixed(1)} MiB`;
        expect(formatBytes(b, ARCHIVE_BYTES)).toBe(before);
      }),
    );
  });

  it("whole MiB (budgets set in MB, the startup model's volume): never another unit", () => {
    expect(formatBytes(40 * MiB, WHOLE_MIB)).toBe('40 MiB');
    expect(formatBytes(2048 * MiB, WHOLE_MIB)).toBe('2048 MiB');
    expect(formatBytes(0.4 * MiB, WHOLE_MIB)).toBe('0 MiB');
    fc.assert(
      fc.property(sizes, (b) => {
        expect(formatBytes(b, WHOLE_MIB)).toBe(`${Math.round(b / MiB)} MiB`);
        expect(formatBytes(b, WHOLE_MIB)).toBe(`${(b / 1024 / 1024).toFixed(0)} MiB`);
      }),
    );
  });

  it('caps as they were set: whole KiB and MiB without a decimal', () => {
    expect(formatBytes(1024, { decimals: 0 })).toBe('1 KiB');
    expect(formatBytes(64 * 1024, { decimals: 0 })).toBe('64 KiB');
    expect(formatBytes(4 * MiB, { decimals: 0 })).toBe('4 MiB');
  });
});
