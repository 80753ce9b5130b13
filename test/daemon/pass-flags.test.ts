import { describe, expect, it } from 'vitest';
import { passEnv, passExecArgv } from '../../src/daemon/pass-runner.js';

describe("the daemon's pass child: Node flags", () => {
  it('gets a 2 MiB semi-space unless the daemon already runs with one (flags or NODE_OPTIONS)', () => {
    expect(passExecArgv([], {})).toEqual(['--max-semi-space-size=2']);
    expect(passExecArgv(['--enable-source-maps'], {})).toEqual(['--enable-source-maps', '--max-semi-space-size=2']);
    expect(passExecArgv(['--max-semi-space-size=8'], {})).toEqual(['--max-semi-space-size=8']);
    expect(passExecArgv([], { NODE_OPTIONS: '--trace-warnings --max-semi-space-size=4' })).toEqual([]);
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
