import { closeSync, openSync, readSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';

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
    argv = buf.subarray(0, n).toString('utf8').split('\0').filter((a) => a !== '').slice(0, 2);
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
