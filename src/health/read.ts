import { readFileSync, readdirSync } from 'node:fs';
import { errnoCode } from '../errors.js';

/**
 * Tiny readers for sysfs and procfs files. Each file is read on its own and a failure
 * is kept per file (EINVAL, ETIMEDOUT, ENODATA happen on real thermal zones,
 * docs/board-health.md#thermal-zones): one bad file never hides the others.
 */
export type ReadResult = { ok: true; text: string } | { ok: false; code: string };

/** A sysfs/procfs value: trailing newline and NUL bytes (device-tree strings) removed. */
export function readValue(path: string): ReadResult {
  try {
    return { ok: true, text: readFileSync(path, 'utf8').replace(/[\0\s]+$/, '') };
  } catch (err) {
    return { ok: false, code: errnoCode(err) ?? 'error' };
  }
}

export function readString(path: string): string | null {
  const r = readValue(path);
  return r.ok && r.text !== '' ? r.text : null;
}

/** An integer file (kHz, m°C, 0/1); anything else reads as null. */
export function readInt(path: string): number | null {
  const s = readString(path);
  return s !== null && /^-?\d+$/.test(s) ? Number(s) : null;
}

export function readBytes(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}

/** Entry names of a folder; a missing or unreadable folder is empty. */
export function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** `thermal_zone10` sorts after `thermal_zone9`. */
export function byNumberSuffix(a: string, b: string): number {
  const na = Number(/(\d+)$/.exec(a)?.[1] ?? NaN);
  const nb = Number(/(\d+)$/.exec(b)?.[1] ?? NaN);
  if (na !== nb && !Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  return a.localeCompare(b);
}

/** Parse a kernel CPU list such as `0-3,5` (sys/devices/system/cpu/online, affected_cpus uses spaces). */
export function parseCpuList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(/[,\s]+/)) {
    if (part === '') continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) continue;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let i = lo; i <= hi && i - lo < 4096; i++) out.push(i);
  }
  return out;
}
