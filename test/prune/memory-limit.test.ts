import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCgroup } from '../../bench/cgroup.js';
import { NODE_FLAGS } from '../../src/daemon/pass-runner.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * A real `prune --apply` (the code the daemon's pass child runs) inside a memory cgroup with
 * a hard limit: what the unit's MemoryMax=256M leaves a pass beside the daemon (~60 MiB).
 * Needs root and a cgroup memory controller it can write (v1 or v2); skipped otherwise.
 */
const MiB = 1024 * 1024;
const probe = process.getuid?.() === 0 ? makeCgroup(`pcg-test-probe-${process.pid}`, null) : null;
probe?.remove();
const why =
  process.getuid?.() !== 0 ? 'needs root (a cgroup of its own)' : !probe ? 'no writable memory cgroup here' : null;

function runIn(
  limitBytes: number,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  peak: number | null;
  ooms: number;
}> {
  const cg = makeCgroup(`pcg-test-${process.pid}-${Date.now()}`, limitBytes);
  if (!cg) throw new Error('cgroup vanished');
  // The shell joins the group first, then becomes node: nothing runs outside the limit.
  const child = spawn(
    '/bin/sh',
    ['-c', `echo $$ > "${cg.path}/cgroup.procs" && exec "$0" "$@"`, process.execPath, CLI, ...args],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
        PICOGUARD_NO_SYSTEM_STATE: '1',
        NODE_OPTIONS: NODE_FLAGS.join(' '),
        ...env,
      },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const r = { code, signal, stdout, stderr, peak: cg.peakBytes(), ooms: cg.oomKills() };
      cg.remove();
      resolve(r);
    });
  });
}

describe.skipIf(why !== null)(`a pass under a hard memory limit${why ? ` (skipped: ${why})` : ''}`, () => {
  const now = Date.parse('2026-11-30T12:00:00Z');
  const build = () => {
    const home = join(tempDir(), 'home');
    buildSampleHome({
      dir: home,
      seed: 15,
      sessions: 2000,
      agents: 3,
      messagesPerSession: 10,
      seahorse: true,
      seahorseContentBytes: 1024,
      spanDays: 120,
      now,
    });
    return home;
  };
  const sessionsOf = (home: string) =>
    readdirSync(join(home, 'workspace', 'sessions')).filter((n) => n.endsWith('.meta.json')).length;

  it(
    '2,000 sessions: prune --apply completes inside 192 MiB (MemoryMax 256M less the daemon), never OOM-killed',
    { timeout: 600_000 },
    async () => {
      const home = build();
      const before = sessionsOf(home);
      const r = await runIn(
        192 * MiB,
        ['prune', '--apply', '--home', home, '--state-dir', join(home, '..', 'state'), '--json'],
        {},
      );
      expect(r.signal).toBeNull();
      expect(r.ooms).toBe(0);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as { totals: { deleted_sessions: number } };
      expect(report.totals.deleted_sessions).toBeGreaterThan(0);
      expect(sessionsOf(home)).toBeLessThan(before);
      expect(r.peak).toBeLessThanOrEqual(192 * MiB);
    },
  );

  it(
    'a budget below what the pass needs: it stops between two sessions and says why, it is not killed',
    { timeout: 600_000 },
    async () => {
      const home = build();
      const before = sessionsOf(home);
      const r = await runIn(
        192 * MiB,
        ['prune', '--apply', '--home', home, '--state-dir', join(home, '..', 'state'), '--json'],
        { PICOGUARD_PASS_MEMORY_MB: '40' },
      );
      expect(r.signal).toBeNull();
      expect(r.ooms).toBe(0);
      expect(r.code).toBe(7);
      const report = JSON.parse(r.stdout) as { warnings: string[]; sessions: { reason: string }[] };
      expect(report.warnings.join('\n')).toMatch(/passed its budget of 40 MiB/);
      expect(report.sessions.filter((s) => s.reason === 'interrupted').length).toBeGreaterThan(0);
      // Nothing was deleted (40 MiB is below Node's own floor): the home is whole.
      expect(sessionsOf(home)).toBe(before);
    },
  );
});
