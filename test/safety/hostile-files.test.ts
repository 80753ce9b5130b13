import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * Files that are not what they claim (a FIFO, /dev/zero, a folder) where the guard
 * reads its config, PicoClaw's config.json or the PID file, and a --home that is no
 * PicoClaw home. Each command must end, with an error that names the file; before the
 * safe reader a FIFO blocked forever (the spawn's timeout kills it, and the test fails).
 */
const TIMEOUT = 60_000;

function home(): string {
  const h = join(tempDir(), '.picoclaw');
  mkdirSync(join(h, 'workspace', 'sessions'), { recursive: true });
  writeFileSync(join(h, 'config.json'), JSON.stringify({ gateway: { port: 1 } }));
  return h;
}

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = runCli(args, env);
  expect(r.signal, `killed: ${r.stderr}`).toBeNull();
  return r;
}

describe('files that are not regular files', () => {
  it(
    'the guard config is a FIFO: exit 2 naming it (--config and PICOCLAW_GUARD_CONFIG)',
    () => {
      const h = home();
      const fifo = join(tempDir(), 'guard.json');
      execFileSync('mkfifo', [fifo]);
      const r = run(['prune', '--home', h, '--config', fifo]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`cannot read the guard config --config ${fifo}: is a FIFO, not a regular file`);
      const e = run(['prune', '--home', h], { PICOCLAW_GUARD_CONFIG: fifo });
      expect(e.code).toBe(2);
      expect(e.stderr).toContain(`PICOCLAW_GUARD_CONFIG=${fifo}`);
    },
    TIMEOUT,
  );

  it(
    "PicoClaw's config.json is a FIFO, a folder or /dev/zero: exit 2 naming it",
    () => {
      for (const make of [
        (p: string) => execFileSync('mkfifo', [p]),
        (p: string) => mkdirSync(p),
        (p: string) => symlinkSync('/dev/zero', p),
      ]) {
        const h = join(tempDir(), '.picoclaw');
        mkdirSync(join(h, 'workspace', 'sessions'), { recursive: true });
        make(join(h, 'config.json'));
        const r = run(['sessions', '--home', h]);
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(
          new RegExp(
            `cannot read PicoClaw's config: ${join(h, 'config.json')} is (a FIFO|a directory|a character device), not a regular file`,
          ),
        );
        expect(r.stderr).not.toContain('unexpected error');
      }
    },
    TIMEOUT,
  );

  it(
    '.picoclaw.pid is a FIFO or a symlink to /dev/zero: health and prune end,' +
      ' the gateway reads as down with the reason',
    () => {
      for (const [make, what] of [
        [(p: string) => execFileSync('mkfifo', [p]), 'a FIFO'],
        [(p: string) => symlinkSync('/dev/zero', p), 'a character device'],
      ] as const) {
        const h = home();
        const pid = join(h, '.picoclaw.pid');
        make(pid);
        const r = run(['health', '--home', h, '--state-dir', tempDir(), '--json']);
        const j = JSON.parse(r.stdout);
        expect(j.picoclaw.gateway).toMatchObject({ state: 'down', pid_file: 'invalid' });
        expect(j.picoclaw.gateway.reason).toBe(`PID file unusable (${pid} is ${what}, not a regular file)`);
        const p = run(['prune', '--home', h, '--json']);
        expect(p.code).toBe(0);
        expect(JSON.parse(p.stdout).gateway.state).toBe('down');
      }
    },
    TIMEOUT,
  );

  it(
    'a PID file over 1 KiB is refused with its size, not read',
    () => {
      const h = home();
      writeFileSync(join(h, '.picoclaw.pid'), JSON.stringify({ pid: 1, pad: 'x'.repeat(4096) }));
      const j = JSON.parse(run(['health', '--home', h, '--state-dir', tempDir(), '--json']).stdout);
      expect(j.picoclaw.gateway.reason).toMatch(/\.picoclaw\.pid is larger than 1 KiB \(\d+ bytes\)/);
    },
    TIMEOUT,
  );
});

describe('gateway.log that is not a regular file', () => {
  it(
    'a FIFO (in the home or given with --log) or /dev/zero: exit 3 naming it; a pipe is read with --log -',
    () => {
      const h = home();
      mkdirSync(join(h, 'logs'));
      const log = join(h, 'logs', 'gateway.log');
      execFileSync('mkfifo', [log]);
      const r = run(['startup', '--home', h]);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`cannot read ${log}: a FIFO, not a regular file`);
      expect(run(['startup', '--log', log]).code).toBe(3);
      const z = run(['startup', '--log', '/dev/zero']);
      expect(z.code).toBe(3);
      expect(z.stderr).toContain('cannot read /dev/zero: a device or socket, not a regular file');
    },
    TIMEOUT,
  );
});

describe("the guard's own state files", () => {
  it(
    'the prune history is a FIFO: the pass ends, with a warning naming it',
    () => {
      const h = home();
      const state = tempDir();
      execFileSync('mkfifo', [join(state, 'prune-history.jsonl')]);
      const r = run(['prune', '--apply', '--home', h, '--state-dir', state, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).warnings.join('\n')).toContain(`could not record the pass in ${state}`);
    },
    TIMEOUT,
  );
});

describe('--home at a folder that is not a PicoClaw home', () => {
  it(
    'exit 2 saying so, and nothing is written there or in the state folder',
    () => {
      const notHome = tempDir();
      writeFileSync(join(notHome, '.bashrc'), '# a user home\n');
      mkdirSync(join(notHome, 'Documents'));
      const state = join(tempDir(), 'state');
      for (const args of [
        ['sessions'],
        ['prune', '--apply', '--max-age-days', '1', '--state-dir', state],
        ['startup'],
        ['health', '--state-dir', state],
        ['run', '--port', '0', '--state-dir', state],
      ]) {
        const r = run([...args, '--home', notHome]);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(
          `${notHome} is not a PicoClaw home: it has no config.json, no workspace/ and no sessions ` +
            `folder (from --home)`,
        );
      }
      expect(readdirSync(notHome).sort()).toEqual(['.bashrc', 'Documents']);
      expect(() => readdirSync(state)).toThrow(/ENOENT/);
    },
    TIMEOUT,
  );

  it(
    'a fresh PicoClaw with only workspace/sessions/ (no config.json) is a home',
    () => {
      const h = join(tempDir(), '.picoclaw');
      mkdirSync(join(h, 'workspace', 'sessions'), { recursive: true });
      const r = run(['sessions', '--home', h]);
      expect(r.code, r.stderr).toBe(0);
      const p = run(['prune', '--apply', '--home', h, '--state-dir', join(tempDir(), 's'), '--json']);
      expect(p.code, p.stderr).toBe(0);
    },
    TIMEOUT,
  );
});
