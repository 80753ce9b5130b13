import { spawn, type ChildProcess } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { tempDir } from './tmp.js';

const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * A live process that /proc shows as `picoclaw` (node started through a symlink of that
 * name), to stand for a gateway that does not answer HTTP: the guard calls a silent PID
 * "hung" or "starting" only when the PID is PicoClaw's. Killed after the test.
 */
export function picoclawStandIn(): number {
  const bin = join(tempDir('pcg-bin-'), 'picoclaw');
  symlinkSync(process.execPath, bin);
  const c = spawn(bin, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  children.push(c);
  return c.pid!;
}
