import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tryLock } from '../../src/io/lock.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { lockPathFor } from '../../src/state/pass-lock.js';
import { inspectArchive } from '../../src/archive/read.js';
import { restoreArchives, type RestoreResult } from '../../src/archive/restore.js';
import { RESTORE_STEPS, RESTORE_TMP_PREFIX, type RestoreStep } from '../../src/archive/restore-write.js';
import { live, prune, sessionFiles, world, type World } from '../support/restore-world.js';

/**
 * Restore against kills and full disks, in-process. A kill is simulated exactly: at the chosen
 * step the hook copies the sessions folder and the state folder as they are (every system call
 * before the step done, none after: the writing is synchronous), then throws; once the run has
 * unwound, both folders are put back as copied, which is what SIGKILL would have left (the pass
 * lock is the kernel's, released either way). A full disk is an ENOSPC thrown at the step, handled
 * as the real error would be. test/safety/restore-crash.test.ts kills a real process.
 */
const KEY = 'sk_v1_prop';
const BASE = KEY;

class Killed extends Error {}

function copyTree(from: string, to: string, skip: (n: string) => boolean): void {
  rmSync(to, { recursive: true, force: true });
  mkdirSync(to, { recursive: true });
  if (!existsSync(from)) return;
  for (const n of readdirSync(from)) if (!skip(n)) copyFileSync(join(from, n), join(to, n));
}
const notSession = (n: string) => n.startsWith('seahorse');

/** Put a folder back as it was copied (seahorse.db aside: restore never touches it). */
function putBack(copy: string, dir: string): void {
  for (const n of readdirSync(dir)) if (!notSession(n)) rmSync(join(dir, n));
  for (const n of readdirSync(copy)) copyFileSync(join(copy, n), join(dir, n));
}

type Fault = { kind: 'kill' | 'enospc'; step: RestoreStep; nth: number } | null;

async function run(w: World, path: string, fault: Fault, beside = false): Promise<RestoreResult | 'killed'> {
  let seen = 0;
  let killed = false;
  const snap = join(w.root, 'snap');
  try {
    // The run may go on after the throw (a session's failure does not stop the others): what it
    // does after the kill is undone by putting the copies back.
    const r = await restoreArchives(path, {
      home: discoverHome({ home: w.home }),
      list: false,
      beside,
      stateDir: w.state,
      holdDays: 7,
      nowMs: Date.parse('2026-12-01T00:00:00Z'),
      onStep: (s) => {
        if (!fault || s !== fault.step || ++seen !== fault.nth) return;
        if (fault.kind === 'enospc')
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        copyTree(w.sessionsDir, join(snap, 'sessions'), notSession);
        copyTree(w.state, join(snap, 'state'), () => false);
        killed = true;
        throw new Killed();
      },
    });
    return killed ? 'killed' : r;
  } catch (err) {
    if (!(err instanceof Killed)) throw err;
    return 'killed';
  } finally {
    if (existsSync(join(snap, 'sessions'))) {
      putBack(join(snap, 'sessions'), w.sessionsDir);
      mkdirSync(w.state, { recursive: true });
      putBack(join(snap, 'state'), w.state);
      rmSync(snap, { recursive: true, force: true });
    }
  }
}

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

/** The key's files: both, neither, or a meta alone (a life archived with no message); never a .jsonl alone. */
function keyState(w: World): { jsonl: string | null; meta: string | null } {
  const p = (s: string) => join(w.sessionsDir, `${BASE}${s}`);
  return {
    jsonl: existsSync(p('.jsonl')) ? sha(p('.jsonl')) : null,
    meta: existsSync(p('.meta.json')) ? sha(p('.meta.json')) : null,
  };
}

type Act =
  | { t: 'comeBack'; lines: number; metaOnly: boolean }
  | { t: 'prune' }
  | { t: 'restore'; fault: Fault; folder: boolean; beside: boolean };

const step = fc.constantFrom(...RESTORE_STEPS.filter((s) => s !== 'holds'));
const act: fc.Arbitrary<Act> = fc.oneof(
  fc.record({ t: fc.constant('comeBack' as const), lines: fc.integer({ min: 1, max: 4 }), metaOnly: fc.boolean() }),
  fc.constant({ t: 'prune' as const }),
  fc.record({
    t: fc.constant('restore' as const),
    fault: fc.option(
      fc.record({
        kind: fc.constantFrom('kill' as const, 'enospc' as const),
        step: fc.constantFrom(...RESTORE_STEPS),
        nth: fc.constant(1),
      }),
      { nil: null },
    ),
    folder: fc.boolean(),
    beside: fc.boolean(),
  }),
);
void step;

