import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { handHome, sanitize, writeSession } from './home.js';
import { downGateway } from './gateway-state.js';
import { tempDir } from './tmp.js';

/**
 * A home whose sessions are pruned into an archive folder, come back under the same key, and are
 * pruned again: the lives of a key, for the restore tests. Passes run in-process on a fixed clock.
 */
export const RECENT = { key: 'sk_v1_recent', updated: '2026-06-01T00:00:00Z' };
const env = { HOME: '/nowhere' };

export interface World {
  root: string;
  home: string;
  sessionsDir: string;
  archive: string;
  state: string;
}

export function world(): World {
  const root = tempDir('pcg-lives-');
  const home = join(root, 'home');
  const { sessionsDir } = handHome(home, [RECENT]);
  return { root, home, sessionsDir, archive: join(root, 'archive'), state: join(root, 'state') };
}

/** A life of a key: its files written as PicoClaw would, `lines` messages, last active on `day` (2026-MM-DD). */
export function live(w: World, key: string, lines: number, day: string, opts: { metaOnly?: boolean } = {}): void {
  const t = `${day}T10:00:00Z`;
  writeSession(w.sessionsDir, { key, lines, created: t, updated: t, aliases: [`agent:main:direct:${key}`] });
  if (opts.metaOnly) unlinkSync(join(w.sessionsDir, `${sanitize(key)}.jsonl`));
}

/** One prune pass with --archive at the given instant; returns the archives it wrote. */
export async function prune(w: World, nowIso: string): Promise<string[]> {
  const before = new Set(existsSync(w.archive) ? readdirSync(w.archive) : []);
  // The newest session is always kept: one just before the pass, so that the lives are not it.
  const t = new Date(Date.parse(nowIso) - 3_600_000).toISOString().replace('.000Z', 'Z');
  writeSession(w.sessionsDir, { key: RECENT.key, updated: t });
  const r = await runPrunePass({
    home: w.home,
    env,
    apply: true,
    clock: fixedClock(new Date(nowIso)),
    // Deletion mechanics, not the clock: the sessions here are old and silent, a shape the age check doubts.
    trustClock: true,
    stateDir: null,
    probe: downGateway,
    flags: { archive_dir: w.archive },
  });
  if (r.exit_code !== 0) throw new Error(`the pass exited ${r.exit_code}`);
  return readdirSync(w.archive)
    .filter((n) => !before.has(n))
    .map((n) => join(w.archive, n));
}

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** The session files of a sessions folder (seahorse and the recent session aside), by name, with their SHA-256. */
export function sessionFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of readdirSync(dir).sort()) {
    if (n.startsWith('seahorse') || n.startsWith('sk_v1_recent')) continue;
    out.set(n, n.startsWith('.') ? 'temp' : sha(readFileSync(join(dir, n))));
  }
  return out;
}
