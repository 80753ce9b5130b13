import { spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../../src/daemon/pass-runner.js';
import { assertBuilt, NO_GUARD_CONFIG } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

const LAUNCHER = fileURLToPath(new URL('../../bin/picoclaw-guard', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  bin: Record<string, string>;
  version: string;
};

/**
 * Runs the command through a symlink (as npm's global bin and `npm link` install it) with a preload
 * that records the Node flags the CLI process runs with.
 */
function launch(
  nodeOptions: string,
  env: NodeJS.ProcessEnv = {},
): { code: number | null; stdout: string; execArgv: string[]; arenas: string | null } {
  assertBuilt();
  const dir = tempDir();
  const link = join(dir, 'picoclaw-guard');
  symlinkSync(LAUNCHER, link);
  const out = join(dir, 'argv.json');
  const preload = join(dir, 'record.cjs');
  writeFileSync(
    preload,
    `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify([process.execArgv, ` +
      `process.env.MALLOC_ARENA_MAX ?? null]));\n`,
  );
  const r = spawnSync(link, ['--version'], {
    encoding: 'utf8',
    env: {
      ...withoutArenas(process.env),
      ...env,
      PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
      NODE_OPTIONS: `${nodeOptions} --require ${preload}`,
    },
  });
  const [execArgv, arenas] = JSON.parse(readFileSync(out, 'utf8')) as [string[], string | null];
  return { code: r.status, stdout: r.stdout, execArgv, arenas };
}

function withoutArenas(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.MALLOC_ARENA_MAX;
  return copy;
}

describe('the picoclaw-guard command', () => {
  it("is the launcher, which runs the CLI with the units' Node flags, through a symlink", () => {
    expect(pkg.bin['picoclaw-guard']).toBe('bin/picoclaw-guard');
    const r = launch('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
    expect(r.execArgv).toEqual(NODE_FLAGS);
    expect(r.arenas).toBe('1');
  });

  it('leaves the malloc arenas to MALLOC_ARENA_MAX when it is set', () => {
    const r = launch('', { MALLOC_ARENA_MAX: '4' });
    expect(r.code).toBe(0);
    expect(r.arenas).toBe('4');
  });

  it('leaves gc, the young generation and the platform threads to NODE_OPTIONS, each when it sets it', () => {
    expect(launch('--max-semi-space-size=8').execArgv).toEqual(['--expose-gc', '--v8-pool-size=1']);
    expect(launch('--v8_pool_size=2').execArgv).toEqual(['--expose-gc', '--max-semi-space-size=2']);
    expect(launch('--expose_gc').execArgv).toEqual(['--max-semi-space-size=2', '--v8-pool-size=1']);
    const r = launch('--expose-gc --v8-pool-size=2 --max_semi_space_size=8');
    expect(r.code).toBe(0);
    expect(r.execArgv).toEqual([]);
  });
});