describe('restore: kills and full disks at every step', () => {
  it('a rerun after a kill or ENOSPC at any step converges; a .jsonl is never left without its meta', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(act, { minLength: 2, maxLength: 7 }), async (acts) => {
        const w = world();
        let day = 1;
        const archives = new Map<string, string>();
        for (const a of acts) {
          if (a.t === 'comeBack') {
            // The key comes back only when it is gone (PicoClaw would append to a session that is there).
            if (keyState(w).meta === null && keyState(w).jsonl === null)
              live(w, KEY, a.lines, `2026-07-${String(day).padStart(2, '0')}`, { metaOnly: a.metaOnly });
          } else if (a.t === 'prune') {
            for (const p of await prune(w, `2026-11-${String(day).padStart(2, '0')}T00:00:00Z`))
              archives.set(p, sha(p));
          } else if (archives.size > 0) {
            const files = [...archives.keys()];
            const path = a.folder ? w.archive : files[day % files.length]!;
            const before = keyState(w);
            const r = await run(w, path, a.fault, a.beside);
            const after = keyState(w);
            // A full disk (or a failure) leaves it all or nothing, and no temp file.
            if (a.fault?.kind === 'enospc' && a.fault.step !== 'holds') {
              expect(readdirSync(w.sessionsDir).filter((n) => n.startsWith(RESTORE_TMP_PREFIX))).toEqual([]);
            }
            // What PicoClaw lists (a meta) is never a session whose .jsonl is still being written.
            if (after.meta !== null && before.meta === null) {
              const info = await Promise.all(files.map((f) => inspectArchive(f)));
              const lives = info.filter((i) => i.files.find((f) => f.role === 'meta')?.sha256 === after.meta);
              if (lives.length > 0) {
                const jsonl = lives[0]!.files.find((f) => f.role === 'jsonl');
                expect(after.jsonl).toBe(jsonl ? jsonl.sha256 : null);
              }
            }
            if (r === 'killed' || a.fault?.kind === 'enospc') {
              // The rerun finishes what the first run chose.
              const again = await run(w, path, null, a.beside);
              expect(again).not.toBe('killed');
              expect(readdirSync(w.sessionsDir).filter((n) => n.startsWith(RESTORE_TMP_PREFIX))).toEqual([]);
            }
            // Each session the restore wrote is one archived life: its .jsonl is an archive's, whole.
            const jsonls = new Set<string | null>();
            for (const i of await Promise.all(files.map((f) => inspectArchive(f))))
              jsonls.add(i.files.find((f) => f.role === 'jsonl')?.sha256 ?? null);
            for (const [n, h] of sessionFiles(w.sessionsDir)) {
              if (!n.endsWith('.meta.json') || (n === `${BASE}.meta.json` && h === before.meta)) continue;
              const j = join(w.sessionsDir, n.replace(/\.meta\.json$/, '.jsonl'));
              expect(jsonls.has(existsSync(j) ? sha(j) : null), `${n} after ${JSON.stringify(a)}`).toBe(true);
            }
          }
          day++;
          // Never a .jsonl without its meta, outside a run.
          for (const n of readdirSync(w.sessionsDir))
            if (n.endsWith('.jsonl'))
              expect(existsSync(join(w.sessionsDir, n.replace(/\.jsonl$/, '.meta.json')))).toBe(true);
          expect(readdirSync(w.sessionsDir).filter((n) => n.startsWith(RESTORE_TMP_PREFIX))).toEqual([]);
          // Every archive stays as written, and restorable.
          for (const [p, h] of archives) {
            expect(sha(p)).toBe(h);
            await expect(inspectArchive(p)).resolves.toBeTruthy();
          }
        }
        // A complete session restored from an archive holds exactly one life's files.
        const end = sessionFiles(w.sessionsDir);
        for (const [n] of end) expect(n.startsWith('.')).toBe(false);
      }),
      { numRuns: 400 },
    );
    // 50-70 s in CI beside the other suites: ten times that before a slow machine fails it.
  }, 600_000);

  it('finishes what the earlier release left when killed between its links: a .jsonl, no meta, two temps', async () => {
    const w = world();
    live(w, KEY, 3, '2026-07-01');
    const [a] = await prune(w, '2026-11-01T00:00:00Z');
    const info = await inspectArchive(a!);
    // Restore once, then take it back to what a kill between the two link() calls left.
    expect((await run(w, a!, null)) as RestoreResult).toBeTruthy();
    const jsonl = join(w.sessionsDir, `${BASE}.jsonl`);
    const meta = join(w.sessionsDir, `${BASE}.meta.json`);
    const metaBytes = readFileSync(meta);
    linkSync(jsonl, join(w.sessionsDir, '.tmp-picoclaw-guard-restore-4242-0000aaaa'));
    writeFileSync(join(w.sessionsDir, '.tmp-picoclaw-guard-restore-4242-0000bbbb'), metaBytes);
    rmSync(meta);
    const r = (await run(w, a!, null)) as RestoreResult;
    expect(r.entries[0]).toMatchObject({ action: 'restored', resumed: 'finished', files: [meta] });
    expect(r.tempsRemoved).toBe(2);
    expect(readFileSync(meta)).toEqual(metaBytes);
    expect(sha(jsonl)).toBe(info.files.find((f) => f.role === 'jsonl')!.sha256);
    expect(readdirSync(w.sessionsDir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('while a pass holds the lock of the home, restore writes nothing and says so (exit 4)', async () => {
    const w = world();
    live(w, KEY, 2, '2026-07-01');
    const [a] = await prune(w, '2026-11-01T00:00:00Z');
    const home = discoverHome({ home: w.home });
    const held = tryLock(lockPathFor(home, w.state), 'prune pid 1');
    expect(held.ok).toBe(true);
    try {
      await expect(restoreArchives(a!, { home, list: false, stateDir: w.state, holdDays: 7 })).rejects.toMatchObject({
        exitCode: 4,
        message: expect.stringMatching(/a prune pass or restore holds the lock/),
      });
      expect(readdirSync(w.sessionsDir).filter((n) => n.includes(KEY))).toEqual([]);
      expect(existsSync(join(w.state, 'restore-holds.json'))).toBe(false);
    } finally {
      if (held.ok) held.lock.release();
    }
    const r = (await run(w, a!, null)) as RestoreResult;
    expect(r.entries[0]!.action).toBe('restored');
  });
});
