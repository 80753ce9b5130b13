import { describe, expect, it } from 'vitest';
import { passExecArgv } from '../../src/daemon/pass-runner.js';

describe("the daemon's pass child: Node flags", () => {
  it('gets a 2 MiB semi-space unless the daemon already runs with one (flags or NODE_OPTIONS)', () => {
    expect(passExecArgv([], {})).toEqual(['--max-semi-space-size=2']);
    expect(passExecArgv(['--enable-source-maps'], {})).toEqual(['--enable-source-maps', '--max-semi-space-size=2']);
    expect(passExecArgv(['--max-semi-space-size=8'], {})).toEqual(['--max-semi-space-size=8']);
    expect(passExecArgv([], { NODE_OPTIONS: '--trace-warnings --max-semi-space-size=4' })).toEqual([]);
  });
});
