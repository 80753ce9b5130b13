import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';

const DEMO = join(import.meta.dirname, '../../dist/dev/demo.js');
const CLI = join(import.meta.dirname, '../../dist/src/cli.js');
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

    // The apply's seahorse.db line says what the growth is: the WAL, not the file.
    const apply = r.stdout.split('\n=== ').find((x) => x.startsWith('Apply it'))!;
    const db = /^seahorse\.db: ([\d.]+ \w*B) -> ([\d.]+ \w*B)(.*?)(?=\n\S)/ms.exec(apply);
    expect(db, apply).not.toBeNull();
    if (db![1] !== db![2]) expect(db![3]).toMatch(/file [\d.]+ \w*B \+\s+WAL [\d.]+ \w*B/);

    // The stand-in's clean stop reads as one: `startup` on the home it leaves says stopped, not crashed.
    const after = spawnSync(
      process.execPath,
      [CLI, 'startup', '--json', '--home', join(sample, '.picoclaw'), '--state-dir', join(sample, 'guard-state')],
      { encoding: 'utf8', env: { ...env, PICOCLAW_GUARD_CONFIG: join(sample, 'picoclaw-guard.json') } },
    );
    expect(after.status, after.stderr).toBe(0);
    const restarts = (JSON.parse(after.stdout) as { restarts: { end: string }[] }).restarts;
    expect(restarts[restarts.length - 1]!.end).toBe('stopped');
  });
});
