import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBoard } from '../../src/health/board.js';
import {
  decodeThrottled,
  parseLegacyThrottled,
  readPi5Power,
  readRpiVoltAlarm,
  readThrottle,
  THROTTLE_BITS,
  type ThrottleOptions,
} from '../../src/health/throttle.js';
import { newVcgencmdCache } from '../../src/health/vcgencmd.js';
import { tempDir } from '../support/tmp.js';
import { board, type BoardName } from './boards.js';

const NOW = new Date('2026-06-13T18:00:00Z');

function opts(name: BoardName, over: Partial<ThrottleOptions> = {}): ThrottleOptions {
  const b = board(name);
  const bd = readBoard(b.sys, b.proc);
  return {
    sysRoot: b.sys,
    procRoot: b.proc,
    vcgencmd: b.vcgencmd,
    cache: newVcgencmdCache(),
    stateDir: tempDir(),
    now: NOW,
    board: bd.available ? bd : null,
    ...over,
  };
}

const NONE = { under_voltage: false, arm_freq_capped: false, throttled: false, soft_temp_limit: false };

describe('get_throttled bit decoding (vcgencmd.1)', () => {
  it.each(THROTTLE_BITS.map((b) => [b.bit, b.flag, b.scope] as const))('bit %i → %s (%s)', (bit, flag, scope) => {
    const d = decodeThrottled(2 ** bit);
    const other = scope === 'now' ? 'since_boot' : 'now';
    expect(d[scope]).toEqual({ ...NONE, [flag]: true });
    expect(d[other]).toEqual(NONE);
  });

  it.each([
    [0x0, NONE, NONE],
    [0x50005, { ...NONE, under_voltage: true, throttled: true }, { ...NONE, under_voltage: true, throttled: true }],
    [0x50000, NONE, { ...NONE, under_voltage: true, throttled: true }],
    [0x20002, { ...NONE, arm_freq_capped: true }, { ...NONE, arm_freq_capped: true }],
    [0x80008, { ...NONE, soft_temp_limit: true }, { ...NONE, soft_temp_limit: true }],
    [
      0xf000f,
      { under_voltage: true, arm_freq_capped: true, throttled: true, soft_temp_limit: true },
      { under_voltage: true, arm_freq_capped: true, throttled: true, soft_temp_limit: true },
    ],
  ])('word %d', (word, now, since) => {
    expect(decodeThrottled(word)).toEqual({ now, since_boot: since });
  });

  it('ignores undocumented bits', () => {
    expect(decodeThrottled(0x0ff0_fff0)).toEqual({ now: NONE, since_boot: NONE });
  });

  it('reads the legacy sysfs word: hex without 0x', () => {
    expect(parseLegacyThrottled('80008')).toBe(0x80008);
    expect(parseLegacyThrottled('0')).toBe(0);
    expect(parseLegacyThrottled('0x5')).toBeNull();
    expect(parseLegacyThrottled(null)).toBeNull();
  });
});

