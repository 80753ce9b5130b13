import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { byActivity } from '../../src/commands/sessions.js';
import type { SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import { collate, rootAsciiCompare, rootSortKey } from '../../src/io/collate.js';

const COLLATE = fileURLToPath(new URL('../../dist/src/io/collate.js', import.meta.url));

/** Characters where collations differ from code point order: punctuation, digits, both cases, non-ASCII, controls. */
const CHARS = [
  ...' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$0123456789',
  ...'abcdfgwxyzABCDFGWXYZ',
  ...'éÉßåÅøæ你ı\u0130\u00a0\u200b\u0000\t\u007f',
  '😀',
];
const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 8 }).map((a) => a.join(''));
/** A pair that often shares a prefix, or differs only in case: where the tie-breaks are decided. */
const pair = fc.oneof(
  fc.tuple(text, text),
  fc.tuple(text, text, text).map(([p, a, b]) => [p + a, p + b] as [string, string]),
  fc
    .tuple(text, fc.array(fc.boolean(), { maxLength: 8 }))
    .map(([s, flip]) => [
      s,
      [...s].map((c, i) => (flip[i] ? (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) : c)).join(''),
    ]),
);
const KEYS = ['sk_v1_ab', 'sk_v1_AB', 'sk_v1-ab', 'agent:cron-x-1', 'agent_cron-x-1', 'agent:main:tg', 'Zeta', 'zeta'];

function record(key: string | null, dir: string, base: string, lastActivityMs: number | null): SessionRecord {
  return { key, id: `${dir}/${base}`, lastActivityMs } as SessionRecord;
}

/** The comparator as it was: localeCompare for every tie. */
function oldByActivity(a: SessionRecord, b: SessionRecord): number {
  const x = a.lastActivityMs ?? -Infinity;
  const y = b.lastActivityMs ?? -Infinity;
  if (x !== y) return y - x;
  return (a.key ?? '').localeCompare(b.key ?? '') || a.id.localeCompare(b.id);
}

describe('collate: localeCompare order without the collator', () => {
  afterEach(() => vi.restoreAllMocks());

  it('agrees with localeCompare on any two strings (root weights for ASCII, localeCompare for the rest)', () => {
    fc.assert(
      fc.property(pair, ([x, y]) => {
        expect(collate(x, y)).toBe(Math.sign(x.localeCompare(y)));
        const r = rootAsciiCompare(x, y);
        if (!Number.isNaN(r)) expect(r).toBe(Math.sign(new Intl.Collator('und').compare(x, y)));
      }),
      { numRuns: 3000 },
    );
  });

  it('a sort key orders two strings as collate does wherever the keys differ (property)', () => {
    fc.assert(
      fc.property(pair, ([x, y]) => {
        const a = rootSortKey(x);
        const b = rootSortKey(y);
        // No key: a character outside printable ASCII (this test runs under a root-collating locale).
        if (a === null) expect(/^[ -~]*$/.test(x)).toBe(false);
        if (b === null) expect(/^[ -~]*$/.test(y)).toBe(false);
        if (a === null || b === null) return;
        const c = Buffer.compare(a, b);
        if (c !== 0) expect(c).toBe(collate(x, y));
        // Equal keys: the same string but for the case of letters.
        else expect(x.toLowerCase()).toBe(y.toLowerCase());
      }),
      { numRuns: 3000 },
    );
  });

  it('the sessions sort gives the order the localeCompare comparator gave', () => {
    const rec = fc
      .tuple(
        fc.option(fc.oneof(fc.constantFrom(...KEYS), text), { nil: null }),
        fc.constantFrom('/h/w/sessions', '/h/w-ops/sessions', '/h/W/sessions'),
        fc.oneof(fc.constantFrom(...KEYS), text),
        fc.option(fc.constantFrom(1, 2, 3), { nil: null }),
      )
      .map(([k, d, b, t]) => record(k, d, b, t));
    fc.assert(
      fc.property(fc.array(rec, { maxLength: 40 }), (rs) => {
        expect([...rs].sort(byActivity)).toEqual([...rs].sort(oldByActivity));
      }),
      { numRuns: 500 },
    );
  });

  it('ties between ASCII keys are decided without localeCompare (no collator is built)', () => {
    const spy = vi.spyOn(String.prototype, 'localeCompare');
    const rs = ['sk_v1_b', 'sk_v1_a', 'agent:cron-1', 'Agent:cron-1', 'sk_v1_A'].map((k) =>
      record(k, '/h/w/sessions', k.replaceAll(':', '_'), null),
    );
    const sorted = rs.sort(byActivity).map((r) => r.key);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
    expect(sorted).toEqual(['agent:cron-1', 'Agent:cron-1', 'sk_v1_a', 'sk_v1_A', 'sk_v1_b']);
  });

  it('under a locale that collates ASCII its own way (Danish aa, Welsh dd), the order is still localeCompare', () => {
    // Under these locales the root weights give another order: the shortcut must not be taken there.
    const script =
      `const { collate } = await import(${JSON.stringify(COLLATE)});\n` +
      `const pairs = [['aa', 'b'], ['A', 'a'], ['dd', 'de'], ['ll', 'lz'], ['sk_v1_aab', 'sk_v1_ab']];\n` +
      `console.log(JSON.stringify(pairs.map(([x, y]) => [collate(x, y), Math.sign(x.localeCompare(y))])));`;
    for (const lang of ['da_DK.UTF-8', 'cy_GB.UTF-8', 'en_US.UTF-8']) {
      const env: NodeJS.ProcessEnv = { ...process.env, LANG: lang };
      delete env.LC_ALL;
      delete env.LC_MESSAGES;
      const p = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env });
      expect(p.stderr).toBe('');
      const got = JSON.parse(p.stdout) as [number, number][];
      for (const [mine, theirs] of got) expect(mine).toBe(theirs);
    }
  });
});
