import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, join, sep } from 'node:path';
import { listDir, readString } from './read.js';
import { noData, type Section } from './types.js';

/**
 * The block device that holds the PicoClaw home: its eMMC wear (when the card reports it) and
 * the bytes written to it since boot (docs/emmc.md).
 *
 * - Which device: the source of the mount holding the home (`/proc/mounts`, e.g.
 *   `/dev/mmcblk0p2`), else, on the real /proc only, the home's st_dev looked up by
 *   major:minor in `/proc/diskstats` (a `/dev/root` or `PARTUUID=` source). A partition is
 *   mapped to its disk through `<sys>/block/<disk>/<partition>`, as sysfs lays it out.
 * - Wear: `<sys>/block/<disk>/device/life_time` ("0x01 0x02", types A and B) and
 *   `pre_eol_info` ("01" or "0x01"), or the split `life_time_est_typ_a` / `_b` some vendor
 *   kernels print (docs/emmc.md#the-files-and-their-formats). An SD card has none of these:
 *   "not reported by this card" is an answer, not an error.
 * - Writes: `/proc/diskstats` field 10, sectors written, always in 512-byte units
 *   (docs/emmc.md#bytes-written-from-procdiskstats).
 */
export type PreEol = 'not_defined' | 'normal' | 'warning' | 'urgent' | 'reserved';

export interface EmmcWearReported {
  reported: true;
  /** Which files: `life_time` (mainline) or `life_time_est_typ` (the split vendor files). */
  source: 'life_time' | 'life_time_est_typ';
  /** DEVICE_LIFE_TIME_EST_TYP_A / _B as the card reports them: 0x01 = 0-10 % used ... 0x0A = 90-100 %, 0x0B = past. */
  life_time_est_typ_a: number | null;
  life_time_est_typ_b: number | null;
  /** The upper end of each estimate's 10 % step (0x03 → 30); 100 when past the rated life; null when not defined. */
  life_used_percent_a: number | null;
  life_used_percent_b: number | null;
  /** Either type is past its rated life (0x0B). */
  life_exceeded: boolean;
  /** PRE_EOL_INFO: 0x01 normal, 0x02 warning (80 % of the reserved blocks used), 0x03 urgent. */
  pre_eol_info: number | null;
  pre_eol: PreEol | null;
}

export interface EmmcWearNotReported {
  reported: false;
  reason: string;
}

export interface StorageReading {
  /** The whole disk, e.g. `mmcblk0`, `sda`, `nvme0n1`. */
  device: string;
  /** The partition the home is on, when it is one (`mmcblk0p2`). */
  partition: string | null;
  /** `<sys>/block/<disk>/device/type`: MMC (eMMC), SD, SDIO; null for other buses. */
  card_type: string | null;
  emmc: EmmcWearReported | EmmcWearNotReported;
  /** Bytes written to the disk since boot (diskstats sectors written × 512); null when diskstats has no row. */
  written_bytes: number | null;
  /** written_bytes averaged over the uptime, per day; null before an hour of uptime (too short to scale up). */
  written_bytes_per_day: number | null;
}

export type Storage = Section<StorageReading>;

export interface DeviceNumber {
  major: number;
  minor: number;
}

/** The device number of the file system holding `path` (Linux's st_dev encoding, new_encode_dev). */
export function statDeviceNumber(path: string): DeviceNumber | null {
  try {
    const dev = statSync(path).dev;
    return { major: Math.floor(dev / 256) & 0xfff, minor: (dev & 0xff) | (Math.floor(dev / 4096) & 0xfff00) };
  } catch {
    return null;
  }
}

const PRE_EOL: Record<number, PreEol> = { 0: 'not_defined', 1: 'normal', 2: 'warning', 3: 'urgent' };

/** One hex byte as the kernels print it: `0x0b`, `0x0B`, `0b`, `b`. Anything else is null. */
export function parseHexByte(s: string | undefined | null): number | null {
  if (s === undefined || s === null) return null;
  const m = /^(?:0x)?([0-9a-f]{1,2})$/i.exec(s.trim());
  return m ? parseInt(m[1]!, 16) : null;
}

/** `life_time`: two hex bytes separated by white space ("0x01 0x02"; "01 02" on some trees). */
export function parseLifeTime(text: string | null): { a: number | null; b: number | null } | null {
  if (text === null) return null;
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 2) return null;
  const a = parseHexByte(parts[0]);
  const b = parseHexByte(parts[1]);
  return a === null && b === null ? null : { a, b };
}

/** The upper end of a life-time step in percent; 100 when past; null for 0 (not defined) and reserved values. */
export function lifeUsedPercent(v: number | null): number | null {
  if (v === null || v < 1 || v > 0x0b) return null;
  return v === 0x0b ? 100 : v * 10;
}

export function preEolOf(v: number | null): PreEol | null {
  if (v === null) return null;
  return PRE_EOL[v] ?? 'reserved';
}

