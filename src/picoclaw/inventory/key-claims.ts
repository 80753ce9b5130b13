import { lowerBound } from '../../io/id-numbers.js';
import { isMainAlias } from '../keys.js';

/**
 * Which sessions a seahorse conversation belongs to: the sessions whose key, or one of whose
 * aliases (not the agent's main one), is the conversation's key (docs/picoclaw.md).
 */

/** What a claim is read from: a session's key and aliases. */
export interface Claimant {
  key: string | null;
  aliases: string[];
}

/** The keys that tie a session to seahorse conversations and to its alias group. */
export function groupKeys(key: string | null, aliases: readonly string[], agentIds: readonly string[]): string[] {
  const out: string[] = [];
  if (key) out.push(key);
  for (const a of aliases) if (a !== key && !isMainAlias(a, agentIds)) out.push(a);
  return out;
}

/** Bits of a claim's session index in `KeyClaims` (134 million sessions); the hash has the rest of a double's 53. */
const INDEX_BITS = 27;
const INDEX_SPAN = 2 ** INDEX_BITS;
const HASH_SPAN = 2 ** (53 - INDEX_BITS);

/** FNV-1a over a string's UTF-16 code units, cut to the bits a claim leaves for it. */
export function keyHash(k: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < k.length; i++) h = Math.imul(h ^ k.charCodeAt(i), 0x01000193);
  return (h >>> 0) % HASH_SPAN;
}

/**
 * Which sessions name a key (their own key or an alias, as `groupKeys` lists them), without a
 * string index: a sorted array of `hash * 2^27 + session index`, one number a key. A map from
 * every key and alias to its sessions held every alias string at once next to the rows; here a
 * match by hash is confirmed against the session's own keys, so a collision costs a look, never
 * a wrong owner.
 */
export class KeyClaims<S extends Claimant> {
  private readonly claims: Float64Array;

  constructor(
    private readonly sessions: S[],
    private readonly agentIds: string[],
  ) {
    if (sessions.length >= INDEX_SPAN) throw new Error(`${sessions.length} sessions: more than a claim can index`);
    // Counted first, then filled: one array of the exact size. Grown by doubling and then cut to size,
    // it was held twice at once: 1.3 MB instead of 0.6 on a home of 20,000 sessions that list four
    // aliases each, at the peak of the seahorse mapping.
    let n = 0;
    for (const s of sessions) n += groupKeys(s.key, s.aliases, agentIds).length;
    const claims = new Float64Array(n);
    let at = 0;
    sessions.forEach((s, i) => {
      for (const k of groupKeys(s.key, s.aliases, agentIds)) claims[at++] = keyHash(k) * INDEX_SPAN + i;
    });
    // Sorted by hash, then by session: the owners of a key come out in the sessions' order.
    this.claims = claims.sort();
  }

  /** The sessions that name `key`, in their order, each once. */
  owners(key: string): S[] {
    const c = this.claims;
    const from = keyHash(key) * INDEX_SPAN;
    const lo = lowerBound(c, from);
    const out: S[] = [];
    for (let j = lo; j < c.length && c[j]! < from + INDEX_SPAN; j++) {
      const s = this.sessions[c[j]! - from]!;
      if (out[out.length - 1] !== s && this.names(s, key)) out.push(s);
    }
    return out;
  }

  private names(s: S, key: string): boolean {
    return s.key === key || groupKeys(s.key, s.aliases, this.agentIds).includes(key);
  }
}
