import { describe, expect, it } from 'vitest';
import { GuardError } from '../../src/errors.js';
import { DEFAULT_POLICY, policyValues, resolvePolicy } from '../../src/prune/policy.js';

function err(fn: () => unknown): GuardError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GuardError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('policy resolution', () => {
  it('has PicoClaw defaults: disabled, 30 days, 100 sessions, 128 MB, 60 min, vacuum on', () => {
    const p = resolvePolicy({});
    expect(policyValues(p)).toEqual({ ...DEFAULT_POLICY });
    expect(DEFAULT_POLICY).toMatchObject({
      enabled: false,
      max_age_days: 30,
      max_sessions: 100,
      max_db_size_mb: 128,
      check_interval_minutes: 60,
      vacuum: true,
    });
    expect(p.max_age_days.source).toBe('default');
  });

  it('takes flags over env over guard config over PicoClaw config over defaults, and says where each came from', () => {
    const p = resolvePolicy({
      picoclawConfig: {
        path: '/h/config.json',
        values: { max_age_days: 10, max_sessions: 10, max_db_size_mb: 10, vacuum: false },
      },
      guardConfig: { path: '/etc/g.json', values: { max_age_days: 20, max_sessions: 20, enabled: true } },
      env: { PICOCLAW_SESSION_PRUNE_MAX_AGE_DAYS: '40' },
      flags: { max_age_days: '50' },
    });
    expect(policyValues(p)).toMatchObject({
      max_age_days: 50,
      max_sessions: 20,
      max_db_size_mb: 10,
      vacuum: false,
      enabled: true,
      check_interval_minutes: 60,
    });
    expect(p.max_age_days).toEqual({ value: 50, source: 'flag', from: '--max-age-days' });
    expect(p.max_sessions).toEqual({ value: 20, source: 'guard-config', from: '/etc/g.json' });
    expect(p.max_db_size_mb).toEqual({ value: 10, source: 'picoclaw-config', from: '/h/config.json' });
    const envOnly = resolvePolicy({
      env: {
        PICOCLAW_SESSION_PRUNE_MAX_AGE_DAYS: '40',
        PICOCLAW_SESSION_PRUNE_VACUUM: 'false',
        PICOCLAW_SESSION_PRUNE_ENABLED: 'true',
      },
    });
    expect(envOnly.max_age_days).toEqual({ value: 40, source: 'env', from: 'PICOCLAW_SESSION_PRUNE_MAX_AGE_DAYS' });
    expect(envOnly.vacuum.value).toBe(false);
    expect(envOnly.enabled.value).toBe(true);
  });

  it('0 is accepted (it disables a check)', () => {
    expect(policyValues(resolvePolicy({ flags: { max_age_days: '0', max_sessions: 0 } }))).toMatchObject({
      max_age_days: 0,
      max_sessions: 0,
    });
  });

  it.each([
    [{ flags: { max_age_days: '-1' } }, '--max-age-days', 'max_age_days'],
    [{ env: { PICOCLAW_SESSION_PRUNE_MAX_SESSIONS: 'lots' } }, 'PICOCLAW_SESSION_PRUNE_MAX_SESSIONS', 'max_sessions'],
    [{ env: { PICOCLAW_SESSION_PRUNE_MAX_AGEDAYS: '3' } }, 'PICOCLAW_SESSION_PRUNE_MAX_AGEDAYS', 'max_agedays'],
    [{ guardConfig: { path: '/etc/g.json', values: { max_age_days: '30' } } }, '/etc/g.json', 'max_age_days'],
    [{ guardConfig: { path: '/etc/g.json', values: { max_sessoins: 3 } } }, '/etc/g.json', 'max_sessoins'],
    [{ guardConfig: { path: '/etc/g.json', values: { max_db_size_mb: -5 } } }, '/etc/g.json', 'max_db_size_mb'],
    [{ guardConfig: { path: '/etc/g.json', values: { max_db_size_mb: 1.5 } } }, '/etc/g.json', 'max_db_size_mb'],
    [{ guardConfig: { path: '/etc/g.json', values: { vacuum: 'yes' } } }, '/etc/g.json', 'vacuum'],
    [{ picoclawConfig: { path: '/h/config.json', values: { archive_dir: '/x' } } }, '/h/config.json', 'archive_dir'],
    [{ picoclawConfig: { path: '/h/config.json', values: { enabled: 1 } } }, '/h/config.json', 'enabled'],
  ])('rejects a wrong value with the source and the key: %j', (inputs, where, key) => {
    const e = err(() => resolvePolicy(inputs));
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain(where);
    expect(e.message).toContain(key);
  });
});
