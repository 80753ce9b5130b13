import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';

const DEMO = join(import.meta.dirname, '../../dist/dev/demo.js');
const SYSTEM_HISTORY = '/var/lib/picoclaw-guard/prune-history.jsonl';

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out.push(...files(p));
  }
  return out;
}

function fingerprint(path: string): string {
  return existsSync(path) ? `${statSync(path).size}:${statSync(path).mtimeMs}` : 'absent';
}

describe('npm run demo', () => {
  it('writes only inside its sample folder, shows a gateway that is up, and its health is not CRITICAL', () => {
    const root = tempDir('pcg-demo-');
    const home = join(root, 'home');
    const xdg = join(root, 'xdg-state');
    const tmp = join(root, 'tmp');
    for (const d of [home, tmp]) spawnSync('mkdir', ['-p', d]);
    const systemBefore = fingerprint(SYSTEM_HISTORY);
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_STATE_HOME: xdg, TMPDIR: tmp };
    const r = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', env, timeout: 240_000 });
    expect(r.status, r.stderr).toBe(0);

    // Nothing in the user's home, the XDG state folder or (as root) /var/lib/picoclaw-guard.
    expect(files(home)).toEqual([]);
    expect(existsSync(xdg)).toBe(false);
    expect(fingerprint(SYSTEM_HISTORY)).toBe(systemBefore);
    // Everything in one sample folder in the temp folder, the guard's state included.
    const made = readdirSync(tmp);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatch(/^picoclaw-demo-/);
    const sample = join(tmp, made[0]!);
    expect(existsSync(join(sample, 'guard-state', 'prune-history.jsonl'))).toBe(true);
    // The stand-in gateway removed its PID file when the tour ended, as a clean stop does.
    expect(existsSync(join(sample, '.picoclaw', '.picoclaw.pid'))).toBe(false);

    const health = r.stdout.split('\n=== ').find((s) => s.startsWith('Board health'));
    expect(health, r.stdout).toBeDefined();
    expect(health).toMatch(/^gateway\s+ready\b/m);
    expect(health).not.toMatch(/CRITICAL|\(exit code 11/);
    expect(health).toMatch(/real readings/);
  });
});
