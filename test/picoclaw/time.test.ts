import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readHolds } from '../../src/state/holds.js';
import { tempDir } from '../support/tmp.js';
import {
  formatGoTime,
  instantMs,
  parseGoTime,
  parseLogTime,
  parseSqliteTime,
  usable,
  USABLE_SINCE_MS,
} from '../../src/picoclaw/time.js';

describe('Go RFC3339Nano timestamps', () => {
  it.each([
    ['2026-06-13T18:19:35.12345+02:00', Date.UTC(2026, 5, 13, 16, 19, 35, 123)],
    ['2026-06-13T18:19:36+02:00', Date.UTC(2026, 5, 13, 16, 19, 36)],
    ['2026-06-13T18:19:37.5Z', Date.UTC(2026, 5, 13, 18, 19, 37, 500)],
    ['2026-05-25T10:11:39.37008+02:00', Date.UTC(2026, 4, 25, 8, 11, 39, 370)],
    ['2026-05-25T10:11:16.855888123-05:30', Date.UTC(2026, 4, 25, 15, 41, 16, 855)],
    ['2024-01-01T00:00:00Z', USABLE_SINCE_MS],
  ])('parses %s exactly', (text, ms) => {
    expect(parseGoTime(text)).toBe(ms);
  });

  it('parses the Go zero time as year 1, which is not usable', () => {
    const ms = parseGoTime('0001-01-01T00:00:00Z');
    expect(ms).not.toBeNull();
    expect(new Date(ms!).getUTCFullYear()).toBe(1);
    expect(usable(ms)).toBeNull();
  });

  it.each([
    '',
    'yesterday',
    '2026-06-13 18:19:35',
    '2026-06-13T18:19:35',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-06-13T18:19:35.1234567890Z',
    42,
    null,
  ])('rejects %s', (text) => {
    expect(parseGoTime(text)).toBeNull();
  });

  it('checks the day against its month and year, a leap second included', () => {
    const impossible = [
      '2026-02-30T23:59:60Z',
      '2026-04-31T23:59:60+02:00',
      '2025-02-29T00:00:00Z',
      '2100-02-29T00:00:00Z', // divisible by 100: not a leap year
    ];
    for (const text of impossible) {
      expect(parseGoTime(text), text).toBeNull();
    }
    expect(parseGoTime('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseGoTime('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(parseGoTime('2026-06-30T23:59:60Z')).toBe(Date.UTC(2026, 6, 1)); // a leap second: the next second
    expect(parseSqliteTime('2026-02-30 23:59:60')).toBeNull();
  });

  it('treats anything before 2024-01-01T00:00:00Z as unusable', () => {
    expect(usable(parseGoTime('2023-12-31T23:59:59.999999999Z'))).toBeNull();
    expect(usable(parseGoTime('1970-01-01T00:00:00Z'))).toBeNull();
    expect(usable(parseGoTime('2024-01-01T01:00:00+01:00'))).toBe(USABLE_SINCE_MS);
  });

  it('round-trips what the builder writes, for any time and offset (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) }),
        fc.integer({ min: 0, max: 999_999 }),
        fc.integer({ min: -720, max: 840 }),
        (ms, nanos, off) => {
          const text = formatGoTime(ms, nanos, off);
          expect(text).not.toMatch(/\.\d*0(Z|[+-])/); // trailing zeros trimmed like Go
          expect(parseGoTime(text)).toBe(ms);
        },
      ),
    );
  });
});

describe('gateway.log stamps (zerolog time, journald short-iso)', () => {
  it("reads the offset with or without its colon, and the stamp's resolution", () => {
    const at = Date.UTC(2026, 5, 13, 16, 20, 9);
    expect(parseLogTime('2026-06-13T18:20:09+02:00')).toEqual({ ms: at, offsetMin: 120, precisionMs: 1000 });
    expect(parseLogTime('2026-06-13T18:20:09+0200')).toEqual({ ms: at, offsetMin: 120, precisionMs: 1000 });
    expect(parseLogTime('2026-06-13T10:50:09.412907-0530')).toEqual({ ms: at + 412, offsetMin: -330, precisionMs: 1 });
    expect(parseLogTime('2026-06-13T16:20:09,5Z')).toEqual({ ms: at + 500, offsetMin: 0, precisionMs: 1 });
  });

  it('agrees with parseGoTime wherever both read the text, and checks the calendar the same way', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) }),
        fc.integer({ min: -720, max: 840 }),
        (ms, off) => {
          const text = formatGoTime(ms, 0, off);
          expect(parseLogTime(text)).toEqual({ ms, offsetMin: off, precisionMs: ms % 1000 === 0 ? 1000 : 1 });
        },
      ),
    );
    const rejected = [
      '2026-02-30T10:00:00+0200',
      '2025-02-29T10:00:00Z',
      '2026-06-31T10:00:00,1Z',
      '2026-06-13 10:00:00Z', // a space for the T is seahorse's format, not a log stamp
    ];
    for (const text of rejected) {
      expect(parseLogTime(text), text).toBeNull();
    }
  });
});

describe('seahorse timestamps', () => {
  it('parses YYYY-MM-DD HH:MM:SS as UTC', () => {
    expect(parseSqliteTime('2026-11-30 01:57:53')).toBe(Date.UTC(2026, 10, 30, 1, 57, 53));
    expect(parseSqliteTime('2026-11-30T01:57:53')).toBe(Date.UTC(2026, 10, 30, 1, 57, 53));
    expect(parseSqliteTime('30/11/2026')).toBeNull();
    expect(parseSqliteTime(null)).toBeNull();
  });
});

describe('instantMs: the stored-timestamp reader used instead of Date.parse', () => {
  it('reads what toISOString and RFC3339 write, and refuses a day that does not exist', () => {
    const t = Date.UTC(2026, 10, 30, 12, 0, 0, 250);
    expect(instantMs(new Date(t).toISOString())).toBe(t);
    expect(instantMs('2026-11-30T14:00:00.25+02:00')).toBe(t);
    for (const bad of [
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00.000Z',
      '2026-04-31T00:00:00Z',
      '0099-01-01',
      'x',
      null,
    ]) {
      expect(instantMs(bad), String(bad)).toBeNaN();
    }
    // Date.parse accepts the first of these: the reason instantMs exists.
    expect(Number.isNaN(Date.parse('2026-02-30T00:00:00Z'))).toBe(false);
  });

  it("a state file's timestamp on a day that does not exist is not read as a date (a hold until 2026-02-30)", () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const hold = (until: string) => ({
      home: '/h',
      agent: 'main',
      key: 'k',
      restored_at: '2026-01-01T00:00:00.000Z',
      until,
    });
    writeFileSync(
      join(dir, 'restore-holds.json'),
      JSON.stringify({ holds: [hold('2026-02-30T00:00:00.000Z'), hold('2026-03-01T00:00:00.000Z')] }),
    );
    expect(readHolds(dir).map((h) => h.until)).toEqual(['2026-03-01T00:00:00.000Z']);
  });
});