describe('throttle source', () => {
  it('healthy Pi 4: vcgencmd 0x0, under-voltage no/no', async () => {
    const r = await readThrottle(opts('pi4'));
    expect(r).toMatchObject({
      available: true,
      source: 'vcgencmd',
      get_throttled: '0x0',
      now: NONE,
      since_boot: NONE,
      vcgencmd: { state: 'ok' },
    });
    expect(r.available && r.under_voltage).toMatchObject({
      detectable: true,
      now: false,
      since_boot: false,
      hwmon_alarm: false,
      latch: { seen: false, written: false },
    });
  });

  it('Pi 4 under-voltage now and since boot (0x50005, alarm 1): latched', async () => {
    const r = await readThrottle(opts('pi4-undervoltage'));
    if (!r.available) throw new Error('no data');
    expect(r.get_throttled).toBe('0x50005');
    expect(r.under_voltage).toMatchObject({
      now: true,
      since_boot: true,
      hwmon_alarm: true,
      latch: { seen: true, this_boot: true, written: true, first_seen_at: NOW.toISOString() },
    });
  });

  it('Zero 2 W: under-voltage "not detectable" (null), throttle bits still decoded', async () => {
    const r = await readThrottle(opts('zero2w'));
    if (!r.available) throw new Error('no data');
    expect(r.under_voltage).toMatchObject({
      detectable: false,
      now: null,
      since_boot: null,
      not_detectable_reason: expect.stringContaining('Zero'),
    });
    expect(r.now).toEqual({ ...NONE, under_voltage: null });
    expect(r.since_boot).toEqual({ ...NONE, under_voltage: null });
  });

  it.each(['visionfive2', 'licheepi4a', 'milkv-duo', 'x86-vm'] as const)(
    '%s: not detectable (no data)',
    async (name) => {
      const r = await readThrottle(opts(name));
      expect(r.available).toBe(false);
      expect(!r.available && r.reason).toMatch(/^not detectable/);
    },
  );

  it('no vcgencmd on a Pi: the rpi_volt alarm alone; since boot unknown unless latched', async () => {
    const healthy = await readThrottle(opts('pi4', { vcgencmd: null }));
    expect(healthy).toMatchObject({
      available: true,
      source: 'rpi_volt',
      get_throttled: null,
      now: null,
      since_boot: null,
      vcgencmd: { state: 'not_found' },
    });
    expect(healthy.available && healthy.under_voltage).toMatchObject({ now: false, since_boot: null });
    const uv = await readThrottle(opts('pi4-undervoltage', { vcgencmd: null, vcgencmdState: 'not_used' }));
    expect(uv.available && uv.under_voltage).toMatchObject({
      now: true,
      since_boot: true,
      hwmon_alarm: true,
      latch: { written: true },
    });
    expect(uv.available && uv.vcgencmd.state).toBe('not_used');
  });

  it('vcgencmd failing (no access) falls back to rpi_volt and says why', async () => {
    const dir = tempDir();
    const path = join(dir, 'vcgencmd');
    writeFileSync(path, `#!/bin/sh\necho "Can't open device file: /dev/vcio"\nexit 255\n`, { mode: 0o755 });
    const r = await readThrottle(opts('pi4', { vcgencmd: path }));
    expect(r).toMatchObject({ available: true, source: 'rpi_volt', vcgencmd: { state: 'no_access' } });
  });

  it('finds rpi_volt by name wherever its hwmon number is (Pi 5: hwmon2)', () => {
    expect(readRpiVoltAlarm(board('pi5').sys)).toEqual({ present: true, alarm: false });
    expect(readRpiVoltAlarm(board('visionfive2').sys)).toEqual({ present: false, alarm: null });
  });

  it(
    'legacy soc:firmware/get_throttled only without vcgencmd and rpi_volt; ' + 'its high bits are not "since boot"',
    async () => {
      const root = tempDir();
      mkdirSync(join(root, 'sys/devices/platform/soc/soc:firmware'), { recursive: true });
      writeFileSync(join(root, 'sys/devices/platform/soc/soc:firmware/get_throttled'), '50005\n');
      const r = await readThrottle({
        sysRoot: join(root, 'sys'),
        procRoot: join(root, 'proc'),
        vcgencmd: null,
        stateDir: tempDir(),
        now: NOW,
        board: null,
      });
      expect(r).toMatchObject({
        available: true,
        source: 'legacy_sysfs',
        get_throttled: '0x50005',
        since_boot: null,
        now: { under_voltage: true, throttled: true },
      });
      expect(r.available && r.under_voltage).toMatchObject({ now: true, since_boot: true, latch: { written: true } });
    },
  );

  it('a Pi with rpi_volt never reads the legacy file (it logs a kernel WARN)', async () => {
    const root = tempDir();
    mkdirSync(join(root, 'sys/devices/platform/soc/soc:firmware'), { recursive: true });
    mkdirSync(join(root, 'sys/class/hwmon/hwmon0'), { recursive: true });
    writeFileSync(join(root, 'sys/devices/platform/soc/soc:firmware/get_throttled'), '50005\n');
    writeFileSync(join(root, 'sys/class/hwmon/hwmon0/name'), 'rpi_volt\n');
    writeFileSync(join(root, 'sys/class/hwmon/hwmon0/in0_lcrit_alarm'), '0\n');
    const r = await readThrottle({
      sysRoot: join(root, 'sys'),
      procRoot: join(root, 'proc'),
      vcgencmd: null,
      stateDir: tempDir(),
      now: NOW,
      board: null,
    });
    expect(r).toMatchObject({ source: 'rpi_volt', get_throttled: null });
  });

  it('Pi 5 power from the device tree: 5 A negotiated, no low-power reset', async () => {
    const b = board('pi5');
    expect(readPi5Power(b.proc, b.sys)).toEqual({ max_current_amperes: 5, low_power_reset: false });
    expect(readPi5Power(board('pi4').proc, board('pi4').sys)).toBeNull();
    const root = tempDir();
    mkdirSync(join(root, 'proc/device-tree/chosen/power'), { recursive: true });
    writeFileSync(join(root, 'proc/device-tree/chosen/power/max_current'), Buffer.from([0, 0, 0x0b, 0xb8]));
    writeFileSync(join(root, 'proc/device-tree/chosen/power/power_reset'), Buffer.from([0, 0, 0, 2]));
    expect(readPi5Power(join(root, 'proc'), join(root, 'sys'))).toEqual({
      max_current_amperes: 3,
      low_power_reset: true,
    });
  });
});
