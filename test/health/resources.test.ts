import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FreeSpaceReader } from '../../src/io/freespace.js';
import { findMount, parseMeminfo, readFilesystem, readResources } from '../../src/health/resources.js';
import { tempDir } from '../support/tmp.js';
import { board } from './boards.js';

describe('resources', () => {
  it('Pi 4: memory, swap, load, uptime, CPUs from procfs', () => {
    const b = board('pi4');
    expect(readResources(b.proc, b.sys)).toEqual({
      available: true,
      memory_total_bytes: 3884136 * 1024,
      memory_available_bytes: 3123456 * 1024,
      swap_total_bytes: 102396 * 1024,
      swap_free_bytes: 102396 * 1024,
      load_1m: 0.12,
      load_5m: 0.2,
      load_15m: 0.18,
      cpus_online: 4,
      uptime_seconds: 273600.42,
    });
  });

  it('Milk-V Duo: one CPU, ~486 MiB, no swap', () => {
    const b = board('milkv-duo');
    expect(readResources(b.proc, b.sys)).toMatchObject({
      cpus_online: 1,
      memory_total_bytes: 486 * 1024 * 1024,
      swap_total_bytes: 0,
    });
  });

  it('no readable procfs is "no data"', () => {
    const root = tempDir();
    expect(readResources(join(root, 'proc'), join(root, 'sys')).available).toBe(false);
  });

  it('parses meminfo units (kB lines and unit-less counters)', () => {
    const m = parseMeminfo('MemTotal:  1000 kB\nHugePages_Total:       0\nActive(anon):  5 kB\n');
    expect(m.get('MemTotal')).toBe(1024000);
    expect(m.get('HugePages_Total')).toBe(0);
    expect(m.get('Active(anon)')).toBe(5120);
  });
});

describe('file system of the home', () => {
  const fake: FreeSpaceReader = () => ({
    availableBytes: 5e9,
    totalBytes: 3e10,
    availableInodes: 900_000,
    totalInodes: 1_000_000,
  });
  const mounts =
    '/dev/root / ext4 rw,noatime 0 0\n/dev/sda1 /srv/data ext4 ro,relatime ' +
    '0 0\n/dev/sdb1 /srv/data\\040two vfat rw 0 0\n';

  it('finds the longest containing mount point, with octal escapes and ro', () => {
    expect(findMount(mounts, '/srv/data/picoclaw')).toEqual({
      mount_point: '/srv/data',
      fs_type: 'ext4',
      read_only: true,
    });
    expect(findMount(mounts, '/srv/data two/x')).toEqual({
      mount_point: '/srv/data two',
      fs_type: 'vfat',
      read_only: false,
    });
    expect(findMount(mounts, '/srv/database')).toEqual({ mount_point: '/', fs_type: 'ext4', read_only: false });
    expect(findMount('', '/x')).toBeNull();
  });

  it('measures the nearest existing folder when the home does not exist yet', () => {
    const root = tempDir();
    mkdirSync(join(root, 'proc'));
    writeFileSync(join(root, 'proc/mounts'), mounts);
    const seen: string[] = [];
    const r = readFilesystem(join(root, 'missing/.picoclaw'), join(root, 'proc'), (p) => (seen.push(p), fake(p)));
    expect(r).toMatchObject({
      available: true,
      free_bytes: 5e9,
      size_bytes: 3e10,
      free_inodes: 900_000,
      total_inodes: 1_000_000,
      mount_point: '/',
      read_only: false,
    });
    expect(seen).toEqual([realpathSync(root)]);
  });

  it('a failing statfs is "no data", not a crash', () => {
    const r = readFilesystem(tempDir(), '/nonexistent', () => {
      throw Object.assign(new Error('boom'), { code: 'EIO' });
    });
    expect(r).toEqual({ available: false, reason: 'statfs failed: EIO' });
  });
});
