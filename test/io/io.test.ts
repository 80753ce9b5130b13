import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/io/atomic.js';
import { freeSpaceFromEnv, statfsFreeSpace } from '../../src/io/freespace.js';
import { tryLock } from '../../src/io/lock.js';
import { resolveStateDir } from '../../src/io/statedir.js';
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
    const child = spawn(process.execPath, ['--input-type=module', '-e', `const { tryLock } = await import(${JSON.stringify(lockModule)}); const r = tryLock(${JSON.stringify(p)}, 'child'); console.log(r.ok ? 'held' : 'busy'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    const busy = tryLock(p, 'me');
    expect(busy.ok).toBe(false);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const mine = tryLock(p, 'me');
    expect(mine.ok).toBe(true);
    if (mine.ok) mine.lock.release();
  });
});

describe('free space and the state folder', () => {
  it('reads the real file system, and a test override by path prefix', () => {
    const d = tempDir();
    const real = statfsFreeSpace(d);
    expect(real.availableBytes).toBeGreaterThan(0);
    const fake = freeSpaceFromEnv({ PICOGUARD_FAKE_FREE_BYTES: `${d}=1234` });
    expect(fake(d).availableBytes).toBe(1234);
    expect(fake('/').totalBytes).toBe(statfsFreeSpace('/').totalBytes);
    expect(fake('/').availableBytes).not.toBe(1234);
  });

  it('finds the state folder: flag, then systemd, then XDG, then ~/.local/state', () => {
    expect(resolveStateDir('/x', { STATE_DIRECTORY: '/var/lib/a' })).toBe('/x');
    expect(resolveStateDir(undefined, { STATE_DIRECTORY: '/var/lib/a:/var/lib/b' })).toBe('/var/lib/a');
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: '/s', HOME: '/h', PICOGUARD_NO_SYSTEM_STATE: '1' })).toBe('/s/picoclaw-guard');
    expect(resolveStateDir(undefined, { HOME: '/h', PICOGUARD_NO_SYSTEM_STATE: '1' })).toBe('/h/.local/state/picoclaw-guard');
    void existsSync;
  });
});
