import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

/** Run the built CLI as a user would; the environment is cleaned of PicoClaw variables. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): SpawnSyncReturns<string> & { code: number } {
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, PICOCLAW_GUARD_CONFIG: '/nonexistent/picoclaw-guard.json', PICOGUARD_NO_SYSTEM_STATE: '1' };
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...base, ...env }, input, timeout: 120_000 });
  return Object.assign(r, { code: r.status ?? -1 });
}
