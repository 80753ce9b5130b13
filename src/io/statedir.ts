import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where the guard keeps its own small state (prune history, last-run marker,
 * under-voltage latch): never inside a PicoClaw sessions folder.
 * --state-dir, else $STATE_DIRECTORY (systemd's StateDirectory=), else
 * /var/lib/picoclaw-guard for root, else $XDG_STATE_HOME/picoclaw-guard, else
 * ~/.local/state/picoclaw-guard.
 */
export function resolveStateDir(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return flag;
  if (env.STATE_DIRECTORY) return env.STATE_DIRECTORY.split(':')[0]!;
  if (typeof process.getuid === 'function' && process.getuid() === 0 && !env.PICOGUARD_NO_SYSTEM_STATE)
    return '/var/lib/picoclaw-guard';
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'picoclaw-guard');
  return join(env.HOME || homedir(), '.local', 'state', 'picoclaw-guard');
}
