import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { errnoCode } from '../errors.js';
import type { FreeSpaceReader } from '../io/freespace.js';
import { onlineCpus } from './cpufreq.js';
import { readString } from './read.js';
import { noData, type Section } from './types.js';

/**
 * Memory, swap, load and uptime straight from procfs under --proc-root, and the file
 * system of the PicoClaw home through fs.statfs. systeminformation is not used here:
 * its mem() reads the same /proc/meminfo but cannot be pointed at a fixture root, and
 * its fsSize() spawns `df`
 * (docs/board-health.md#why-the-guard-reads-sysfs-itself-instead-of-systeminformation).
 */
export interface ResourcesReading {
  memory_total_bytes: number | null;
  /** MemAvailable: what can be had without swapping. */
  memory_available_bytes: number | null;
  swap_total_bytes: number | null;
  swap_free_bytes: number | null;
  load_1m: number | null;
  load_5m: number | null;
  load_15m: number | null;
  cpus_online: number | null;
  uptime_seconds: number | null;
}

export type Resources = Section<ResourcesReading>;

/** /proc/meminfo `Name:   123 kB` → bytes. */
export function parseMeminfo(text: string | null): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (text ?? '').split('\n')) {
    const m = /^([\w()]+):\s+(\d+)(\s+kB)?\s*$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]) * (m[3] ? 1024 : 1));
  }
  return out;
}

export function readResources(procRoot: string, sysRoot: string): Resources {
  const mem = parseMeminfo(readString(join(procRoot, 'meminfo')));
  // A missing file must read as null, not as Number('') === 0.
  const decimal = (s: string | undefined) => (s !== undefined && /^\d+(\.\d+)?$/.test(s) ? Number(s) : undefined);
  const load = (readString(join(procRoot, 'loadavg')) ?? '').split(/\s+/).slice(0, 3).map(decimal);
  const up = decimal((readString(join(procRoot, 'uptime')) ?? '').split(/\s+/)[0]);
  const cpus = onlineCpus(sysRoot).length;
  const num = (x: number | undefined) => (x !== undefined && Number.isFinite(x) ? x : null);
  const r: ResourcesReading = {
    memory_total_bytes: num(mem.get('MemTotal')),
    // Kernels before 3.14 have no MemAvailable: no guess is made from MemFree.
    memory_available_bytes: num(mem.get('MemAvailable')),
    swap_total_bytes: num(mem.get('SwapTotal')),
    swap_free_bytes: num(mem.get('SwapFree')),
    load_1m: load.length === 3 ? num(load[0]) : null,
    load_5m: load.length === 3 ? num(load[1]) : null,
    load_15m: load.length === 3 ? num(load[2]) : null,
    cpus_online: cpus > 0 ? cpus : null,
    uptime_seconds: num(up),
  };
  if (Object.values(r).every((v) => v === null)) return noData('nothing readable in meminfo, loadavg or uptime');
  return { available: true, ...r };
}

export interface FilesystemReading {
  /** The folder that was measured: the home, or its nearest existing parent. */
  path: string;
  mount_point: string | null;
  fs_type: string | null;
  /** Mounted read-only (ext4 remounts ro after errors: a dying SD card). */
  read_only: boolean | null;
  /** Bytes available to an unprivileged user (statfs bavail × bsize). */
  free_bytes: number;
  size_bytes: number;
  free_inodes: number | null;
  total_inodes: number | null;
}

export type Filesystem = Section<FilesystemReading>;

/** /proc/mounts encodes space, tab, newline and backslash as octal escapes. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The mount holding `path`: the longest mount point that contains it (the last mounted wins a tie). */
export function findMount(
  mountsText: string | null,
  path: string,
): { mount_point: string; fs_type: string; read_only: boolean } | null {
  let best: { mount_point: string; fs_type: string; read_only: boolean } | null = null;
  for (const line of (mountsText ?? '').split('\n')) {
    const f = line.split(' ');
    if (f.length < 4) continue;
    const mp = unescapeMount(f[1]!);
    const inside = mp === '/' || path === mp || path.startsWith(mp.endsWith(sep) ? mp : mp + sep);
    if (!inside) continue;
    if (best === null || mp.length >= best.mount_point.length) {
      best = { mount_point: mp, fs_type: f[2]!, read_only: f[3]!.split(',').includes('ro') };
    }
  }
  return best;
}

export function readFilesystem(path: string, procRoot: string, freeSpace: FreeSpaceReader): Filesystem {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  let real = p;
  try {
    real = realpathSync(p);
  } catch {
    // measured as given
  }
  let space;
  try {
    space = freeSpace(real);
  } catch (err) {
    return noData(`statfs failed: ${errnoCode(err) ?? 'error'}`);
  }
  const mount = findMount(readString(join(procRoot, 'mounts')), real);
  return {
    available: true,
    path: real,
    mount_point: mount?.mount_point ?? null,
    fs_type: mount?.fs_type ?? null,
    read_only: mount?.read_only ?? null,
    free_bytes: space.availableBytes,
    size_bytes: space.totalBytes,
    free_inodes: space.availableInodes,
    total_inodes: space.totalInodes,
  };
}
