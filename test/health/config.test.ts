import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, GuardError } from '../../src/errors.js';
import { loadGuardConfig } from '../../src/guard-config.js';
import { DEFAULT_THRESHOLDS, parseHealthConfig } from '../../src/health/config.js';
import { tempDir } from '../support/tmp.js';

function fromFile(content: unknown) {
  const path = join(tempDir(), 'guard.json');
  writeFileSync(path, JSON.stringify(content));
  const cfg = loadGuardConfig(path, {});
  return { path, parse: () => parseHealthConfig(cfg.sections.health, cfg.path, cfg.sections.prune) };
}

function usageError(fn: () => unknown): GuardError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GuardError);
    expect((err as GuardError).exitCode).toBe(ExitCode.USAGE);
    return err as GuardError;
  }
  throw new Error('expected a GuardError');
}

describe('health thresholds config', () => {
  it('defaults: warn before the firmware starts throttling (80 °C), critical once it has', () => {
    expect(parseHealthConfig(undefined, null)).toEqual(DEFAULT_THRESHOLDS);
    expect(DEFAULT_THRESHOLDS.temp_warn_celsius).toBeLessThan(80);
    expect(DEFAULT_THRESHOLDS.temp_critical_celsius).toBeLessThanOrEqual(85);
  });

  it('takes valid values', () => {
    const { parse } = fromFile({
      health: { temp_warn_celsius: 65, under_voltage_since_boot: 'critical', vcgencmd: false, max_db_size_mb: 256 },
    });
    expect(parse()).toMatchObject({
      temp_warn_celsius: 65,
      under_voltage_since_boot: 'critical',
      vcgencmd: false,
      max_db_size_mb: 256,
    });
  });

  it('an unknown key names the file and the key', () => {
    const { path, parse } = fromFile({ health: { temp_warn_celcius: 70 } });
    const e = usageError(parse);
    expect(e.message).toContain(path);
    expect(e.message).toContain('health.temp_warn_celcius');
    expect(e.hint).toContain('temp_warn_celsius');
  });

  it.each([
    ['temp_warn_celsius', '70', /must be a number/],
    ['temp_warn_celsius', -1, /must be a number of 0 or more/],
    ['gateway_not_ready', 'error', /one of "ok", "warn", "critical"/],
    ['systeminformation_fallback', 'yes', /true or false/],
    ['vcgencmd', true, /a path, false/],
    ['max_db_size_mb', '100', /or null/],
  ])('wrong type: %s = %j', (key, value, re) => {
    const { path, parse } = fromFile({ health: { [key]: value } });
    const e = usageError(parse);
    expect(e.message).toMatch(re);
    expect(e.message).toContain(`health.${key}`);
    expect(e.message).toContain(path);
  });

  it('warn above critical is refused', () => {
    const { parse } = fromFile({ health: { temp_warn_celsius: 85, temp_critical_celsius: 80 } });
    expect(usageError(parse).message).toMatch(/temp_warn_celsius.*must not be above.*temp_critical_celsius/);
    const disk = fromFile({ health: { disk_free_warn_mb: 100, disk_free_critical_mb: 500 } });
    expect(usageError(disk.parse).message).toMatch(/disk_free_critical_mb/);
  });

  it('borrows prune.max_db_size_mb unless health sets its own', () => {
    expect(fromFile({ prune: { max_db_size_mb: 512 } }).parse().max_db_size_mb).toBe(512);
    expect(fromFile({ prune: { max_db_size_mb: 512 }, health: { max_db_size_mb: 100 } }).parse().max_db_size_mb).toBe(
      100,
    );
  });
});
