import { errnoCode } from '../errors.js';
import { isRecord, jsonState } from './store.js';

/**
 * The guard's own "under-voltage seen" latch, in the state folder.
 *
 * Why: the kernel's rpi_volt alarm clears itself within seconds (the driver re-reads
 * the firmware word every 2 s with a request that clears it), the legacy sysfs word means
 * "since the last 2 s poll", and a reboot clears even vcgencmd's sticky bits
 * (docs/board-health.md#under-voltage-through-the-kernel-rpi_volt). So the guard remembers.
 *
 * The file is written only when it changes: the first sighting ever, and the first
 * sighting in a new boot (the boot id changes). Nothing is written on a healthy board
 * or on later sightings in the same boot: no periodic writes to an SD card.
 */
export const LATCH_FILE = 'under-voltage-latch.json';

export interface LatchRecord {
  under_voltage_seen: true;
  /** The first sighting ever (kept across reboots). */
  first_seen_at: string;
  /** /proc/sys/kernel/random/boot_id of the boot with the latest sighting. */
  boot_id: string | null;
  /** The first sighting in that boot. */
  boot_seen_at: string;
  /** What saw it: vcgencmd, rpi_volt, legacy_sysfs. */
  source: string;
}

export interface LatchView {
  seen: boolean;
  first_seen_at: string | null;
  /** The latest sighting's boot: true for this boot, false for an earlier one, null if unknown. */
  this_boot: boolean | null;
  boot_seen_at: string | null;
  /** This run wrote the file. */
  written: boolean;
  /** The latch could not be read or written (the reading itself stands). */
  error: string | null;
}

/** A torn or foreign file is treated as no latch (and reported), and replaced at the next sighting. */
export const latchFile = jsonState<LatchRecord | null>(LATCH_FILE, {
  what: 'an under-voltage latch record',
  validate: (o) =>
    isRecord(o) && o.under_voltage_seen === true && typeof o.first_seen_at === 'string'
      ? {
          under_voltage_seen: true,
          first_seen_at: o.first_seen_at,
          boot_id: typeof o.boot_id === 'string' ? o.boot_id : null,
          boot_seen_at: typeof o.boot_seen_at === 'string' ? o.boot_seen_at : o.first_seen_at,
          source: typeof o.source === 'string' ? o.source : 'unknown',
        }
      : null,
  empty: () => null,
  serialize: (v) => JSON.stringify(v, null, 2) + '\n',
  remedy: 'move it away (it is written again at the next sighting)',
});

export function readLatch(stateDir: string): { record: LatchRecord | null; error: string | null } {
  const r = latchFile.read(stateDir);
  return { record: r.value, error: r.problem };
}

export interface LatchInput {
  /** Null: no state folder, so nothing is remembered. */
  stateDir: string | null;
  /** Under-voltage seen in this reading (now, since boot, or the hwmon alarm). */
  observed: boolean;
  bootId: string | null;
  now: Date;
  source: string;
}

export function updateLatch(input: LatchInput): LatchView {
  const { stateDir, observed, bootId, now, source } = input;
  if (stateDir === null) {
    return {
      seen: observed,
      first_seen_at: null,
      this_boot: observed ? true : null,
      boot_seen_at: null,
      written: false,
      error: 'no state folder: the latch is not kept',
    };
  }
  const { record, error } = readLatch(stateDir);
  const sameBoot = (r: LatchRecord) => (bootId !== null && r.boot_id !== null ? r.boot_id === bootId : null);
  if (!observed || (record && sameBoot(record) !== false)) {
    // Nothing new to remember: no write.
    if (!record)
      return { seen: false, first_seen_at: null, this_boot: null, boot_seen_at: null, written: false, error };
    return {
      seen: true,
      first_seen_at: record.first_seen_at,
      this_boot: observed ? true : sameBoot(record),
      boot_seen_at: record.boot_seen_at,
      written: false,
      error,
    };
  }
  const at = now.toISOString();
  const next: LatchRecord = {
    under_voltage_seen: true,
    first_seen_at: record?.first_seen_at ?? at,
    boot_id: bootId,
    boot_seen_at: at,
    source,
  };
  try {
    latchFile.write(stateDir, next);
    return {
      seen: true,
      first_seen_at: next.first_seen_at,
      this_boot: true,
      boot_seen_at: at,
      written: true,
      error: null,
    };
  } catch (err) {
    return {
      seen: true,
      first_seen_at: next.first_seen_at,
      this_boot: true,
      boot_seen_at: at,
      written: false,
      error: `cannot write the latch in ${stateDir}: ${errnoCode(err) ?? 'error'}`,
    };
  }
}