/** The eMMC wear files of one disk's device folder, in whichever format the kernel writes them. */
export function readEmmcWear(deviceDir: string, cardType: string | null): EmmcWearReported | EmmcWearNotReported {
  const pre = readString(join(deviceDir, 'pre_eol_info'));
  const lt = parseLifeTime(readString(join(deviceDir, 'life_time')));
  let source: EmmcWearReported['source'] = 'life_time';
  let a: number | null = lt?.a ?? null;
  let b: number | null = lt?.b ?? null;
  if (!lt) {
    const sa = parseHexByte(readString(join(deviceDir, 'life_time_est_typ_a')));
    const sb = parseHexByte(readString(join(deviceDir, 'life_time_est_typ_b')));
    if (sa !== null || sb !== null) {
      source = 'life_time_est_typ';
      a = sa;
      b = sb;
    }
  }
  const preValue = parseHexByte(pre);
  const nothing = (a === null || a === 0) && (b === null || b === 0) && (preValue === null || preValue === 0);
  if (nothing) {
    // An SD card (drivers/mmc/core/sd.c has no such attribute), an eMMC before 5.0 (the kernel reads the fields only
    // from EXT_CSD revision 7 on and leaves them 0), or no MMC device at all.
    const why =
      cardType === null
        ? 'not an MMC device'
        : cardType === 'MMC'
          ? 'not reported by this card (an eMMC before 5.0, or a kernel without life_time)'
          : 'not reported by this card';
    return { reported: false, reason: why };
  }
  return {
    reported: true,
    source,
    life_time_est_typ_a: a,
    life_time_est_typ_b: b,
    life_used_percent_a: lifeUsedPercent(a),
    life_used_percent_b: lifeUsedPercent(b),
    life_exceeded: a === 0x0b || b === 0x0b,
    pre_eol_info: preValue,
    pre_eol: preEolOf(preValue),
  };
}

export interface DiskstatsRow {
  major: number;
  minor: number;
  name: string;
  sectors_written: number;
}

/** /proc/diskstats rows (Documentation/admin-guide/iostats.rst): field 10 is sectors written. */
export function parseDiskstats(text: string | null): DiskstatsRow[] {
  const out: DiskstatsRow[] = [];
  for (const line of (text ?? '').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const [major, minor, sectors] = [Number(f[0]), Number(f[1]), Number(f[9])];
    if (![major, minor, sectors].every((n) => Number.isSafeInteger(n) && n >= 0)) continue;
    out.push({ major, minor, name: f[2]!, sectors_written: sectors });
  }
  return out;
}

/** The source of the longest mount point holding `path` (the last mounted wins a tie). */
export function mountSource(mountsText: string | null, path: string): string | null {
  let best: { mp: string; src: string } | null = null;
  for (const line of (mountsText ?? '').split('\n')) {
    const f = line.split(' ');
    if (f.length < 4) continue;
    const mp = f[1]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const inside = mp === '/' || path === mp || path.startsWith(mp.endsWith(sep) ? mp : mp + sep);
    if (inside && (best === null || mp.length >= best.mp.length)) best = { mp, src: f[0]! };
  }
  return best?.src ?? null;
}

/** The disk a block device name belongs to: itself when `<sys>/block/<name>` exists, else the disk holding it. */
export function diskOf(sysRoot: string, name: string): string | null {
  const block = join(sysRoot, 'block');
  if (existsSync(join(block, name))) return name;
  for (const d of listDir(block)) if (existsSync(join(block, d, name))) return d;
  return null;
}

export interface StorageOptions {
  /** The folder to locate (the PicoClaw home, or its nearest existing parent). */
  path: string;
  sysRoot: string;
  procRoot: string;
  uptimeSeconds: number | null;
  /** st_dev of `path`; default statDeviceNumber on the real /proc, none with a fixture root. */
  deviceNumber?: (path: string) => DeviceNumber | null;
}

const SECTOR = 512;
const DAY = 86400;

export function readStorage(o: StorageOptions): Storage {
  let real = o.path;
  try {
    real = realpathSync(o.path);
  } catch {
    // located as given
  }
  const rows = parseDiskstats(readString(join(o.procRoot, 'diskstats')));
  const src = mountSource(readString(join(o.procRoot, 'mounts')), real);
  let name: string | null = null;
  if (src?.startsWith('/dev/')) {
    const n = basename(src);
    if (rows.some((r) => r.name === n) || existsSync(join(o.sysRoot, 'class', 'block', n)) || diskOf(o.sysRoot, n))
      name = n;
  }
  if (name === null) {
    const number = o.deviceNumber ?? (o.procRoot === '/proc' ? statDeviceNumber : () => null);
    const dn = number(real);
    if (dn) name = rows.find((r) => r.major === dn.major && r.minor === dn.minor)?.name ?? null;
  }
  if (name === null)
    return noData(src ? `the mount ${src} is no block device the kernel lists` : 'no mount holds the PicoClaw home');
  const disk = diskOf(o.sysRoot, name) ?? name;
  const deviceDir = join(o.sysRoot, 'block', disk, 'device');
  const cardType = readString(join(deviceDir, 'type'));
  const row = rows.find((r) => r.name === disk);
  const written = row ? row.sectors_written * SECTOR : null;
  const up = o.uptimeSeconds;
  return {
    available: true,
    device: disk,
    partition: disk === name ? null : name,
    card_type: cardType,
    emmc: readEmmcWear(deviceDir, cardType),
    written_bytes: written,
    written_bytes_per_day: written !== null && up !== null && up >= 3600 ? Math.round((written * DAY) / up) : null,
  };
}
