import { join } from 'node:path';
import type { BoardReading } from './board.js';
import { byNumberSuffix, listDir, readBytes, readInt, readString } from './read.js';
import { noData, type Section } from './types.js';
import { updateLatch, type LatchView } from '../state/uvlatch.js';
import { getThrottled, type VcgencmdCache, type VcgencmdState } from './vcgencmd.js';

/**
 * Throttling and under-voltage on a Raspberry Pi (docs/board-health.md#raspberry-pi-throttle-flags,
 * docs/board-health.md#under-voltage-through-the-kernel-rpi_volt).
 * Sources, best first:
 * 1. `vcgencmd get_throttled`: the firmware word with "now" and "since boot" bits;
 * 2. hwmon chip named `rpi_volt`, `in0_lcrit_alarm` (found by its name file: hwmonN is
 *    not stable); it clears within seconds, hence the latch (uvlatch.ts);
 * 3. the legacy `soc:firmware/get_throttled` file, read only when 1 and 2 are both
 *    missing (old 4.14-4.18 kernels): reading it logs a kernel WARN and its sticky bits
 *    mean "since the last 2 s poll", not since boot.
 * Boards with none of these (RISC-V, x86) have no firmware throttle word: "not detectable".
 */

/** The man page's bit table (raspberrypi/utils vcgencmd.1). Bits 16-19 are the sticky copies of 0-3. */
export const THROTTLE_BITS = [
  { bit: 0, flag: 'under_voltage', scope: 'now' },
  { bit: 1, flag: 'arm_freq_capped', scope: 'now' },
  { bit: 2, flag: 'throttled', scope: 'now' },
  { bit: 3, flag: 'soft_temp_limit', scope: 'now' },
  { bit: 16, flag: 'under_voltage', scope: 'since_boot' },
  { bit: 17, flag: 'arm_freq_capped', scope: 'since_boot' },
  { bit: 18, flag: 'throttled', scope: 'since_boot' },
  { bit: 19, flag: 'soft_temp_limit', scope: 'since_boot' },
] as const;

export interface ThrottleFlags {
  /** Null on boards that cannot detect it (the Zero range): never a reassuring false. */
  under_voltage: boolean | null;
  arm_freq_capped: boolean;
  throttled: boolean;
  soft_temp_limit: boolean;
}

export function decodeThrottled(word: number): { now: ThrottleFlags; since_boot: ThrottleFlags } {
  const flags = (scope: 'now' | 'since_boot'): ThrottleFlags => {
    const f = { under_voltage: false, arm_freq_capped: false, throttled: false, soft_temp_limit: false };
    for (const b of THROTTLE_BITS) if (b.scope === scope && (word >>> b.bit) & 1) f[b.flag] = true;
    return f;
  };
  return { now: flags('now'), since_boot: flags('since_boot') };
}

/** `50005\n`: the legacy file prints hex without 0x (`%x`, docs/board-health.md#units-and-encodings). */
export function parseLegacyThrottled(text: string | null): number | null {
  return text !== null && /^[0-9a-fA-F]+$/.test(text) ? parseInt(text, 16) : null;
}

export interface UnderVoltage {
  detectable: boolean;
  not_detectable_reason: string | null;
  now: boolean | null;
  /** From vcgencmd bit 16, or the guard's latch for this boot; null when neither can tell. */
  since_boot: boolean | null;
  /** rpi_volt in0_lcrit_alarm (true while or just after under-voltage); null without the chip. */
  hwmon_alarm: boolean | null;
  latch: LatchView;
}

export interface Pi5Power {
  /** /proc/device-tree/chosen/power/max_current: what the supply negotiated. */
  max_current_amperes: number | null;
  /** power_reset bit 0x02: the previous boot ended in a low-power (brownout) reset. */
  low_power_reset: boolean | null;
}

export interface ThrottleReading {
  source: 'vcgencmd' | 'rpi_volt' | 'legacy_sysfs';
  /** The firmware word as vcgencmd prints it (`0x50005`), when there is one. */
  get_throttled: string | null;
  now: ThrottleFlags | null;
  since_boot: ThrottleFlags | null;
  under_voltage: UnderVoltage;
  vcgencmd: { state: VcgencmdState; error: string | null };
  pi5_power: Pi5Power | null;
}

export type Throttle = Section<ThrottleReading>;

export interface ThrottleOptions {
  sysRoot: string;
  procRoot: string;
  /** A vcgencmd to run, or null (not found, or not to be used: `vcgencmdState` says which). */
  vcgencmd: string | null;
  vcgencmdState?: Extract<VcgencmdState, 'not_found' | 'not_used'>;
  timeoutMs?: number;
  cache?: VcgencmdCache;
  stateDir: string | null;
  now: Date;
  nowMs?: () => number;
  board: Pick<BoardReading, 'raspberry_pi' | 'model'> | null;
}

