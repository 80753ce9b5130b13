import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { fileId } from '../../src/io/file-id.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { refuseArchiveInSessions } from '../../src/prune/apply/archive-step.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';
import { writeSession } from '../support/home.js';
import { isRoot, requireRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * a folder is one folder however it is reached.
 *
 * Invariant: every session file on disk is one session of the inventory, once, whatever the
 * paths the configuration reaches its folder by: a symlinked workspace, two agents configured
 * with two spellings of one folder, a bind mount of a sessions folder at a second workspace.
 * So max_sessions counts each session once, and a pass deletes each at most once.
 *
 * realpath(3) resolves symlinks and spellings but not bind mounts (a bind mount has two real
 * paths): only device and inode tell. The bind-mount shapes need root (mount --bind); without
 * root they are skipped, saying so, and the symlink and spelling shapes still run.
 */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const ROOT = isRoot();

function mountBind(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  execFileSync('mount', ['--bind', from, to], { stdio: 'ignore' });
}

function umount(to: string): void {
  try {
    execFileSync('umount', [to], { stdio: 'ignore' });
  } catch {
    execFileSync('umount', ['-l', to], { stdio: 'ignore' });
  }
}

/** n sessions in dir, one an hour before NOW, keys prefixed. */
function sessions(dir: string, n: number, prefix: string): void {
  for (let i = 0; i < n; i++)
    writeSession(dir, {
      key: `sk_v1_${prefix}${String(i).padStart(3, '0')}`,
      updated: new Date(NOW.getTime() - (i + 1) * 3_600_000).toISOString(),
    });
}

const metas = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.meta.json')).length;

/** How an agent's workspace reaches a physical folder. */
type Reach = 'own' | 'symlink' | 'spelling' | 'bind';

describe('a folder is one folder however it is reached', () => {
  it('property: each session file counted once, for symlinked, respelled and bind-mounted workspaces', () => {
    const reaches: Reach[] = ROOT ? ['own', 'symlink', 'spelling', 'bind'] : ['own', 'symlink', 'spelling'];
    if (!ROOT) console.warn('same-folder property: bind mounts left out (mount --bind needs root)');
    fc.assert(
      fc.property(
        // Physical folders with their session counts, and agents each reaching one of them one way.
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.record({ folder: fc.nat(), reach: fc.constantFrom(...reaches) }), { minLength: 1, maxLength: 5 }),
        (counts, agentsSpec) => {
          const root = tempDir('pcg-same-');
          const home = join(root, 'home');
          mkdirSync(home, { recursive: true });
          const physical = counts.map((n, f) => {
            const ws = join(root, `phys-${f}`);
            mkdirSync(join(ws, 'sessions'), { recursive: true });
            sessions(join(ws, 'sessions'), n, `f${f}_`);
            return ws;
          });
          const mounts: string[] = [];
          try {
            const list = agentsSpec.map((a, i) => {
              const target = physical[a.folder % physical.length]!;
              let ws = target;
              if (a.reach === 'symlink') {
                ws = join(root, `link-${i}`);
                symlinkSync(target, ws);
              } else if (a.reach === 'spelling') ws = `${target}/../${target.split('/').pop()}/.`;
              else if (a.reach === 'bind') {
                ws = join(root, `bind-${i}`);
                mountBind(target, ws);
                mounts.push(ws);
              }
              return { id: `a${i}`, workspace: ws, ...(i === 0 ? { default: true } : {}) };
            });
            writeFileSync(join(home, 'config.json'), JSON.stringify({ agents: { list } }));
            const h = discoverHome({ home, env });
            const inv = buildInventory(h, { skipSeahorse: true });
            // The folders the agents reach, each once, and every meta on them once.
            const reached = new Set(agentsSpec.map((a) => a.folder % physical.length));
            const expected = [...reached].reduce((n, f) => n + counts[f]!, 0);
            expect(new Set(h.sessionsDirs.map((d) => fileId(d.dir))).size).toBe(h.sessionsDirs.length);
            expect(h.sessionsDirs.length).toBe(reached.size);
            expect(inv.sessions.length).toBe(expected);
            expect(new Set(inv.sessions.map((s) => s.files.meta && fileId(s.files.meta.path))).size).toBe(expected);
          } finally {
            for (const m of mounts.reverse()) umount(m);
          }
        },
      ),
      { numRuns: ROOT ? 30 : 60, seed: 2602 },
    );
  });

  it('a sessions folder bind-mounted at a second workspace: 30 sessions, cap 25, 25 left (not 12)', async (ctx) => {
    requireRoot(ctx, 'bind-mount a sessions folder at a second workspace (mount --bind)');
    const root = tempDir('pcg-bind-');
    const home = join(root, 'home');
    const ws = join(home, 'workspace');
    const second = join(home, 'workspace-ops');
    mkdirSync(join(ws, 'sessions'), { recursive: true });
    sessions(join(ws, 'sessions'), 30, 's');
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({
        agents: {
          list: [
            { id: 'main', default: true },
            { id: 'ops', workspace: second },
          ],
        },
      }),
    );
    mountBind(ws, second);
    try {
      const r = await runPrunePass({
        home,
        env,
        apply: true,
        clock: fixedClock(NOW),
        stateDir: null,
        probe: downGateway,
        flags: { max_sessions: 25, max_age_days: 0, max_db_size_mb: 0 },
      });
      expect(r.totals.sessions).toBe(30);
      expect(metas(join(ws, 'sessions'))).toBe(25);
    } finally {
      umount(second);
    }
  });

  it('an archive folder inside a bind mount of a sessions folder is refused like one inside it', (ctx) => {
    requireRoot(ctx, 'bind-mount a sessions folder elsewhere (mount --bind)');
    const root = tempDir('pcg-bind-arch-');
    const home = join(root, 'home');
    mkdirSync(join(home, 'workspace', 'sessions'), { recursive: true });
    writeFileSync(join(home, 'config.json'), '{}');
    const elsewhere = join(root, 'elsewhere');
    mountBind(join(home, 'workspace', 'sessions'), elsewhere);
    try {
      const h = discoverHome({ home, env });
      expect(() => refuseArchiveInSessions(join(elsewhere, 'archive'), h)).toThrow(/inside the sessions folder/);
    } finally {
      umount(elsewhere);
    }
  });

  it('a hard-linked seahorse.db is one database: one identity from both names', () => {
    const d = tempDir();
    writeFileSync(join(d, 'seahorse.db'), 'x');
    linkSync(join(d, 'seahorse.db'), join(d, 'other.db'));
    symlinkSync(join(d, 'other.db'), join(d, 'via-link.db'));
    const id = fileId(join(d, 'seahorse.db'));
    expect(id).not.toBeNull();
    expect(fileId(join(d, 'other.db'))).toBe(id);
    expect(fileId(join(d, 'via-link.db'))).toBe(id);
    expect(fileId(join(d, 'missing.db'))).toBeNull();
  });
});
