import { closeSync, openSync, readSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { errnoCode } from '../errors.js';

/** Whether a process exists (EPERM means it exists but belongs to someone else). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

/**
 * What program a process runs, from /proc: the base names of its executable and of its
 * first two arguments (an interpreter's script comes second). Only base names leave
 * here: another program's full command line may carry its own secrets.
 * null when /proc does not tell (no procfs, hidepid, the process is gone).
 */
export function processProgramNames(pid: number, procRoot = '/proc'): string[] | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let argv: string[];
  let fd: number | undefined;
  try {
    fd = openSync(`${procRoot}/${pid}/cmdline`, 'r');
    // argv[0] and argv[1] are at the start; a long command line is not read further.
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    argv = buf
      .subarray(0, n)
      .toString('utf8')
      .split('\0')
      .filter((a) => a !== '')
      .slice(0, 2);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const names = argv.map((a) => basename(a));
  try {
    names.unshift(basename(readlinkSync(`${procRoot}/${pid}/exe`)));
  } catch {
    // Another user's process: its exe link is not readable; the command line is.
  }
  return names.map((n) => n.slice(0, 64));
}

let bootMs: number | null | undefined;

/**
 * When a process started (epoch ms), from /proc/<pid>/stat (field 22, clock ticks since
 * boot; USER_HZ is 100 on every Linux architecture) and the boot time in /proc/stat.
 * null when /proc does not tell.
 */
export function processStartMs(pid: number, procRoot = '/proc'): number | null {
  try {
    if (bootMs === undefined) {
      const m = /^btime (\d+)$/m.exec(readFirst(`${procRoot}/stat`, 64 * 1024));
      bootMs = m ? Number(m[1]) * 1000 : null;
    }
    if (bootMs === null) return null;
    const stat = readFirst(`${procRoot}/${pid}/stat`, 4096);
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? bootMs + ticks * 10 : null;
  } catch {
    return null;
  }
}

function readFirst(path: string, max: number): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
