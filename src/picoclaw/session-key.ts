import { ExitCode, GuardError } from '../errors.js';
import type { SessionRecord } from './inventory/inventory.js';

/** A key as typed: the full key, a unique prefix, or the shortened form restore --list prints (head…tail). */
export function keyMatcher(typed: string): (key: string) => boolean {
  const cut = typed.indexOf('…');
  if (cut >= 0) {
    const head = typed.slice(0, cut);
    const tail = typed.slice(cut + 1);
    return (k) => k.length >= head.length + tail.length && k.startsWith(head) && k.endsWith(tail);
  }
  return (k) => k.startsWith(typed);
}

/**
 * KEY as the one-session commands (pin, unpin, show, delete, export) take it: the full key, a unique
 * prefix, or the shortened form the tables print (`head…tail`, see shortKey). The same key in two
 * agents' folders needs --agent. Anything else is refused with exit 2, naming the candidates (cli.ts prints
 * messages with control characters escaped).
 */
export interface KeyCandidate {
  agent: string;
  key: string;
}

const SHOWN = 10;

function listed<T extends KeyCandidate>(xs: readonly T[]): string {
  const names = xs.slice(0, SHOWN).map((x) => `${x.agent} ${x.key}`);
  return names.join(', ') + (xs.length > SHOWN ? `, and ${xs.length - SHOWN} more` : '');
}

/** The one candidate `typed` names (exact key first, then a unique prefix or shortened form). */
export function resolveSessionKey<T extends KeyCandidate>(
  typed: string,
  candidates: readonly T[],
  o: { agent?: string; where: string; listHint: string },
): T {
  if (typed === '')
    throw new GuardError('KEY is empty', { exitCode: ExitCode.USAGE, hint: 'give a session key or its prefix' });
  const pool = o.agent === undefined ? candidates : candidates.filter((c) => c.agent === o.agent);
  if (o.agent !== undefined && pool.length === 0 && !candidates.some((c) => c.agent === o.agent))
    throw new GuardError(`no agent ${JSON.stringify(o.agent)} has sessions in ${o.where}`, {
      exitCode: ExitCode.USAGE,
      hint: o.listHint,
    });
  const exact = pool.filter((c) => c.key === typed);
  const match = keyMatcher(typed);
  const hits = exact.length > 0 ? exact : pool.filter((c) => match(c.key));
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0)
    throw new GuardError(`no session key ${JSON.stringify(typed)} (nor one starting so) in ${o.where}`, {
      exitCode: ExitCode.USAGE,
      hint: o.listHint,
    });
  const sorted = [...hits].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.agent < b.agent ? -1 : 1));
  const sameKey = sorted.every((h) => h.key === sorted[0]!.key);
  throw new GuardError(`${JSON.stringify(typed)} is ambiguous: it names ${hits.length} sessions: ${listed(sorted)}`, {
    exitCode: ExitCode.USAGE,
    hint: sameKey ? 'add --agent NAME' : 'give more of the key (or --agent NAME)',
  });
}

/** The sessions of an inventory as candidates (an unreadable meta has no key and cannot be named). */
export function sessionCandidates(sessions: readonly SessionRecord[]): (KeyCandidate & { session: SessionRecord })[] {
  const out: (KeyCandidate & { session: SessionRecord })[] = [];
  for (const s of sessions) if (s.key !== null) out.push({ agent: s.agent, key: s.key, session: s });
  return out;
}
