import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBoard } from '../../src/health/board.js';
import { readThrottle } from '../../src/health/throttle.js';
import { LATCH_FILE, updateLatch } from '../../src/state/uvlatch.js';
import { newVcgencmdCache } from '../../src/health/vcgencmd.js';
import { tempDir } from '../support/tmp.js';
import { board, type BoardName } from './boards.js';

const T1 = new Date('2026-06-13T18:00:00Z');
const T2 = new Date('2026-06-13T19:00:00Z');

/** A fresh collector each time: nothing survives in memory, only in the state folder. */
function collect(name: BoardName, stateDir: string, now: Date) {
  const b = board(name);
  const bd = readBoard(b.sys, b.proc);
  return readThrottle({
    sysRoot: b.sys,
    procRoot: b.proc,
    vcgencmd: b.vcgencmd,
    cache: newVcgencmdCache(),
    stateDir,
    now,
    board: bd.available ? bd : null,
  });
}

describe('under-voltage latch', () => {
  it('a healthy board writes nothing', async () => {
    const dir = tempDir();
    await collect('pi4', dir, T1);
    expect(existsSync(join(dir, LATCH_FILE))).toBe(false);
  });

  it('is set on a sighting and survives into a new collector after the kernel cleared the alarm', async () => {
    const dir = tempDir();
    await collect('pi4-undervoltage', dir, T1);
    const rec = JSON.parse(readFileSync(join(dir, LATCH_FILE), 'utf8'));
    expect(rec).toEqual({
      under_voltage_seen: true,
      first_seen_at: T1.toISOString(),
      boot_id: '3f1c2a9e-5b7d-4c1e-9a0f-2d4b6c8e0a11',
      boot_seen_at: T1.toISOString(),
      source: 'vcgencmd',
    });
    // Same boot (same boot_id), the firmware now says 0x0 and the alarm is 0.
    const later = await collect('pi4', dir, T2);
    expect(later.available && later.under_voltage).toMatchObject({
      now: false,
      since_boot: true,
      latch: { seen: true, this_boot: true, written: false },
    });
  });

  it('is not rewritten while nothing changes (same inode, same mtime, same bytes)', async () => {
    const dir = tempDir();
    await collect('pi4-undervoltage', dir, T1);
    const p = join(dir, LATCH_FILE);
    const before = statSync(p);
    const text = readFileSync(p, 'utf8');
    await new Promise((r) => setTimeout(r, 20));
    for (const name of ['pi4-undervoltage', 'pi4', 'pi4-undervoltage'] as const) {
      const r = await collect(name, dir, T2);
      expect(r.available && r.under_voltage.latch.written).toBe(false);
    }
    const after = statSync(p);
    expect(after.ino).toBe(before.ino); // writeFileAtomic renames: a rewrite would change the inode
    expect(after.mtimeMs).toBe(before.mtimeMs);
    expect(readFileSync(p, 'utf8')).toBe(text);
  });

  it('a sighting in a new boot rewrites once, keeping the first sighting', () => {
    const dir = tempDir();
    updateLatch({ stateDir: dir, observed: true, bootId: 'boot-a', now: T1, source: 'vcgencmd' });
    const v = updateLatch({ stateDir: dir, observed: true, bootId: 'boot-b', now: T2, source: 'rpi_volt' });
    expect(v).toMatchObject({
      seen: true,
      this_boot: true,
      written: true,
      first_seen_at: T1.toISOString(),
      boot_seen_at: T2.toISOString(),
    });
    expect(updateLatch({ stateDir: dir, observed: true, bootId: 'boot-b', now: T2, source: 'rpi_volt' }).written).toBe(
      false,
    );
  });

  it('after a reboot without a new sighting it says "an earlier boot"', () => {
    const dir = tempDir();
    updateLatch({ stateDir: dir, observed: true, bootId: 'boot-a', now: T1, source: 'vcgencmd' });
    expect(
      updateLatch({ stateDir: dir, observed: false, bootId: 'boot-b', now: T2, source: 'vcgencmd' }),
    ).toMatchObject({ seen: true, this_boot: false, written: false });
  });

  it('a foreign file is reported, then replaced at the next sighting', () => {
    const dir = tempDir();
    writeFileSync(join(dir, LATCH_FILE), 'garbage');
    expect(updateLatch({ stateDir: dir, observed: false, bootId: 'b', now: T1, source: 'x' })).toMatchObject({
      seen: false,
      error: expect.any(String),
    });
    expect(updateLatch({ stateDir: dir, observed: true, bootId: 'b', now: T1, source: 'x' })).toMatchObject({
      seen: true,
      written: true,
      error: null,
    });
  });

  it('an unwritable state folder keeps the reading and reports the error', () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, '');
    expect(updateLatch({ stateDir: file, observed: true, bootId: 'b', now: T1, source: 'x' })).toMatchObject({
      seen: true,
      written: false,
      error: expect.stringContaining('cannot write'),
    });
  });
});
