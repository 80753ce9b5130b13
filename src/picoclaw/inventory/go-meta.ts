import { parseTree, type Node } from 'jsonc-parser';

/**
 * Whether Go's encoding/json decodes a `.meta.json` into PicoClaw's `SessionMeta`
 * (pkg/memory/jsonl.go, docs/picoclaw.md#listing-orphans-and-aliases): `ListSessions` skips a
 * meta whose `json.Unmarshal` returns an error, so a meta that is valid JSON with a field of the
 * wrong type is no session to PicoClaw, and must not be one to the guard either.
 *
 * Go's rules, as they apply to that struct:
 * - object keys match field names case-insensitively (exact first; Unicode simple folding, so
 *   the Kelvin sign K matches `k` and the long s `ſ` matches `s`); a repeated field: the last wins;
 *   unknown keys are ignored;
 * - `null` leaves any field at its zero value;
 * - `key`, `summary`: a string; `skip`, `count`: an integer literal that fits 64 bits (`1.0`,
 *   `1e3` and a string are errors); `created_at`, `updated_at`: a string that is an RFC 3339
 *   time (`time.Time.UnmarshalJSON`: upper-case `T` and `Z`, seconds 0-59, a real calendar day,
 *   any digits of fraction after a `.`); `scope`: any JSON (`json.RawMessage`); `aliases`: an
 *   array of strings (or nulls);
 * - the document itself must be an object (or `null`, which decodes to the zero meta: no key).
 */

const FIELDS = ['key', 'summary', 'skip', 'count', 'created_at', 'updated_at', 'scope', 'aliases'] as const;
export type GoMetaField = (typeof FIELDS)[number];

/** Go's fold of a key for the match (ASCII case, and the two non-ASCII letters that fold onto ASCII). */
const fold = (k: string): string =>
  k
    .replace(/\u212a/g, 'k')
    .replace(/\u017f/g, 's')
    .toLowerCase();

const GO_RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

function daysIn(y: number, m: number): number {
  return [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][
    m - 1
  ]!;
}

/** What Go's time.Time.UnmarshalJSON accepts (RFC 3339, strict). */
export function goTimeOk(s: string): boolean {
  const m = GO_RFC3339.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = [+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!];
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || se > 59) return false;
  if (m[9] !== undefined && (+m[9] > 23 || +m[10]! > 59)) return false;
  return true;
}

const INT64_LIMIT = 2 ** 63;
const INT_LITERAL = /^-?(0|[1-9]\d*)$/;
/** A member's number with a fraction or an exponent (a key's closing quote, a colon, digits, then `.`/`e`). */
const MAYBE_FRACTION = /"\s*:\s*-?\d+[.eE]/;

/** The field each key of the object sets, Go's way: exact name first, else the folded one. */
function fieldOf(k: string): GoMetaField | null {
  if ((FIELDS as readonly string[]).includes(k)) return k as GoMetaField;
  const f = fold(k);
  return (FIELDS as readonly string[]).includes(f) ? (f as GoMetaField) : null;
}

/** The integer fields' literals as written (JSON.parse has lost `1.0` vs `1`), read only when needed. */
function rawNumbers(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const root: Node | undefined = parseTree(text);
  for (const p of root?.type === 'object' ? (root.children ?? []) : []) {
    const [k, v] = p.children ?? [];
    if (!k || !v || v.type !== 'number') continue;
    const f = fieldOf(String(k.value));
    if (f !== 'skip' && f !== 'count') continue;
    const lits = out.get(f) ?? [];
    lits.push(text.slice(v.offset, v.offset + v.length));
    out.set(f, lits);
  }
  return out;
}

export interface GoMeta {
  key: string;
  skip: number;
  count: number;
  createdAt: string | null;
  updatedAt: string | null;
  aliases: string[];
  scope: unknown;
}

/**
 * Decode a parsed meta the way Go does. Returns the decoded fields, or the reason Go's decoder
 * returns an error (`wrong`). `text` is the document (for the integer literals).
 */
export function goDecodeMeta(raw: unknown, text: string): { meta: GoMeta } | { wrong: string } {
  const meta: GoMeta = { key: '', skip: 0, count: 0, createdAt: null, updatedAt: null, aliases: [], scope: null };
  if (raw === null) return { meta };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { wrong: 'is not a JSON object' };
  let lits: Map<string, string[]> | null = null;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const f = fieldOf(k);
    if (f === null || v === null) continue;
    switch (f) {
      case 'key':
      case 'summary':
        if (typeof v !== 'string') return { wrong: `"${f}" is not a string` };
        if (f === 'key') meta.key = v;
        break;
      case 'skip':
      case 'count': {
        if (typeof v !== 'number') return { wrong: `"${f}" is not a number` };
        if (!Number.isInteger(v) || Math.abs(v) >= INT64_LIMIT) return { wrong: `"${f}" is not a 64-bit integer` };
        // JSON.parse has read `1.0` as 1: the literal is looked at only when the text may hold one.
        if (lits === null && MAYBE_FRACTION.test(text)) lits = rawNumbers(text);
        lits ??= new Map();
        if ((lits.get(f) ?? []).some((l) => !INT_LITERAL.test(l)))
          return { wrong: `"${f}" is not written as an integer (Go rejects fractions and exponents)` };
        meta[f] = v;
        break;
      }
      case 'created_at':
      case 'updated_at':
        if (typeof v !== 'string' || !goTimeOk(v)) return { wrong: `"${f}" is not an RFC 3339 time` };
        if (f === 'created_at') meta.createdAt = v;
        else meta.updatedAt = v;
        break;
      case 'scope':
        meta.scope = v;
        break;
      case 'aliases':
        if (!Array.isArray(v) || v.some((a) => a !== null && typeof a !== 'string'))
          return { wrong: '"aliases" is not a list of strings' };
        meta.aliases = v.map((a) => (a === null ? '' : (a as string)));
        break;
    }
  }
  return { meta };
}
