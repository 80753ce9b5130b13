import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The folder the shipped units keep their state in (StateDirectory=picoclaw-guard). */
export const SYSTEM_STATE_DIR = '/var/lib/picoclaw-guard';

function writableDir(path: string): boolean {
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where the guard keeps its own small state (prune history, last-run marker,
 * under-voltage latch, restore holds, pins): never inside a PicoClaw sessions folder.
 * --state-dir, else $STATE_DIRECTORY (systemd's StateDirectory=), else
 * /var/lib/picoclaw-guard for root or for a user who can write it, else
 * $XDG_STATE_HOME/picoclaw-guard, else ~/.local/state/picoclaw-guard.
 *
 * The units' own folder is taken whenever this user can write it: the units' user at a shell
 * (`sudo -u picoclaw picoclaw-guard pin KEY`) then writes the pins and holds the daemon's passes
 * and the pre-start unit read, with no flag. A user who cannot write it gets a folder of their own.
 */
export function resolveStateDir(
  flag?: string,
  env: NodeJS.ProcessEnv = process.env,
  user: { uid: number | null; canWrite: (dir: string) => boolean } = {
    uid: typeof process.getuid === 'function' ? process.getuid() : null,
    canWrite: writableDir,
  },
): string {
  if (flag) return flag;
  if (env.STATE_DIRECTORY) return env.STATE_DIRECTORY.split(':')[0]!;
  if (!env.PICOGUARD_NO_SYSTEM_STATE && (user.uid === 0 || user.canWrite(SYSTEM_STATE_DIR))) return SYSTEM_STATE_DIR;
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'picoclaw-guard');
  return join(env.HOME || homedir(), '.local', 'state', 'picoclaw-guard');
}
