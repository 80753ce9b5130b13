import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayWidth, layout } from '../../src/commands/format.js';

/**
 * Invariant: text is wrapped at spaces but never inside a back-quoted phrase (`picoclaw-guard startup`), and
 * wrapping loses and adds nothing but line breaks and the continuation indent. A lone back-quote (a key that
 * holds one) does not glue the rest of the line together.
 */
const word = fc.stringMatching(/^[a-z0-9_.=-]{1,10}$/);
const piece = fc.oneof(
  { weight: 4, arbitrary: word },
  { weight: 1, arbitrary: fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => `\`${ws.join(' ')}\``) },
);

describe('wrapping keeps back-quoted phrases whole', () => {
  it('no line breaks inside `...`; the words come back in order', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 40, max: 120 }),
        (pieces, width) => {
          const text = pieces.join(' ');
          const lines = layout([text], width).split('\n');
          for (const l of lines) expect((l.match(/`/g) ?? []).length % 2, `${width}: ${l}`).toBe(0);
          expect(lines.map((l) => l.trim()).join(' ')).toBe(text);
          // A phrase never exceeds the width here (at most 3 words of 10), so every line fits.
          for (const l of lines) expect(displayWidth(l)).toBeLessThanOrEqual(width);
        },
      ),
    );
  });

  it('a lone back-quote is an ordinary character', () => {
    const text = 'key sk_`odd ' + 'word '.repeat(30);
    const lines = layout([text.trim()], 40).split('\n');
    expect(lines.length).toBeGreaterThan(3);
    for (const l of lines) expect(displayWidth(l)).toBeLessThanOrEqual(40);
  });
});
