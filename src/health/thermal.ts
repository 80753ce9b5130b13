import { join } from 'node:path';
import { byNumberSuffix, listDir, readInt, readString, readValue } from './read.js';
import { noData, type Section } from './types.js';

/**
 * Temperatures from sysfs (docs/board-health.md#thermal-zones): every
 * `class/thermal/thermal_zone*` with its type and trip points, and every hwmon
 * `temp*_input` with its chip's `name`. Values are millidegrees Celsius.
 *
 * The CPU temperature is chosen by zone type or chip name, never by zone number or
 * hwmon number (neither is stable across boots, docs/board-health.md#hwmon-chips). Only chips known to measure the
 * CPU qualify: rp1_adc's temp1 is the Pi 5's RP1 I/O chip, and an NVMe or a
 * 1-wire sensor is no CPU either (oshi#1023), so "the first hwmon" is never taken.
 */
export interface TripPoint {
  trip: number;
  type: string | null;
  temp_celsius: number | null;
  hyst_celsius: number | null;
}

export interface ThermalZone {
  zone: string;
  type: string | null;
  temp_celsius: number | null;
  /** errno of a failed read (EINVAL, ETIMEDOUT, ENODATA), or out_of_range. */
  error: string | null;
  trips: TripPoint[];
}

export interface HwmonTemp {
  sensor: string;
  label: string | null;
  temp_celsius: number | null;
  error: string | null;
}

export interface HwmonChip {
  hwmon: string;
  chip: string | null;
  temps: HwmonTemp[];
}

export interface ThermalReading {
  cpu_celsius: number | null;
  /** Where cpu_celsius came from, e.g. `thermal_zone0 (cpu-thermal)` or `hwmon sfctemp`. */
  cpu_source: string | null;
  zones: ThermalZone[];
  hwmon: HwmonChip[];
}

export type Thermal = Section<ThermalReading>;

/**
 * Zone types that are the CPU, best first: Pi and JH7110 `cpu-thermal`, TH1520
 * `cpu-thermal-zone`, CV18xx vendor `soc_thermal_0` (docs/board-health.md#thermal-zones), x86 `x86_pkg_temp`.
 */
export const CPU_ZONE_TYPES = [
  'cpu-thermal',
  'cpu_thermal',
  'cpu-thermal-zone',
  'soc_thermal_0',
  'soc-thermal',
  'soc_thermal',
  'cpu0-thermal',
  'x86_pkg_temp',
];
/**
 * hwmon chips that measure the CPU when there is no usable zone (docs/board-health.md#hwmon-chips: sfctemp,
 * 120e0000.tmon, pvt).
 */
export const CPU_HWMON_NAMES = [
  'cpu_thermal',
  'sfctemp',
  'pvt',
  'coretemp',
  'k10temp',
  'cpu_thermal_zone',
  'soc_thermal_0',
];

/** Readings outside this range are firmware glitches (raspberrypi/firmware#133), not temperatures. */
const MIN_SANE = -40;
const MAX_SANE = 150;

function celsius(milli: number | null): number | null {
  return milli === null ? null : milli / 1000;
}

/** One temperature file: the value, or why there is none. */
function readTemp(path: string): { temp: number | null; error: string | null } {
  const r = readValue(path);
  if (!r.ok) return { temp: null, error: r.code };
  if (!/^-?\d+$/.test(r.text)) return { temp: null, error: 'not_a_number' };
  const c = Number(r.text) / 1000;
  if (c < MIN_SANE || c > MAX_SANE) return { temp: null, error: 'out_of_range' };
  return { temp: c, error: null };
}

function readZone(dir: string, zone: string): ThermalZone {
  const names = listDir(dir);
  const trips: TripPoint[] = [];
  for (const n of names) {
    const m = /^trip_point_(\d+)_temp$/.exec(n);
    if (!m) continue;
    const k = Number(m[1]);
    trips.push({
      trip: k,
      type: readString(join(dir, `trip_point_${k}_type`)),
      temp_celsius: celsius(readInt(join(dir, n))),
      hyst_celsius: celsius(readInt(join(dir, `trip_point_${k}_hyst`))),
    });
  }
  trips.sort((a, b) => a.trip - b.trip);
  const t = readTemp(join(dir, 'temp'));
  return { zone, type: readString(join(dir, 'type')), temp_celsius: t.temp, error: t.error, trips };
}

