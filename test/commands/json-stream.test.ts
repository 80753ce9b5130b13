import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inventoryJson, openInventory } from '../../src/commands/sessions.js';
import { inventoryJson as referenceJson } from '../support/sessions-reference.js';
import { LazyList, writeJson } from '../../src/commands/json-stream.js';
import { fixedClock } from '../../src/io/clock.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/** What writeJson writes, with a tiny flush size so chunk edges fall everywhere. */
function streamed(v: unknown): { text: string; chunks: number } {
  const parts: string[] = [];
  writeJson(v, (s) => parts.push(s));
  return { text: parts.join(''), chunks: parts.length };
}
const reference = (v: unknown) => JSON.stringify(v, null, 2) + '\n';

describe('streamed JSON', () => {
  it('is byte-identical to JSON.stringify(value, null, 2) on any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(streamed(v).text).toBe(reference(v));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves out what JSON.stringify leaves out, and writes nulls where it does', () => {
    const v = {
      a: undefined,
      f: () => 1,
      d: new Date(Date.UTC(2026, 10, 30)),
      list: [undefined, () => 1, 1, { x: undefined }, [], {}, new Date(0)],
      nested: { deep: { deeper: [1, 'two\nlines', { k: 'é 你好' }] } },
      nan: NaN,
      cls: new (class {
        x = 1;
        get y() {
          return 2;
        }
      })(),
      withToJSON: { toJSON: () => ({ replaced: true }) },
      gone: { toJSON: () => undefined },
    };
    expect(streamed(v).text).toBe(reference(v));
    expect(streamed([]).text).toBe(reference([]));
    expect(streamed({}).text).toBe(reference({}));
    expect(streamed('s').text).toBe(reference('s'));
  });

  it('a LazyList writes as the array it yields, and is made while it is written', () => {
    const made: number[] = [];
    function* gen() {
      for (let i = 0; i < 3; i++) {
        made.push(i);
        yield { i, nested: [i, { j: i }] };
      }
    }
    const lazy = streamed({ a: 1, items: new LazyList(gen()), empty: new LazyList([]), tail: true });
    const eager = reference({
      a: 1,
      items: [0, 1, 2].map((i) => ({ i, nested: [i, { j: i }] })),
      empty: [],
      tail: true,
    });
    expect(lazy.text).toBe(eager);
    expect(made).toEqual([0, 1, 2]);
  });

  it('writes a large report in many chunks, never as one string', () => {
    const v = { rows: Array.from({ length: 5000 }, (_, i) => ({ i, key: `sk_v1_${'x'.repeat(40)}${i}` })) };
    const s = streamed(v);
    expect(s.text).toBe(reference(v));
    expect(s.chunks).toBeGreaterThan(5);
  });

  it('sessions --json and prune --json on a sample home: streamed bytes equal the stringified report', async () => {
    const home = tempDir();
    buildSampleHome({ dir: home, seed: 3, sessions: 120, now: Date.parse('2026-11-30T12:00:00Z'), seahorse: true });
    const h = discoverHome({ home, env: {} });
    const now = new Date('2026-11-30T12:00:00Z');
    const work = openInventory(h);
    try {
      expect(streamed(inventoryJson(work, now)).text).toBe(reference(referenceJson(buildInventory(h), now)));
    } finally {
      work.close();
    }
    const report = await runPrunePass({
      home,
      env: { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG },
      apply: false,
      clock: fixedClock(now),
      stateDir: null,
    });
    expect(report.sessions.length).toBe(120);
    expect(streamed(report).text).toBe(reference(report));
  });
});