/** The rpi_volt alarm: 0/1, or null when no hwmon chip has that name. */
export function readRpiVoltAlarm(sysRoot: string): { present: boolean; alarm: boolean | null } {
  const dir = join(sysRoot, 'class', 'hwmon');
  for (const n of listDir(dir)
    .filter((x) => /^hwmon\d+$/.test(x))
    .sort(byNumberSuffix)) {
    if (readString(join(dir, n, 'name')) !== 'rpi_volt') continue;
    const v = readInt(join(dir, n, 'in0_lcrit_alarm'));
    return { present: true, alarm: v === null ? null : v !== 0 };
  }
  return { present: false, alarm: null };
}

/** A 4-byte big-endian device-tree cell (wf-panel-pi power.c). */
function readBeU32(path: string): number | null {
  const b = readBytes(path);
  return b && b.length >= 4 ? b.readUInt32BE(0) : null;
}

export function readPi5Power(procRoot: string, sysRoot: string): Pi5Power | null {
  for (const base of [join(procRoot, 'device-tree'), join(sysRoot, 'firmware', 'devicetree', 'base')]) {
    const dir = join(base, 'chosen', 'power');
    const max = readBeU32(join(dir, 'max_current'));
    const reset = readBeU32(join(dir, 'power_reset'));
    if (max !== null || reset !== null) {
      return {
        max_current_amperes: max === null ? null : max / 1000,
        low_power_reset: reset === null ? null : (reset & 0x02) !== 0,
      };
    }
  }
  return null;
}

/** The Zero range has no under-voltage detector (power-supplies.adoc). */
export function underVoltageDetectable(board: ThrottleOptions['board']): {
  detectable: boolean;
  reason: string | null;
} {
  if (board?.model && /Raspberry Pi Zero/i.test(board.model)) {
    return { detectable: false, reason: 'the Raspberry Pi Zero range has no under-voltage detector: 0 proves nothing' };
  }
  return { detectable: true, reason: null };
}

export async function readThrottle(opts: ThrottleOptions): Promise<Throttle> {
  const v = opts.vcgencmd
    ? await getThrottled(opts.vcgencmd, { timeoutMs: opts.timeoutMs, cache: opts.cache, nowMs: opts.nowMs })
    : { state: opts.vcgencmdState ?? 'not_found', word: null, error: null };
  const volt = readRpiVoltAlarm(opts.sysRoot);
  let word: number | null = v.state === 'ok' ? v.word : null;
  let source: ThrottleReading['source'] | null = word !== null ? 'vcgencmd' : volt.present ? 'rpi_volt' : null;
  if (source === null) {
    word = parseLegacyThrottled(
      readString(join(opts.sysRoot, 'devices', 'platform', 'soc', 'soc:firmware', 'get_throttled')),
    );
    if (word !== null) source = 'legacy_sysfs';
  }
  const vcg = { state: v.state, error: v.error };
  if (source === null) {
    const why =
      v.state === 'not_found' || v.state === 'not_used' ? 'no vcgencmd' : `vcgencmd failed (${v.error ?? v.state})`;
    return noData(`not detectable: ${why}, no rpi_volt hwmon, no firmware throttle word`);
  }
  const decoded = word !== null ? decodeThrottled(word) : null;
  const now = decoded?.now ?? null;
  // The legacy word's high bits mean "since the last kernel poll": not since boot.
  const sinceBoot = source === 'legacy_sysfs' ? null : (decoded?.since_boot ?? null);

  const det = underVoltageDetectable(opts.board);
  const recent =
    (decoded !== null && (decoded.now.under_voltage || decoded.since_boot.under_voltage)) || volt.alarm === true;
  const latch = updateLatch({
    stateDir: opts.stateDir,
    observed: recent,
    bootId: readString(join(opts.procRoot, 'sys', 'kernel', 'random', 'boot_id')),
    now: opts.now,
    source,
  });
  // On a Zero a clear bit is "unknown", a set bit still a fact.
  const orUnknown = (x: boolean | null) => (x === true || det.detectable ? x : null);
  const uvNow = orUnknown(now ? now.under_voltage || volt.alarm === true : volt.alarm);
  const uvSince = orUnknown(
    sinceBoot ? sinceBoot.under_voltage || latch.this_boot === true : latch.this_boot === true ? true : null,
  );
  if (now) now.under_voltage = orUnknown(now.under_voltage);
  if (sinceBoot) sinceBoot.under_voltage = orUnknown(sinceBoot.under_voltage);

  return {
    available: true,
    source,
    get_throttled: word === null ? null : `0x${word.toString(16)}`,
    now,
    since_boot: sinceBoot,
    under_voltage: {
      detectable: det.detectable,
      not_detectable_reason: det.reason,
      now: uvNow,
      since_boot: uvSince,
      hwmon_alarm: volt.alarm,
      latch,
    },
    vcgencmd: vcg,
    pi5_power: readPi5Power(opts.procRoot, opts.sysRoot),
  };
}
