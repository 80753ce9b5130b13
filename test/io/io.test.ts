import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/io/atomic.js';
import { statfsFreeSpace } from '../../src/io/freespace.js';
import { rehearsedFreeSpace } from '../../src/health/rehearsed-free-space.js';
import { tryLock } from '../../src/io/lock.js';
import { resolveStateDir } from '../../src/io/statedir.js';
import { GuardError } from '../../src/errors.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { lockPathFor } from '../../src/state/pass-lock.js';
import { tempDir } from '../support/tmp.js';

describe('writeFileAtomic', () => {
  it('replaces a file whole and leaves no temp file behind', () => {
    const d = tempDir();
    const p = join(d, 'state.json');
    writeFileAtomic(p, 'one');
    writeFileAtomic(p, 'two');
    expect(readFileSync(p, 'utf8')).toBe('two');
    expect(readdirSync(d)).toEqual(['state.json']);
  });

  it('with noOverwrite refuses an existing target and keeps it', () => {
    const d = tempDir();
    const p = join(d, 'x.jsonl');
    writeFileSync(p, 'theirs');
    expect(() => writeFileAtomic(p, 'mine', { noOverwrite: true, tmpName: '.tmp-test' })).toThrow(/EEXIST/);
    expect(readFileSync(p, 'utf8')).toBe('theirs');
    expect(readdirSync(d)).toEqual(['x.jsonl']);
  });

  it('fails cleanly when the folder is missing', () => {
    expect(() => writeFileAtomic(join(tempDir(), 'no', 'such', 'file'), 'x')).toThrow(/ENOENT/);
  });
});

describe('the lock', () => {
  it('admits one holder at a time, and is free again once released', () => {
    const p = join(tempDir(), 'home.lock');
    const a = tryLock(p, 'a');
    expect(a.ok).toBe(true);
    const b = tryLock(p, 'b');
    expect(b.ok).toBe(false);
    if (!b.ok) expect(b.holder).toMatchObject({ pid: process.pid, command: 'a' });
    if (a.ok) a.lock.release();
    const c = tryLock(p, 'c');
    expect(c.ok).toBe(true);
    if (c.ok) c.lock.release();
  });

  it('a holder killed with SIGKILL cannot keep it', async () => {
    const p = join(tempDir(), 'home.lock');
    const lockModule = fileURLToPath(new URL('../../dist/src/io/lock.js', import.meta.url));
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { tryLock } = await import(${JSON.stringify(lockModule)}); const r = tryLock(${JSON.stringify(p)}` +
          `, 'child'); console.log(r.ok ? 'held' : 'busy'); setInterval(() => {},` +
          ` 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const busy = tryLock(p, 'me');
    expect(busy.ok).toBe(false);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const mine = tryLock(p, 'me');
    expect(mine.ok).toBe(true);
    if (mine.ok) mine.lock.release();
  });
});

describe('a lock file that is not a lock', () => {
  function guardError(fn: () => unknown): GuardError {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(GuardError);
      return err as GuardError;
    }
    throw new Error('expected a GuardError');
  }

  it('garbage is emptied in place (a lock holds no data) and the lock is taken', () => {
    const p = join(tempDir(), '.picoclaw-guard.lock');
    writeFileSync(p, 'this is not a database, just junk '.repeat(100));
    const ino = statSync(p).ino;
    const a = tryLock(p, 'a');
    expect(a.ok).toBe(true);
    expect(statSync(p).ino).toBe(ino);
    expect(tryLock(p, 'b').ok).toBe(false);
    if (a.ok) a.lock.release();
  });

  it('a symlink, a folder or a damaged SQLite database is left alone and named, with what to do', () => {
    const d = tempDir();
    const target = join(d, 'precious.txt');
    writeFileSync(target, "someone else's text, not a database");
    const link = join(d, 'link.lock');
    symlinkSync(target, link);
    const e1 = guardError(() => tryLock(link, 'a'));
    expect(e1.message).toContain(`the lock file ${link}`);
    expect(e1.hint).toMatch(/delete it/);
    expect(readFileSync(target, 'utf8')).toBe("someone else's text, not a database");

    const dir = join(d, 'dir.lock');
    mkdirSync(dir);
    expect(guardError(() => tryLock(dir, 'a')).message).toContain(`the lock file ${dir}`);

    const damaged = join(d, 'damaged.lock');
    const bytes = Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(200, 0xff)]);
    writeFileSync(damaged, bytes);
    expect(guardError(() => tryLock(damaged, 'a')).message).toBe(
      `the lock file ${damaged} is a damaged SQLite database`,
    );
    expect(readFileSync(damaged).equals(bytes)).toBe(true);
  });

  it('one lock per home: a symlinked path and the real path name the same lock', () => {
    const d = tempDir();
    const real = join(d, 'real-home');
    mkdirSync(join(real, 'workspace', 'sessions'), { recursive: true });
    symlinkSync(real, join(d, 'link-home'));
    const viaLink = discoverHome({ home: join(d, 'link-home'), env: {} });
    const viaReal = discoverHome({ home: real, env: {} });
    expect(lockPathFor(viaLink, join(d, 'state'))).toBe(lockPathFor(viaReal, join(d, 'state')));
    if (process.getuid?.() !== 0) {
      // A home this user cannot write: the lock moves to the state folder, still named from the real path.
      chmodSync(real, 0o555);
      try {
        mkdirSync(join(d, 'state'));
        const a = lockPathFor(viaLink, join(d, 'state'));
        expect(a.startsWith(join(d, 'state'))).toBe(true);
        expect(lockPathFor(viaReal, join(d, 'state'))).toBe(a);
      } finally {
        chmodSync(real, 0o755);
      }
    }
  });
});

describe('free space and the state folder', () => {
  it('reads the real file system, and health rehearses a full disk by path prefix', () => {
    const d = tempDir();
    const real = statfsFreeSpace(d);
    expect(real.availableBytes).toBeGreaterThan(0);
    const fake = rehearsedFreeSpace({ PICOGUARD_FAKE_FREE_BYTES: `${d}=1234` });
    expect(fake(d).availableBytes).toBe(1234);
    expect(fake('/').totalBytes).toBe(statfsFreeSpace('/').totalBytes);
    expect(fake('/').availableBytes).not.toBe(1234);
  });

  it('finds the state folder: flag, then systemd, then XDG, then ~/.local/state', () => {
    expect(resolveStateDir('/x', { STATE_DIRECTORY: '/var/lib/a' })).toBe('/x');
    expect(resolveStateDir(undefined, { STATE_DIRECTORY: '/var/lib/a:/var/lib/b' })).toBe('/var/lib/a');
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: '/s', HOME: '/h', PICOGUARD_NO_SYSTEM_STATE: '1' })).toBe(
      '/s/picoclaw-guard',
    );
    expect(resolveStateDir(undefined, { HOME: '/h', PICOGUARD_NO_SYSTEM_STATE: '1' })).toBe(
      '/h/.local/state/picoclaw-guard',
    );
  });
});
