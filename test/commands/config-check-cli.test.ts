import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handHome } from '../support/home.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/** `config check`, and every command that reads the guard config refusing a wrong key in any section (exit 2). */
describe('config check and all-sections validation (built CLI)', () => {
  const setup = (config: unknown) => {
    const root = tempDir('pcg-cfg-');
    const home = join(root, 'home');
    handHome(home, [{ key: 'sk_v1_a', updated: '2025-01-01T00:00:00Z' }]);
    const path = join(root, 'guard.json');
    writeFileSync(path, JSON.stringify(config));
    return { home, path, env: { PICOCLAW_GUARD_CONFIG: path } };
  };

  it('a wrong health.* or server.* key fails prune (and show, delete, health) with exit 2 naming the key', () => {
    for (const [config, key] of [
      [{ health: { temp_warn_celsiu: 70 } }, 'health.temp_warn_celsiu'],
      [{ server: { prot: 1 } }, 'server.prot'],
      [{ metrics: { refresh_seconds: 0 } }, 'metrics.refresh_seconds'],
    ] as const) {
      const h = setup(config);
      for (const args of [['prune'], ['show', 'sk_v1_a'], ['delete', 'sk_v1_a'], ['health', '--sys-root', h.home]]) {
        const r = runCli([...args, '--home', h.home], h.env);
        expect(r.code, `${args[0]} ${key}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`"${key}"`);
        expect(r.stderr.split('\n').filter(Boolean).length).toBeLessThanOrEqual(2);
      }
    }
  });

  it('lists every refused section, exit 2; a valid file prints each value with its source, exit 0', () => {
    const bad = setup({
      health: { temp_warn_celsiu: 70 },
      metrics: { refresh_seconds: 0 },
      prune: { max_age_days: 7 },
    });
    const r = runCli(['config', 'check', '--home', bad.home], bad.env);
    expect(r.code).toBe(2);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/health: ERROR: \S+: unknown key "health\.temp_warn_celsiu"/);
    expect(text).toMatch(/metrics: ERROR: \S+: "metrics\.refresh_seconds" must be/);
    expect(text).toMatch(/max_age_days 7 guard config/);
    const good = setup({ prune: { max_age_days: 7 }, server: { token: 'a-secret-of-enough-length' } });
    const ok = runCli(['config', 'check', '--json', '--home', good.home], {
      ...good.env,
      PICOCLAW_SESSION_PRUNE_MAX_SESSIONS: '9',
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).not.toContain('a-secret-of-enough-length');
    const doc = JSON.parse(ok.stdout) as {
      ok: boolean;
      sections: { section: string; values: { key: string; source: string }[] }[];
    };
    expect(doc.ok).toBe(true);
    const prune = doc.sections.find((s) => s.section === 'prune')!.values;
    expect(prune.find((v) => v.key === 'max_sessions')!.source).toBe('env');
    expect(prune.find((v) => v.key === 'max_age_days')!.source).toBe('guard config');
    expect(prune.find((v) => v.key === 'vacuum')!.source).toBe('default');
  });
});
