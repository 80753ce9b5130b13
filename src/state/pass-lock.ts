import { createHash } from 'node:crypto';
import { accessSync, constants, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileId } from '../io/file-id.js';
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
  // The fallback names come from the home's device and inode, not its path: a home reached through
  // a bind mount has a second real path, and must still find the same lock. (The lock in the home
  // itself is one file however the folder is reached: SQLite's fcntl locks are on the inode.)
  const tag = createHash('sha256')
    .update(fileId(real) ?? real)
    .digest('hex')
    .slice(0, 16);
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
