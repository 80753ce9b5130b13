import { describe, expect, it } from 'vitest';
import { passEnv, passExecArgv } from '../../src/daemon/pass-runner.js';

describe("the daemon's pass child: Node flags", () => {
  it('gets gc, a 2 MiB semi-space and one V8 platform thread, each unless its flags or NODE_OPTIONS do', () => {
    const all = ['--expose-gc', '--max-semi-space-size=2', '--v8-pool-size=1'];
    expect(passExecArgv([], {})).toEqual(all);
    expect(passExecArgv(['--enable-source-maps'], {})).toEqual(['--enable-source-maps', ...all]);
    expect(passExecArgv(['--max-semi-space-size=8'], {})).toEqual([
      '--max-semi-space-size=8',
      '--expose-gc',
      '--v8-pool-size=1',
    ]);
    // V8 reads `_` as `-`, and a value may follow a space.
    expect(passExecArgv(['--max_semi_space_size=8'], {})).toEqual([
      '--max_semi_space_size=8',
      '--expose-gc',
      '--v8-pool-size=1',
    ]);
    expect(passExecArgv([], { NODE_OPTIONS: '--trace-warnings --max-semi-space-size=4' })).toEqual([
      '--expose-gc',
      '--v8-pool-size=1',
    ]);
    expect(passExecArgv([], { NODE_OPTIONS: '--v8-pool-size 4' })).toEqual(['--expose-gc', '--max-semi-space-size=2']);
    expect(passExecArgv(['--v8-pool-size=2'], { NODE_OPTIONS: '--max-semi-space-size=4' })).toEqual([
      '--v8-pool-size=2',
      '--expose-gc',
    ]);
    expect(passExecArgv(['--expose_gc'], {})).toEqual(['--expose_gc', '--max-semi-space-size=2', '--v8-pool-size=1']);
    // A name that only starts like one of them is another option.
    expect(passExecArgv(['--max-semi-space-size-x'], {})).toEqual(['--max-semi-space-size-x', ...all]);
  });

  it('gets one malloc arena, its memory budget and SQLite URIs, unless the daemon sets its own', () => {
    const env = passEnv({ PATH: '/bin', PICOCLAW_HOME: '/h' });
    expect(env).toEqual({
      PATH: '/bin',
      PICOCLAW_HOME: '/h',
      SQLITE_USE_URI: '1',
      PICOGUARD_PASS_MEMORY_MB: '160',
      MALLOC_ARENA_MAX: '1',
    });
    const own = passEnv({ MALLOC_ARENA_MAX: '8', PICOGUARD_PASS_MEMORY_MB: '0' });
    expect([own.MALLOC_ARENA_MAX, own.PICOGUARD_PASS_MEMORY_MB]).toEqual(['8', '0']);
  });
});
