/** Wrapping's tokens (./format.ts): back-quoted phrases kept whole. */

/** Back-quotes in a word: an odd count opens (or closes) a `quoted phrase`. */
const ticks = (w: string) => (w.match(/`/g) ?? []).length;

/**
 * A back-quoted phrase (`picoclaw-guard sessions`, `max_age_days=30`) is one token: a line never breaks inside
 * it. A back-quote that no other closes within a few words (a key that holds one) is an ordinary character.
 */
export function keepQuotedWhole(tokens: { sep: string; word: string }[]): { sep: string; word: string }[] {
  const out: { sep: string; word: string }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (ticks(t.word) % 2 === 1) {
      let j = i + 1;
      while (j < tokens.length && j - i <= 6 && ticks(tokens[j]!.word) % 2 === 0) j++;
      if (j < tokens.length && j - i <= 6) {
        let word = t.word;
        for (let k = i + 1; k <= j; k++) word += tokens[k]!.sep + tokens[k]!.word;
        out.push({ sep: t.sep, word });
        i = j;
        continue;
      }
    }
    out.push(t);
  }
  return out;
}
