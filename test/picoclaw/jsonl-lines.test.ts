import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonlLines } from '../../src/picoclaw/jsonl-lines.js';
import { tempDir } from '../support/tmp.js';

/**
 * The forward line reader `export` and `show` use: for any file, the lines it yields are the file
 * split at each newline (a last line without one included), a line over the limit is reported by
 * its number and length and never held, across any chunk boundary (lines of up to 150 KB cross the
 * 64 KiB reads).
 */
describe('jsonlLines', () => {
  const lineArb = fc.oneof(
    { weight: 6, arbitrary: fc.string({ maxLength: 40 }).map((s) => s.replace(/\n/g, ' ')) },
    { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 150_000 }).map((n) => 'x'.repeat(n)) },
  );

  it('yields the lines of any file, and reports (never holds) the ones over the limit', () => {
    fc.assert(
      fc.property(
        fc.array(lineArb, { maxLength: 8 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 200_000 }),
        (lines, lastNewline, max) => {
          const path = join(tempDir(), 'x.jsonl');
          const text = lines.join('\n') + (lastNewline && lines.length > 0 ? '\n' : '');
          writeFileSync(path, text);
          // The file split at each newline; what follows the last newline is a line only if it is not empty.
          const want = text.split('\n');
          if (want[want.length - 1] === '') want.pop();
          const got = [...jsonlLines(path, max)];
          expect(got.map((l) => l.n)).toEqual(want.map((_, i) => i + 1));
          got.forEach((l, i) => {
            const bytes = Buffer.byteLength(want[i]!);
            if (bytes > max) expect(l).toEqual({ n: i + 1, tooLong: bytes });
            else expect(l).toEqual({ n: i + 1, text: want[i] });
          });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses a symlink and a FIFO at once (exit 3), never blocking', () => {
    const d = tempDir();
    writeFileSync(join(d, 'real'), '{}\n');
    symlinkSync(join(d, 'real'), join(d, 'link.jsonl'));
    expect(() => [...jsonlLines(join(d, 'link.jsonl'))]).toThrow(/symlink/);
    execFileSync('mkfifo', [join(d, 'fifo.jsonl')]);
    expect(() => [...jsonlLines(join(d, 'fifo.jsonl'))]).toThrow(/not a regular file/);
  });
});
