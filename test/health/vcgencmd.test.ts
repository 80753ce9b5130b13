import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findVcgencmd, getThrottled, newVcgencmdCache, parseGetThrottled } from '../../src/health/vcgencmd.js';
import { tempDir } from '../support/tmp.js';

/** A fake vcgencmd: logs its arguments to `calls`, then runs `body`. */
function script(body: string): { path: string; calls: () => string[] } {
  const dir = tempDir();
  const log = join(dir, 'calls');
  const path = join(dir, 'vcgencmd');
  writeFileSync(path, `#!/bin/sh\necho "$#:$*" >> '${log}'\n${body}\n`);
  chmodSync(path, 0o755);
  return { path, calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []) };
}

describe('vcgencmd get_throttled', () => {
  it('parses the man page format, hex with 0x', () => {
    expect(parseGetThrottled('throttled=0x50005\n')).toBe(0x50005);
    expect(parseGetThrottled('throttled=0x0\n')).toBe(0);
    expect(parseGetThrottled('throttled=0xE0000')).toBe(0xe0000);
    expect(parseGetThrottled('throttled=50005')).toBeNull();
    expect(parseGetThrottled("Can't open device file: /dev/vcio")).toBeNull();
  });

  it('runs with exactly one argument, get_throttled (an extra one would clear the since-boot bits)', async () => {
    const s = script('echo throttled=0x50000');
    const r = await getThrottled(s.path, { cache: newVcgencmdCache() });
    expect(r).toEqual({ state: 'ok', word: 0x50000, error: null });
    expect(s.calls()).toEqual(['1:get_throttled']);
  });

  it('caches the answer for ttlMs and shares a call in flight', async () => {
    const s = script('sleep 0.1; echo throttled=0x0');
    const cache = newVcgencmdCache();
    let now = 1_000;
    const opts = { cache, ttlMs: 10_000, nowMs: () => now };
    await Promise.all([getThrottled(s.path, opts), getThrottled(s.path, opts)]);
    now += 9_999;
    await getThrottled(s.path, opts);
    expect(s.calls()).toHaveLength(1);
    now += 2;
    await getThrottled(s.path, opts);
    expect(s.calls()).toHaveLength(2);
  });

  it('times out instead of hanging', async () => {
    const s = script('exec sleep 5');
    const t0 = Date.now();
    const r = await getThrottled(s.path, { cache: newVcgencmdCache(), timeoutMs: 200 });
    expect(r.state).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('exit 255 "Can\'t open device file" is no_access (user not in the video group)', async () => {
    const s = script(`echo "Can't open device file: /dev/vcio_gencmd"; exit 255`);
    const r = await getThrottled(s.path, { cache: newVcgencmdCache() });
    expect(r.state).toBe('no_access');
    expect(r.error).toMatch(/video group/);
  });

  it('pre-2023 userland: "VCHI initialization failed" on stderr is no_access too', async () => {
    const s = script('echo "VCHI initialization failed" >&2; exit 255');
    expect((await getThrottled(s.path, { cache: newVcgencmdCache() })).state).toBe('no_access');
  });

  it('a firmware error or garbage output is an error state, not an exception', async () => {
    const s = script('echo \'error=1 error_msg="Command not registered"\'; exit 2');
    expect(await getThrottled(s.path, { cache: newVcgencmdCache() })).toMatchObject({
      state: 'error',
      error: expect.stringContaining('Command not registered'),
    });
    const g = script('echo hello');
    expect((await getThrottled(g.path, { cache: newVcgencmdCache() })).state).toBe('error');
  });

  it('a missing binary is not_found', async () => {
    expect((await getThrottled('/nonexistent/vcgencmd', { cache: newVcgencmdCache() })).state).toBe('not_found');
  });

  it('finds vcgencmd on PATH, skipping non-executable files', () => {
    const a = tempDir();
    const b = script('echo throttled=0x0');
    writeFileSync(join(a, 'vcgencmd'), 'not executable');
    expect(findVcgencmd({ PATH: `${a}:${join(b.path, '..')}` })).toBe(b.path);
    const legacy = ['/usr/bin/vcgencmd', '/opt/vc/bin/vcgencmd'].find((p) => existsSync(p)) ?? null;
    expect(findVcgencmd({ PATH: a })).toBe(legacy);
  });
});
