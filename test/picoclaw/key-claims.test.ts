import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyClaims, groupKeys, keyHash } from '../../src/picoclaw/inventory/key-claims.js';

/** What the claims stand for: every session that lists the key among its group keys, in order. */
const naive = (sessions: { key: string | null; aliases: string[] }[], agentIds: string[], key: string) =>
  sessions.filter((s) => groupKeys(s.key, s.aliases, agentIds).includes(key));

describe('KeyClaims', () => {
  it('finds the sessions that name a key by their key or an alias, in their order, each once', () => {
    const word = fc.constantFrom('a', 'b', 'agent:main:main', 'agent:ops:main', 'sk_v1_x', 'agent:main:direct:7', '');
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: fc.option(word, { nil: null }), aliases: fc.array(word, { maxLength: 4 }) }), {
          maxLength: 30,
        }),
        (sessions) => {
          const agentIds = ['main'];
          const claims = new KeyClaims(sessions, agentIds);
          for (const k of ['a', 'b', 'agent:main:main', 'agent:ops:main', 'sk_v1_x', 'agent:main:direct:7', '', 'z'])
            expect(claims.owners(k)).toEqual(naive(sessions, agentIds, k));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('tells apart two keys whose hashes collide', () => {
    // 26-bit hashes: a few thousand keys hold a pair that collides (the birthday bound).
    const seen = new Map<number, string>();
    let pair: [string, string] | null = null;
    for (let i = 0; pair === null; i++) {
      const k = `agent:main:telegram:direct:${i}`;
      const other = seen.get(keyHash(k));
      if (other !== undefined) pair = [other, k];
      else seen.set(keyHash(k), k);
    }
    const [x, y] = pair;
    expect(x).not.toBe(y);
    const sessions = [
      { key: 'sk_v1_1', aliases: [y] },
      { key: 'sk_v1_2', aliases: [x] },
      { key: x, aliases: [] },
      { key: 'sk_v1_3', aliases: [y, y] },
    ];
    const claims = new KeyClaims(sessions, ['main']);
    expect(claims.owners(x)).toEqual([sessions[1], sessions[2]]);
    expect(claims.owners(y)).toEqual([sessions[0], sessions[3]]);
  });
});
