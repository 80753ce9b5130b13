import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { field, readSection, sectionNaming } from '../../src/config/section.js';
import { DEFAULT_METRICS, DEFAULT_SERVER, parseMetricsConfig, parseServerConfig } from '../../src/daemon/settings.js';
import { ExitCode, GuardError } from '../../src/errors.js';
import { loadGuardConfig } from '../../src/guard-config.js';
import { DEFAULT_THRESHOLDS, parseHealthConfig } from '../../src/health/config.js';
import { envName, POLICY_KEYS, resolvePolicy, type PolicyKey } from '../../src/prune/policy.js';
import { tempDir } from '../support/tmp.js';

/**
 * A config can hold secrets (server.token; PicoClaw's config.json holds API keys beside
 * session.prune), so a wrong value is never quoted back: not a string, not a number.
 * Each candidate below is wrong for some keys; every key must refuse at least one of them.
 */
const SECRET = 'sk-CANARY-5150';
const DIGITS = '8675309';
const CANDIDATES: unknown[] = [
  `${SECRET} with spaces`,
  SECRET,
  -Number(`${DIGITS}.25`),
  Number(`${DIGITS}.25`),
  Number(`${DIGITS}${DIGITS}`),
  { api_key: SECRET },
  [SECRET],
  true,
];

function refusal(fn: () => unknown): GuardError | null {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GuardError);
    return err as GuardError;
  }
  return null;
}

/** Every key of a section refuses at least one candidate, naming the file and the key but no value. */
function expectNoEcho(
  keys: readonly string[],
  parse: (key: string, value: unknown) => unknown,
  named: (key: string) => string[],
) {
  for (const key of keys) {
    let refused = 0;
    for (const value of CANDIDATES) {
      const e = refusal(() => parse(key, value));
      if (!e) continue;
      refused++;
      const text = `${e.message}\n${e.hint ?? ''}`;
      expect(e.exitCode, e.message).toBe(ExitCode.USAGE);
      expect(text, `${key} = ${JSON.stringify(value)}`).not.toContain('CANARY');
      expect(text, `${key} = ${JSON.stringify(value)}`).not.toContain(DIGITS);
      for (const part of named(key)) expect(e.message).toContain(part);
    }
    expect(refused, `no candidate is wrong for ${key}`).toBeGreaterThan(0);
  }
}

/** A real guard config file, loaded as the CLI loads it. */
function guardFile(section: string, key: string, value: unknown) {
  const path = join(tempDir(), 'guard.json');
  writeFileSync(path, JSON.stringify({ [section]: { [key]: value } }));
  return { path, cfg: loadGuardConfig(path, {}) };
}

describe('no config error ever quotes a value', () => {
  it('health: every key, from a file', () => {
    const paths = new Map<string, string>();
    expectNoEcho(
      Object.keys(DEFAULT_THRESHOLDS),
      (key, value) => {
        const { path, cfg } = guardFile('health', key, value);
        paths.set(key, path);
        return parseHealthConfig(cfg.sections.health, cfg.path, cfg.sections.prune);
      },
      (key) => [paths.get(key)!, `"health.${key}"`],
    );
  });

  it('health: warn above critical names both keys, not their values', () => {
    const bad = { temp_warn_celsius: 86753, temp_critical_celsius: 86752 };
    const e = refusal(() => parseHealthConfig(bad, '/etc/g.json'));
    expect(e?.message).toBe('/etc/g.json: "health.temp_warn_celsius" must not be above "health.temp_critical_celsius"');
  });

  it('server and metrics: every key, from a file', () => {
    const paths = new Map<string, string>();
    for (const [section, keys, parse] of [
      ['server', Object.keys(DEFAULT_SERVER), parseServerConfig],
      ['metrics', Object.keys(DEFAULT_METRICS), parseMetricsConfig],
    ] as const) {
      expectNoEcho(
        keys,
        (key, value) => {
          const { path, cfg } = guardFile(section, key, value);
          paths.set(key, path);
          return parse(cfg.sections[section], cfg.path);
        },
        (key) => [paths.get(key)!, `"${section}.${key}"`],
      );
    }
  });

  it('prune: every key from the guard config, PicoClaw config.json, the environment and flags', () => {
    const picoclawKeys: PolicyKey[] = [
      'enabled',
      'max_age_days',
      'max_sessions',
      'max_db_size_mb',
      'check_interval_minutes',
      'vacuum',
    ];
    expectNoEcho(
      POLICY_KEYS,
      (key, value) => resolvePolicy({ guardConfig: { path: '/etc/g.json', values: { [key]: value } } }),
      (key) => ['/etc/g.json (prune)', key],
    );
    expectNoEcho(
      picoclawKeys,
      (key, value) => resolvePolicy({ picoclawConfig: { path: '/h/config.json', values: { [key]: value } } }),
      (key) => ['/h/config.json (session.prune)', key],
    );
    // The environment and flags give text; a key with no text to refuse (archive_dir takes any) is left out.
    const textKeys = POLICY_KEYS.filter((k) => k !== 'archive_dir');
    const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
    expectNoEcho(
      textKeys,
      (key, value) => resolvePolicy({ env: { [envName(key as PolicyKey)]: text(value) } }),
      (key) => [`environment ${envName(key as PolicyKey)}`, key],
    );
    expectNoEcho(
      textKeys,
      (key, value) => resolvePolicy({ flags: { [key]: text(value) } }),
      (key) => [`--${key.replace(/_/g, '-')}`, key],
    );
  });
});

describe('the section validator', () => {
  const fields = {
    port: field('a port number', ['number'], (v) => v === 1),
    name: field('a name', ['string', 'null'], (v) => v === 'ok' || v === null),
  };
  const naming = sectionNaming('demo', '/etc/g.json', Object.keys(fields));
  const message = (section: Record<string, unknown>) => refusal(() => readSection(fields, section, naming))?.message;

  it('names a value of a type the key never takes by its type, and one of its own type not at all', () => {
    expect(message({ port: '1' })).toBe('/etc/g.json: "demo.port" must be a port number, not a string');
    expect(message({ port: 2 })).toBe('/etc/g.json: "demo.port" must be a port number');
    expect(message({ name: 'nope' })).toBe('/etc/g.json: "demo.name" must be a name');
    expect(message({ name: {} })).toBe('/etc/g.json: "demo.name" must be a name, not an object');
    expect(readSection(fields, { name: null, port: 1 }, naming)).toEqual({ name: null, port: 1 });
  });

  it('a key named like an Object method is an unknown key, not a crash', () => {
    for (const key of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const section = JSON.parse(`{"${key}": 70}`) as Record<string, unknown>;
      expect(message(section)).toBe(`/etc/g.json: unknown key "demo.${key}"`);
      expect(refusal(() => parseHealthConfig(section, '/etc/g.json'))?.message).toBe(`/etc/g.json: unknown key "health.${key}"`);
      expect(refusal(() => parseServerConfig(section, '/etc/g.json'))?.message).toBe(`/etc/g.json: unknown key "server.${key}"`);
    }
  });
});
