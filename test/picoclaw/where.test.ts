import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { discoverHome, placePaths } from '../../src/picoclaw/home.js';
import { outsideHomeRefusal } from '../../src/prune/pass.js';
import { requireRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * Invariant: a pass names every sessions folder and seahorse.db it works in by real path, and
 * marks exactly those that are not the home's own (an apply through an explicit --home refuses
 * them). The generator tries the shapes a workspace is named by (PicoClaw's default, an absolute
 * path, `~/...`, a symlink out of the home or into it) and the ways a home is reached (its own
 * path, a symlink, a bind mount of it, a `cp -a` copy): the copy must see the original's folders
 * as outside, the symlink and the bind mount must not.
 */
type Kind = 'default' | 'abs-inside' | 'abs-outside' | 'tilde-inside' | 'tilde-outside' | 'symlink-out' | 'symlink-in';
type Via = 'direct' | 'symlink' | 'copy' | 'bind';
const KINDS: Kind[] = [
  'default',
  'abs-inside',
  'abs-outside',
  'tilde-inside',
  'tilde-outside',
  'symlink-out',
  'symlink-in',
];

/** A bind mount needs root and a mount namespace that allows it (not every container does). */
function canBind(): boolean {
  if (process.getuid?.() !== 0) return false;
  const a = tempDir('pcg-bind-');
  mkdirSync(join(a, 'src'));
  mkdirSync(join(a, 'dst'));
  const r = spawnSync('mount', ['--bind', join(a, 'src'), join(a, 'dst')], { stdio: 'ignore' });
  if (r.status !== 0) return false;
  spawnSync('umount', [join(a, 'dst')], { stdio: 'ignore' });
  return true;
}
const BIND = canBind();

function build(kinds: Kind[], via: Via) {
  const root = tempDir('pcg-where-');
  const user = join(root, 'user');
  const home = join(user, '.picoclaw');
  const other = join(root, 'other');
  mkdirSync(home, { recursive: true });
  mkdirSync(other, { recursive: true });
  const list = kinds.map((k, i) => {
    const id = i === 0 ? 'main' : `a${i}`;
    let workspace: string | undefined;
    if (k === 'abs-inside') workspace = join(home, `ws-${id}`);
    else if (k === 'abs-outside') workspace = join(other, `ws-${id}`);
    else if (k === 'tilde-inside') workspace = `~/.picoclaw/ws-${id}`;
    else if (k === 'tilde-outside') workspace = `~/elsewhere/ws-${id}`;
    else if (k === 'symlink-out') {
      mkdirSync(join(other, `target-${id}`, 'sessions'), { recursive: true });
      symlinkSync(join(other, `target-${id}`), join(home, `link-${id}`));
      workspace = join(home, `link-${id}`);
    } else if (k === 'symlink-in') {
      mkdirSync(join(home, `real-${id}`, 'sessions'), { recursive: true });
      symlinkSync(join(home, `real-${id}`), join(other, `link-${id}`));
      workspace = join(other, `link-${id}`);
    }
    return { id, ...(workspace ? { workspace } : {}) };
  });
  writeFileSync(join(home, 'config.json'), JSON.stringify({ agents: { list } }));
  mkdirSync(join(home, 'workspace', 'sessions'), { recursive: true });
  let given = home;
  let cleanup = () => {};
  if (via === 'symlink') {
    given = join(root, 'homelink');
    symlinkSync(home, given);
  } else if (via === 'copy') {
    given = join(root, 'copy');
    execFileSync('cp', ['-a', home, given]);
  } else if (via === 'bind') {
    given = join(root, 'bound');
    mkdirSync(given);
    execFileSync('mount', ['--bind', home, given]);
    cleanup = () => execFileSync('umount', [given]);
  }
  return { user, given, cleanup };
}

/** The model: a folder is the home's own when its workspace is inside the home and the home is not a copy. */
function expectedInside(k: Kind, via: Via): boolean {
  if (k === 'default') return true;
  if (k === 'abs-outside' || k === 'tilde-outside' || k === 'symlink-out') return false;
  return via !== 'copy';
}

describe('where a pass works: real paths, and what lies outside the home', () => {
  it('as root, the shapes include a bind mount of the home (the one way to it only device and inode tell)', (ctx) => {
    requireRoot(ctx, 'bind-mount a folder (mount --bind)');
    if (!BIND) ctx.skip();
    expect(BIND).toBe(true);
  });

  it(`matches the model for every shape of workspace and every way to the home${BIND ? '' : ' (bind mounts skipped: need root and mount)'}`, () => {
    const vias: Via[] = BIND ? ['direct', 'symlink', 'copy', 'bind'] : ['direct', 'symlink', 'copy'];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...KINDS), { minLength: 1, maxLength: 3 }),
        fc.constantFrom(...vias),
        (kinds, via) => {
          const b = build(kinds, via);
          try {
            const h = discoverHome({ home: b.given, env: { HOME: b.user } });
            const w = placePaths(h);
            const sessions = w.paths.filter((p) => p.kind === 'sessions');
            // One entry per distinct folder: map each agent to its entry.
            kinds.forEach((k, i) => {
              const id = i === 0 ? 'main' : `a${i}`;
              const p = sessions.find((s) => s.agents.includes(id))!;
              expect(p, id).toBeDefined();
              expect({ id, k, via, inside: p.inside }).toEqual({ id, k, via, inside: expectedInside(k, via) });
              // A real path: no symlink left in it.
              expect(p.real.includes('link-')).toBe(false);
            });
            // seahorse.db lives in the default agent's (main's) folder: it shares its verdict.
            const db = w.paths.find((p) => p.kind === 'seahorse.db')!;
            expect(db.inside).toBe(expectedInside(kinds[0]!, via));
            expect(w.outside).toBe(w.paths.filter((p) => !p.inside).length);
            // The refusal speaks exactly when something is outside, and names the first such real path.
            const why = outsideHomeRefusal(w);
            if (w.outside === 0) expect(why).toBeNull();
            else expect(why).toContain(w.paths.find((p) => !p.inside)!.real);
          } finally {
            b.cleanup();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