function readChip(dir: string, hwmon: string): HwmonChip {
  const temps: HwmonTemp[] = [];
  for (const n of listDir(dir)) {
    const m = /^(temp\d+)_input$/.exec(n);
    if (!m) continue;
    const t = readTemp(join(dir, n));
    temps.push({ sensor: m[1]!, label: readString(join(dir, `${m[1]}_label`)), temp_celsius: t.temp, error: t.error });
  }
  temps.sort((a, b) => byNumberSuffix(a.sensor, b.sensor));
  return { hwmon, chip: readString(join(dir, 'name')), temps };
}

/** Pick the CPU reading: a known zone type, then any cpu/soc zone, then a known hwmon chip (hottest sensor). */
export function chooseCpu(zones: ThermalZone[], chips: HwmonChip[]): { celsius: number; source: string } | null {
  const usable = zones.filter((z) => z.temp_celsius !== null && z.type !== null);
  for (const type of CPU_ZONE_TYPES) {
    const z = usable.find((x) => x.type === type);
    if (z) return { celsius: z.temp_celsius!, source: `${z.zone} (${z.type})` };
  }
  const loose = usable.find((x) => /cpu|soc/i.test(x.type!));
  if (loose) return { celsius: loose.temp_celsius!, source: `${loose.zone} (${loose.type})` };
  const hottest = (c: HwmonChip) => {
    const v = c.temps.map((t) => t.temp_celsius).filter((x): x is number => x !== null);
    return v.length > 0 ? Math.max(...v) : null;
  };
  const named = (pred: (name: string) => boolean) => {
    for (const c of chips) {
      if (c.chip === null || !pred(c.chip)) continue;
      const h = hottest(c);
      if (h !== null) return { celsius: h, source: `hwmon ${c.chip}` };
    }
    return null;
  };
  for (const name of CPU_HWMON_NAMES) {
    const hit = named((n) => n === name);
    if (hit) return hit;
  }
  // JH7110 on vendor 5.15 names its chip after the device (`120e0000.tmon`).
  return named((n) => /tmon|temperature-sensor|cpu/i.test(n));
}

export function readThermal(sysRoot: string): Thermal {
  const thermalDir = join(sysRoot, 'class', 'thermal');
  const zones = listDir(thermalDir)
    .filter((n) => /^thermal_zone\d+$/.test(n))
    .sort(byNumberSuffix)
    .map((n) => readZone(join(thermalDir, n), n));
  const hwmonDir = join(sysRoot, 'class', 'hwmon');
  const chips = listDir(hwmonDir)
    .filter((n) => /^hwmon\d+$/.test(n))
    .sort(byNumberSuffix)
    .map((n) => readChip(join(hwmonDir, n), n))
    .filter((c) => c.temps.length > 0);
  if (zones.length === 0 && chips.length === 0) return noData('no thermal zone and no hwmon temperature sensor');
  const cpu = chooseCpu(zones, chips);
  return { available: true, cpu_celsius: cpu?.celsius ?? null, cpu_source: cpu?.source ?? null, zones, hwmon: chips };
}

/**
 * systeminformation's cpuTemperature(), only when sysfs had nothing at all. It spawns
 * two to four shells and reads the real /sys whatever the sysfs root
 * (docs/board-health.md#why-the-guard-reads-sysfs-itself-instead-of-systeminformation), so
 * the caller allows it only for the real /sys and only when configured.
 */
export async function systeminformationFallback(): Promise<Thermal> {
  try {
    const si = await import('systeminformation');
    const t = await si.cpuTemperature();
    // `main` is null at run time when nothing was found, whatever the .d.ts says.
    const main = (t as { main: number | null }).main;
    if (typeof main === 'number' && Number.isFinite(main) && main > MIN_SANE && main < MAX_SANE) {
      return { available: true, cpu_celsius: main, cpu_source: 'systeminformation', zones: [], hwmon: [] };
    }
  } catch {
    // not installed or failed: no data either way
  }
  return noData('no thermal zone, no hwmon temperature sensor, and systeminformation found none');
}
