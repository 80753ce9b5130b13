import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS } from '../../src/health/config.js';
import { collectHealth, resolveVcgencmd } from '../../src/health/index.js';
import { newVcgencmdCache } from '../../src/health/vcgencmd.js';
import { fixedClock } from '../../src/io/clock.js';
import { tempDir } from '../support/tmp.js';
import { board } from './boards.js';

describe('collectHealth wiring', () => {
  it('never looks for the real vcgencmd when sysfs is a fixture (it would describe this machine)', () => {
    const env = { PATH: board('pi4').dir }; // a vcgencmd lies right there
    expect(resolveVcgencmd({ sysRoot: board('pi4').sys, env }, DEFAULT_THRESHOLDS)).toEqual({
      path: null,
      state: 'not_used',
    });
    expect(resolveVcgencmd({ sysRoot: '/sys', env }, DEFAULT_THRESHOLDS)).toEqual({ path: board('pi4').vcgencmd });
  });

  it('an explicit path wins; config false or an explicit null never runs it', () => {
    expect(resolveVcgencmd({ vcgencmd: '/x/vcgencmd' }, { ...DEFAULT_THRESHOLDS, vcgencmd: false })).toEqual({
      path: '/x/vcgencmd',
    });
    expect(resolveVcgencmd({ sysRoot: '/sys' }, { ...DEFAULT_THRESHOLDS, vcgencmd: false })).toEqual({
      path: null,
      state: 'not_used',
    });
    expect(resolveVcgencmd({ vcgencmd: null }, { ...DEFAULT_THRESHOLDS, vcgencmd: '/y' })).toEqual({
      path: null,
      state: 'not_used',
    });
    expect(resolveVcgencmd({ sysRoot: '/fixture' }, { ...DEFAULT_THRESHOLDS, vcgencmd: '/y' })).toEqual({ path: '/y' });
  });

  it('a failed PicoClaw discovery is a problem at the gateway_not_ready level', async () => {
    const b = board('pi4');
    const r = await collectHealth({
      sysRoot: b.sys,
      procRoot: b.proc,
      vcgencmd: b.vcgencmd,
      stateDir: tempDir(),
      home: null,
      homeError: "PicoClaw's config /h/config.json is not valid JSON",
      clock: fixedClock(0),
      cache: newVcgencmdCache(),
    });
    expect(r.status).toBe('CRITICAL');
    expect(r.problems).toEqual([
      { level: 'critical', code: 'picoclaw_missing', message: "PicoClaw's config /h/config.json is not valid JSON" },
    ]);
  });
});
