import { basename } from 'node:path';
import { ExitCode, GuardError } from '../errors.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { instantMs } from '../picoclaw/time.js';
import { keyMatcher } from '../picoclaw/session-key.js';
import type { ArchiveInfo } from './fields.js';

/*
 * The lives of a key (./restore.ts): which archive a folder restores, how the others are told,
 * the command that restores one; and the key a user types.
 */

/** The one key `typed` names among `keys`: exact, else a unique prefix; exit 2 when none or several. */
export function resolveKey(typed: string, keys: Iterable<string>, where: string): string {
  const all = [...new Set(keys)];
  if (all.includes(typed)) return typed;
  const m = keyMatcher(typed);
  const hits = all.filter(m).sort();
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0)
    throw new GuardError(`no session key starts with ${JSON.stringify(typed)} in ${where}`, {
      exitCode: ExitCode.USAGE,
      path: where,
      hint: 'run restore --list to see the keys',
    });
  throw new GuardError(
    `${JSON.stringify(typed)} matches ${hits.length} keys: ${hits.slice(0, 8).join(', ')}` +
      `${hits.length > 8 ? ', ...' : ''}`,
    {
      exitCode: ExitCode.USAGE,
      path: where,
      hint: 'give more of the key',
    },
  );
}

const shellWord = (s: string) => (/^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The command that restores one archive into a home, beside what is there. */
export function restoreCommand(archive: string, home: PicoClawHome | null, beside: boolean): string {
  return (
    `picoclaw-guard restore ${shellWord(archive)}` +
    (home ? ` --home ${shellWord(home.home)}` : '') +
    (beside ? ' --beside' : '')
  );
}

export function lifeText(i: ArchiveInfo): string {
  const l = i.life;
  const whole = l.complete
    ? 'complete'
    : `incomplete: only its meta (the meta counts ${l.metaCount ?? '?'} messages; the .jsonl was already ` +
      `gone when it was archived)`;
  return `archived ${i.archivedAt}, ${l.messages} messages, ${l.bytes} bytes, ${whole}`;
}

export const later = (a: ArchiveInfo, b: ArchiveInfo) =>
  instantMs(a.archivedAt) - instantMs(b.archivedAt) || (basename(a.path) < basename(b.path) ? -1 : 1);

/** The life a folder restores: the latest complete one (a conversation: the latest). */
export function choose(lives: ArchiveInfo[]): ArchiveInfo | null {
  const sorted = [...lives].sort((a, b) => later(b, a));
  if (sorted[0]!.kind === 'conversation') return sorted[0]!;
  return sorted.find((i) => i.life.complete) ?? null;
}

/** Why a life was not the one chosen, compared with the chosen. */
export function otherReason(i: ArchiveInfo, chosen: ArchiveInfo | null): string {
  const what = lifeText(i);
  if (!chosen) return what;
  const when = later(i, chosen) < 0 ? 'an earlier life' : 'a later life';
  const same =
    !i.life.complete && i.life.metaCreatedAt !== null && i.life.metaCreatedAt === chosen.life.metaCreatedAt
      ? ' (the same life as the chosen archive, archived again after an interrupted deletion)'
      : '';
  const longer =
    i.life.messages > chosen.life.messages
      ? `; it holds more messages than the latest complete life (${chosen.life.messages})`
      : '';
  return `${when}${same}: ${what}${longer}`;
}
