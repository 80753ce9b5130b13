import { createHash } from 'node:crypto';
import { accessSync, constants, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PicoClawHome } from '../picoclaw/home.js';

export const LOCK_NAME = '.picoclaw-guard.lock';

/**
 * The lock lives in the PicoClaw home (one pass per home, whoever runs it), never in a
 * sessions folder. Where the home cannot be written (read-only, another owner), the
 * state folder, else the temp folder, holds it under a name derived from the home.
 */
export function lockPathFor(home: PicoClawHome, stateDir: string | null): string {
  // Named from the real path: a symlinked path to the same home must find the same lock.
  let real = home.home;
  try {
    real = realpathSync(home.home);
  } catch {
    // a home that does not exist is refused before any lock is taken
  }
  const tag = createHash('sha256').update(real).digest('hex').slice(0, 16);
  for (const [dir, name] of [
    [real, LOCK_NAME],
    [stateDir, `${LOCK_NAME}-${tag}`],
    [tmpdir(), `picoclaw-guard-${tag}.lock`],
  ] as const) {
    if (!dir) continue;
    try {
      accessSync(dir, constants.W_OK);
      return join(dir, name);
    } catch {
      // next
    }
  }
  return join(tmpdir(), `picoclaw-guard-${tag}.lock`);
}
