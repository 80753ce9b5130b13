/**
 * `x.localeCompare(y)` (the default locale's collation), without loading ICU's collator when the
 * answer is known without it. The first localeCompare of a process builds the collator, which
 * costs RSS (BENCHMARKS.md, 'Figures that code comments carried'), for a sort whose ties are
 * mostly plain ASCII session keys.
 *
 * The shortcut covers strings of printable ASCII only, and only under a default locale whose
 * collation of ASCII is the root collation (CLDR root, which ICU implements): the languages V8
 * itself compares by a table of root weights for such strings (V8 src/objects/intl-objects.cc,
 * its collation fast path). Root collation of printable ASCII, at the default strength: first
 * by each character's primary weight (space, then punctuation and symbols in the order of
 * ROOT_ORDER, then digits, then letters, the case of a letter not counted), the shorter string
 * first when one is a prefix of the other; on equal primaries, by case, lowercase first, at the
 * first character where the two strings differ. Anything else is left to localeCompare.
 */

/** Printable ASCII in root collation order; a letter's two cases share one primary weight. */
const ROOT_ORDER = ' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ';

/** Primary weight by char code (0x20-0x7e); 0: not printable ASCII. */
const PRIMARY = new Uint8Array(128);
{
  let w = 0;
  for (let i = 0; i < ROOT_ORDER.length; i++) {
    const c = ROOT_ORDER.charCodeAt(i);
    // An uppercase letter follows its lowercase one and shares its weight.
    if (!(c >= 0x41 && c <= 0x5a)) w++;
    PRIMARY[c] = w;
  }
}

/** Languages whose default collation of ASCII is the root one (V8's fast-path locales), and root itself. */
const ROOT_ASCII = /^(?:und|(?:en|fr|es|de|pt|it|ca|fi|id|ms|nl|pl|ro|sl|sv|sw|vi)(?:-[A-Z]{2})?)$/;

let rootDefault: boolean | undefined;

/**
 * Whether the default locale collates ASCII as root does. Asked of PluralRules, which resolves
 * the same default locale for far less memory than a collator; any locale with more than a
 * language and a region (a variant such as POSIX, an extension) is not taken.
 */
function defaultIsRoot(): boolean {
  if (rootDefault === undefined) {
    try {
      rootDefault = ROOT_ASCII.test(new Intl.PluralRules().resolvedOptions().locale);
    } catch {
      rootDefault = false;
    }
  }
  return rootDefault;
}

/** Root collation of two printable-ASCII strings, or NaN when either holds anything else. */
export function rootAsciiCompare(x: string, y: string): number {
  const n = Math.min(x.length, y.length);
  let primary = 0;
  let tertiary = 0;
  let i = 0;
  for (; i < n; i++) {
    const a = x.charCodeAt(i);
    const b = y.charCodeAt(i);
    if (a >= 0x80 || b >= 0x80 || PRIMARY[a] === 0 || PRIMARY[b] === 0) return NaN;
    if (primary === 0 && PRIMARY[a] !== PRIMARY[b]) primary = PRIMARY[a]! < PRIMARY[b]! ? -1 : 1;
    // Equal primaries and different codes: the same letter in two cases; uppercase sorts after.
    else if (tertiary === 0 && a !== b) tertiary = a >= 0x61 ? -1 : 1;
  }
  for (const s of [x, y])
    for (let j = i; j < s.length; j++) {
      const c = s.charCodeAt(j);
      if (c >= 0x80 || PRIMARY[c] === 0) return NaN;
    }
  if (primary !== 0) return primary;
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return tertiary;
}

/** The sign of `x.localeCompare(y)`: -1, 0 or 1. */
export function collate(x: string, y: string): number {
  if (x === y) return 0;
  if (defaultIsRoot()) {
    const r = rootAsciiCompare(x, y);
    if (!Number.isNaN(r)) return r;
  }
  return Math.sign(x.localeCompare(y));
}

/**
 * A byte string whose order (memcmp, SQLite's BLOB order) agrees with `collate` wherever it is
 * strict, for a printable-ASCII string under a default locale that collates ASCII as root; null
 * for any other. It is the primary weights (case not counted): two strings it does not tell
 * apart (equal but for the case of letters) are left to `collate` itself.
 */
export function rootSortKey(s: string): Buffer | null {
  if (!defaultIsRoot()) return null;
  const out = Buffer.allocUnsafe(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80 || PRIMARY[c] === 0) return null;
    out[i] = PRIMARY[c]!;
  }
  return out;
}
