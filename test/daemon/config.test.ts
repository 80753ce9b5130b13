import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_METRICS,
  DEFAULT_SERVER,
  parseMetricsConfig,
  parseServerConfig,
  resolveSettings,
} from '../../src/daemon/settings.js';
import { ExitCode, GuardError } from '../../src/errors.js';
import { GUARD_SECTIONS, loadGuardConfig } from '../../src/guard-config.js';
import { DEFAULT_LOGS, parseLogsConfig } from '../../src/logs/config.js';
import { DEFAULT_THRESHOLDS, parseHealthConfig } from '../../src/health/config.js';
import { DEFAULT_NOTIFY, parseNotifyConfig } from '../../src/notify/config.js';
import { DEFAULT_POLICY, policyValues, resolvePolicy } from '../../src/prune/policy.js';
import { tempDir } from '../support/tmp.js';

const EXAMPLE = fileURLToPath(new URL('../../config/picoclaw-guard.example.jsonc', import.meta.url));
const DEFAULTS: Record<string, Readonly<object>> = {
  prune: DEFAULT_POLICY,
  health: DEFAULT_THRESHOLDS,
  server: DEFAULT_SERVER,
  metrics: DEFAULT_METRICS,
  logs: DEFAULT_LOGS,
  notify: DEFAULT_NOTIFY,
};

/** The commented-out `// "key": value` lines of each section of the example file. */
function commentedDefaults(text: string): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  let section: string | null = null;
  for (const line of text.split('\n')) {
    const open = /^ {2}"(\w+)": \{/.exec(line);
    if (open) {
      section = open[1]!;
      out[section] = {};
      continue;
    }
    if (/^ {2}\}/.test(line)) section = null;
    const kv = /^ {4}\/\/ "(\w+)": (.*?),?$/.exec(line);
    if (kv && section) out[section]![kv[1]!] = JSON.parse(kv[2]!);
  }
  return out;
}

function uncommented(text: string): string {
  return text.replace(/^( {4})\/\/ ("\w+": )/gm, '$1$2');
}

function expectUsage(fn: () => unknown, ...parts: (string | RegExp)[]): GuardError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GuardError);
    const e = err as GuardError;
    expect(e.exitCode).toBe(ExitCode.USAGE);
    for (const p of parts) expect(e.message).toMatch(p);
    return e;
  }
  throw new Error('expected a usage error');
}

describe('config/picoclaw-guard.example.jsonc', () => {
  const text = readFileSync(EXAMPLE, 'utf8');

  it('loads as it is (everything commented out: empty sections, all defaults)', () => {
    const cfg = loadGuardConfig(EXAMPLE, {});
    expect(Object.keys(cfg.sections).sort()).toEqual([...GUARD_SECTIONS].sort());
    for (const s of GUARD_SECTIONS) expect(cfg.sections[s]).toEqual({});
  });

  it('shows every key of every section, with the defaults the code really uses', () => {
    const shown = commentedDefaults(text);
    expect(Object.keys(shown).sort()).toEqual([...GUARD_SECTIONS].sort());
    for (const s of GUARD_SECTIONS) {
      expect(shown[s], `section ${s}`).toEqual({ ...DEFAULTS[s] });
    }
  });

  it('with every key uncommented it is still valid and still means the defaults', () => {
    const dir = tempDir();
    const path = join(dir, 'all.json');
    writeFileSync(path, uncommented(text));
    const cfg = loadGuardConfig(path, {});
    // health.max_db_size_mb null borrows prune.max_db_size_mb once the file sets it (src/health/config.ts).
    expect(parseHealthConfig(cfg.sections.health, path, cfg.sections.prune)).toEqual({
      ...DEFAULT_THRESHOLDS,
      max_db_size_mb: DEFAULT_POLICY.max_db_size_mb,
    });
    expect(policyValues(resolvePolicy({ guardConfig: { path, values: cfg.sections.prune! } }))).toEqual({
      ...DEFAULT_POLICY,
    });
    expect(parseServerConfig(cfg.sections.server, path)).toEqual({ ...DEFAULT_SERVER });
    expect(parseMetricsConfig(cfg.sections.metrics, path)).toEqual({ ...DEFAULT_METRICS });
    expect(parseLogsConfig(cfg.sections.logs, path)).toEqual({ ...DEFAULT_LOGS });
    expect(parseNotifyConfig(cfg.sections.notify, path)).toEqual({ ...DEFAULT_NOTIFY });
  });
});

