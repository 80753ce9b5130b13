import { field, readSection, sectionError, sectionNaming, type Field } from '../config/section.js';
import { LEVELS, type Level } from './types.js';

/**
 * The `health` section of the guard's config file: thresholds and the few knobs of the
 * sources. Defaults suit Pi-class boards: the firmware throttles the ARM from 80 °C and
 * hard-limits at 85 °C (frequency-management.adoc, docs/board-health.md#thermal-zones), so
 * WARN comes before throttling starts and CRITICAL when it has.
 * Levels are "ok" (report only), "warn" or "critical".
 */
export interface HealthThresholds {
  temp_warn_celsius: number;
  temp_critical_celsius: number;
  disk_free_warn_mb: number;
  disk_free_critical_mb: number;
  inodes_free_warn_percent: number;
  inodes_free_critical_percent: number;
  /** seahorse.db + WAL budget; null: taken from `prune.max_db_size_mb`, else not checked. 0 disables. */
  max_db_size_mb: number | null;
  /** WARN when seahorse.db + WAL reaches this share of max_db_size_mb. */
  db_size_warn_percent: number;
  under_voltage_now: Level;
  under_voltage_since_boot: Level;
  /** The guard's latch says under-voltage happened in an earlier boot. */
  under_voltage_previous_boot: Level;
  /** ARM frequency capped, throttled or soft temperature limit, now. */
  throttled_now: Level;
  throttled_since_boot: Level;
  /** vcgencmd exists but cannot be used (not in the video group, timeout, error). */
  vcgencmd_failed: Level;
  /** Gateway down or hung, or no PicoClaw home. A starting gateway is at most WARN. */
  gateway_not_ready: Level;
  gateway_timeout_ms: number;
  gateway_hung_after_seconds: number;
  /** Path of vcgencmd; false never runs it; null finds it on PATH. */
  vcgencmd: string | false | null;
  vcgencmd_timeout_ms: number;
  /**
   * Ask systeminformation when sysfs has no temperature at all (spawns 2-4 shells,
   * docs/board-health.md#why-the-guard-reads-sysfs-itself-instead-of-systeminformation).
   */
  systeminformation_fallback: boolean;
  /** WARN when either eMMC life-time estimate's upper end reaches this percent (docs/emmc.md); 0 never. */
  emmc_life_warn_percent: number;
  /** An eMMC past its rated life (estimate 0x0B). */
  emmc_life_exceeded: Level;
  /** eMMC PRE_EOL_INFO 0x02: 80 % of the reserved blocks are used. */
  emmc_pre_eol_warning: Level;
  /** eMMC PRE_EOL_INFO 0x03: the reserved blocks are nearly gone. */
  emmc_pre_eol_urgent: Level;
}

export const DEFAULT_THRESHOLDS: Readonly<HealthThresholds> = Object.freeze({
  temp_warn_celsius: 75,
  temp_critical_celsius: 80,
  disk_free_warn_mb: 1024,
  disk_free_critical_mb: 200,
  inodes_free_warn_percent: 5,
  inodes_free_critical_percent: 1,
  max_db_size_mb: null,
  db_size_warn_percent: 90,
  under_voltage_now: 'critical',
  under_voltage_since_boot: 'warn',
  under_voltage_previous_boot: 'ok',
  throttled_now: 'warn',
  throttled_since_boot: 'ok',
  vcgencmd_failed: 'warn',
  gateway_not_ready: 'critical',
  gateway_timeout_ms: 1000,
  gateway_hung_after_seconds: 900,
  vcgencmd: null,
  vcgencmd_timeout_ms: 2000,
  systeminformation_fallback: false,
  emmc_life_warn_percent: 80,
  emmc_life_exceeded: 'critical',
  emmc_pre_eol_warning: 'warn',
  emmc_pre_eol_urgent: 'critical',
});

const isAmount = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const number: Field<number> = field('a number of 0 or more', ['number'], isAmount);
const level: Field<Level> = field(
  `one of ${LEVELS.map((l) => `"${l}"`).join(', ')}`,
  ['string'],
  (v) => typeof v === 'string' && (LEVELS as readonly string[]).includes(v),
);
const FIELDS: { [K in keyof HealthThresholds]: Field<HealthThresholds[K]> } = {
  temp_warn_celsius: number,
  temp_critical_celsius: number,
  disk_free_warn_mb: number,
  disk_free_critical_mb: number,
  inodes_free_warn_percent: number,
  inodes_free_critical_percent: number,
  max_db_size_mb: field('a number of 0 or more, or null', ['number', 'null'], (v) => v === null || isAmount(v)),
  db_size_warn_percent: number,
  under_voltage_now: level,
  under_voltage_since_boot: level,
  under_voltage_previous_boot: level,
  throttled_now: level,
  throttled_since_boot: level,
  vcgencmd_failed: level,
  gateway_not_ready: level,
  gateway_timeout_ms: number,
  gateway_hung_after_seconds: number,
  vcgencmd: field(
    'a path, false (never run it) or null (find it on PATH)',
    ['string', 'boolean', 'null'],
    (v) => v === null || v === false || (typeof v === 'string' && v !== ''),
  ),
  vcgencmd_timeout_ms: number,
  systeminformation_fallback: field('true or false', ['boolean'], (v) => typeof v === 'boolean'),
  emmc_life_warn_percent: field('a number from 0 to 100', ['number'], (v) => isAmount(v) && (v as number) <= 100),
  emmc_life_exceeded: level,
  emmc_pre_eol_warning: level,
  emmc_pre_eol_urgent: level,
};

/**
 * Validate `health` (and borrow `prune.max_db_size_mb` when health has no budget of its
 * own). Unknown keys and wrong types are errors naming the file and the key: a typo in
 * a threshold must not silently leave the default in place.
 */
export function parseHealthConfig(
  section: Record<string, unknown> | undefined,
  path: string | null,
  prune?: Record<string, unknown>,
): HealthThresholds {
  const naming = sectionNaming('health', path, Object.keys(FIELDS));
  const out: HealthThresholds = { ...DEFAULT_THRESHOLDS, ...readSection(FIELDS, section, naming) };
  const pairs: [keyof HealthThresholds, keyof HealthThresholds, string][] = [
    ['temp_warn_celsius', 'temp_critical_celsius', 'not above'],
    ['disk_free_critical_mb', 'disk_free_warn_mb', 'not above'],
    ['inodes_free_critical_percent', 'inodes_free_warn_percent', 'not above'],
  ];
  for (const [lo, hi] of pairs) {
    if ((out[lo] as number) > (out[hi] as number)) {
      throw sectionError(naming, `${naming.where}: ${naming.key(lo)} must not be above ${naming.key(hi)}`);
    }
  }
  if (
    out.max_db_size_mb === null &&
    typeof prune?.max_db_size_mb === 'number' &&
    Number.isFinite(prune.max_db_size_mb)
  ) {
    out.max_db_size_mb = prune.max_db_size_mb;
  }
  return out;
}
