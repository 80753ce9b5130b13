import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

/**
 * Under vitest, dist/ is current only in the projects whose global setup builds it (e2e,
 * safety): a test file that spawns the built code from the unit project would run a stale
 * or missing build. The helpers that spawn dist/ call this first, so such a file fails.
 */
export function assertBuilt(): void {
  if (process.env.VITEST && process.env.PICOGUARD_TEST_BUILT !== '1') {
    throw new Error(
      'this test file spawns the built CLI (dist/): list it in the e2e project ' +
        'in vitest.config.ts, whose global setup builds it',
    );
  }
}

function repoDir(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json')) && dirname(d) !== d) d = dirname(d);
  return d;
}

/**
 * An empty guard config (`{}`): tests point PICOCLAW_GUARD_CONFIG at it so that this
 * machine's /etc/picoclaw-guard/config.json never leaks in (a missing file named by the
 * variable is an error, like a missing --config).
 */
export const NO_GUARD_CONFIG = join(repoDir(), 'test', 'fixtures', 'guard-config-empty.json');

/** Run the built CLI as a user would; the environment is cleaned of PicoClaw variables. */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
): SpawnSyncReturns<string> & { code: number } {
  assertBuilt();
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
    PICOGUARD_NO_SYSTEM_STATE: '1',
  };
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...base, ...env },
    input,
    timeout: 120_000,
  });
  return Object.assign(r, { code: r.status ?? -1 });
}