describe('the guard config is JSONC', () => {
  const text = readFileSync(EXAMPLE, 'utf8');
  const keyLines = text
    .split('\n')
    .map((l, i) => ({ l, i }))
    .filter(({ l }) => /^ {4}\/\/ "\w+": /.test(l));

  it('uncommenting any one key of the example (trailing comma and all) keeps the file loadable', () => {
    expect(keyLines.length).toBeGreaterThan(30);
    const dir = tempDir();
    for (const { l, i } of keyLines) {
      const lines = text.split('\n');
      lines[i] = l.replace('// ', '');
      const path = join(dir, `one-${i}.jsonc`);
      writeFileSync(path, lines.join('\n'));
      const cfg = loadGuardConfig(path, {});
      const [, section] = /^ {2}"(\w+)": \{/.exec(
        lines
          .slice(0, i)
          .reverse()
          .find((x) => /^ {2}"\w+": \{/.test(x))!,
      )!;
      const key = /"(\w+)"/.exec(l)![1]!;
      expect(Object.keys(cfg.sections[section as keyof typeof cfg.sections]!), l).toEqual([key]);
      // and the owner of the section accepts the example's value
      if (section === 'health') parseHealthConfig(cfg.sections.health, path, cfg.sections.prune);
      if (section === 'server') parseServerConfig(cfg.sections.server, path);
      if (section === 'metrics') parseMetricsConfig(cfg.sections.metrics, path);
      if (section === 'notify') parseNotifyConfig(cfg.sections.notify, path);
      if (section === 'prune') resolvePolicy({ guardConfig: { path, values: cfg.sections.prune! } });
    }
  });

  it('block comments and trailing commas are allowed', () => {
    const path = join(tempDir(), 'g.jsonc');
    writeFileSync(path, '/* mine */ {\n  "prune": { "enabled": true, /* on */ },\n  "server": { "port": 9200, },\n}\n');
    expect(loadGuardConfig(path, {}).sections).toEqual({ prune: { enabled: true }, server: { port: 9200 } });
  });

  it('a syntax error gives file, line and column, never the text (it may hold the token)', () => {
    const path = join(tempDir(), 'g.json');
    writeFileSync(path, '{\n  "server": {\n    "token": sk-CANARY-0123456789abcdef\n  }\n}\n');
    const e = expectUsage(
      () => loadGuardConfig(path, {}),
      `the guard config ${path} is not valid JSON at line 3, column 14 (unexpected character)`,
    );
    expect(e.message).not.toContain('CANARY');
    expect(e.hint ?? '').not.toContain('CANARY');
  });

  it('a key or a section given twice is an error naming it', () => {
    const dir = tempDir();
    const a = join(dir, 'a.json');
    writeFileSync(a, '{\n  "prune": { "max_age_days": 30,\n "max_age_days": 3 }\n}');
    expectUsage(
      () => loadGuardConfig(a, {}),
      `the guard config ${a} sets "prune.max_age_days" twice (line 3, column 2)`,
    );
    const b = join(dir, 'b.json');
    writeFileSync(b, '{ "health": {}, "prune": {}, "health": { "temp_warn_celsius": 70 } }');
    expectUsage(() => loadGuardConfig(b, {}), 'sets "health" twice');
    // The same key in two different objects is fine.
    const c = join(dir, 'c.json');
    writeFileSync(c, '{ "prune": { "max_db_size_mb": 64 }, "health": { "max_db_size_mb": 64 } }');
    expect(Object.keys(loadGuardConfig(c, {}).sections)).toEqual(['prune', 'health']);
  });

  it('PICOCLAW_GUARD_CONFIG naming a missing file is an error naming the variable, like --config', () => {
    const missing = join(tempDir(), 'missing.json');
    expectUsage(
      () => loadGuardConfig(undefined, { PICOCLAW_GUARD_CONFIG: missing }),
      `cannot read the guard config PICOCLAW_GUARD_CONFIG=${missing}: no such file`,
    );
    expectUsage(() => loadGuardConfig(missing, {}), `cannot read the guard config --config ${missing}: no such file`);
  });
});

describe('the server and metrics sections', () => {
  it('unknown keys and wrong types are usage errors naming the file and the key', () => {
    expectUsage(
      () => parseServerConfig({ hots: '127.0.0.1' }, '/etc/g.json'),
      '/etc/g.json',
      'unknown key "server.hots"',
    );
    expectUsage(() => parseServerConfig({ port: '9109' }, '/etc/g.json'), '"server.port" must be a port number');
    expectUsage(() => parseServerConfig({ port: 70000 }, '/etc/g.json'), 'server.port');
    expectUsage(
      () => parseMetricsConfig({ refresh_seconds: 0 }, '/etc/g.json'),
      '"metrics.refresh_seconds" must be a whole number from 1',
    );
    expectUsage(
      () => parseMetricsConfig({ textfile_dir: 'relative/dir' }, '/etc/g.json'),
      '"metrics.textfile_dir" must be null or an absolute folder path',
    );
    expectUsage(() => parseMetricsConfig({ textfiledir: '/x' }, null), 'unknown key "metrics.textfiledir"');
  });

  it('a short token is refused without echoing it', () => {
    const e = expectUsage(
      () => parseServerConfig({ token: 'hunter2' }, '/etc/g.json'),
      '"server.token" must be null or a string of at least 16',
    );
    expect(e.message).not.toContain('hunter2');
  });

  it('settings: flags over the config file over the defaults; the token from the environment wins', () => {
    const dir = tempDir();
    const cfg = join(dir, 'g.json');
    writeFileSync(
      cfg,
      JSON.stringify({
        server: { host: '::1', port: 9200, token: 'c'.repeat(20) },
        metrics: { refresh_seconds: 10 },
        prune: { check_interval_minutes: 15 },
      }),
    );
    const env = { HOME: dir, PICOGUARD_NO_SYSTEM_STATE: '1' };
    const s = resolveSettings({ config: cfg, home: dir }, env);
    expect(s).toMatchObject({
      host: '::1',
      hostSource: 'config',
      port: 9200,
      token: 'c'.repeat(20),
      tokenSource: 'config',
      intervalSeconds: 900,
      metrics: { refresh_seconds: 10 },
    });
    const s2 = resolveSettings(
      { config: cfg, home: dir, port: '0', host: '127.0.0.2', textfileDir: '/run/tf' },
      { ...env, PICOCLAW_GUARD_TOKEN: 'e'.repeat(16), PICOGUARD_INTERVAL_SECONDS: '3' },
    );
    expect(s2).toMatchObject({
      host: '127.0.0.2',
      hostSource: 'flag',
      port: 0,
      token: 'e'.repeat(16),
      tokenSource: 'env',
      intervalSeconds: 3,
      intervalSource: 'env',
      metrics: { textfile_dir: '/run/tf' },
    });
  });

  it('a non-loopback host needs a token', () => {
    const dir = tempDir();
    const env = { HOME: dir, PICOGUARD_NO_SYSTEM_STATE: '1' };
    expectUsage(
      () => resolveSettings({ home: dir, host: '192.168.1.20' }, env),
      'refusing to serve on 192.168.1.20 without a bearer token',
    );
    expectUsage(() => resolveSettings({ home: dir, host: '::' }, env), 'without a bearer token');
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', '[::1]'])
      expect(resolveSettings({ home: dir, host }, env).token).toBeNull();
  });
});
