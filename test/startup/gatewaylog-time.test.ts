import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyzeStartupLog, type StartupReport } from '../../src/startup/index.js';

/**
 * A gateway.log stamp with RFC3339's shape but no such day (2026-02-30) is an unparseable
 * time, read exactly like a stamp that is plainly wrong (month 13): the whole report is the
 * same, line by line, whichever line carries it (JSON `time`, journald's prefix).
 */

const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));
const lines = (name: string) =>
  readFileSync(FIX + name, 'utf8')
    .trimEnd()
    .split('\n');

/** The line's date replaced by `date` (same length), in its JSON `time` or its journald prefix. */
function restamp(line: string, date: string): string {
  if (line.startsWith('{')) return line.replace(/"time":"\d{4}-\d\d-\d\d/, `"time":"${date}`);
  return line.replace(/^\d{4}-\d\d-\d\d(?=T)/, date);
}

async function analyze(text: string): Promise<StartupReport> {
  return analyzeStartupLog({ stream: Readable.from([Buffer.from(text)]), name: 'gateway.log' }, { dateAnchor: null });
}

describe('a gateway.log time that is not on the calendar', () => {
  for (const [file, bad] of [
    ['facts-example.log', '2026-02-30'],
    ['mixed.log', '2026-02-30'],
    ['facts-example.log', '2026-04-31'],
    ['mixed.log', '2025-02-29'],
  ] as const) {
    it(`${bad} in any one line of ${file} reads as an unparseable time (as month 13 does)`, async () => {
      const all = lines(file);
      let differs = 0;
      for (let i = 0; i < all.length; i++) {
        const stamped = all[i]!;
        const withBad = restamp(stamped, bad);
        const withMonth13 = restamp(stamped, bad.slice(0, 5) + '13' + bad.slice(7));
        if (withBad === stamped) continue; // a line without a date (none in these fixtures)
        const at = (line: string) => analyze([...all.slice(0, i), line, ...all.slice(i + 1)].join('\n') + '\n');
        const [a, b, original] = await Promise.all([at(withBad), at(withMonth13), at(stamped)]);
        expect(a, `line ${i + 1}`).toEqual(b);
        if (JSON.stringify(a) !== JSON.stringify(original)) differs++;
      }
      // The substitution matters for the report (else this would prove nothing).
      expect(differs).toBeGreaterThan(0);
    });
  }
});
