import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readThermal } from '../../src/health/thermal.js';
import { tempDir } from '../support/tmp.js';
import { board, type BoardName } from './boards.js';

function tree(files: Record<string, string>): string {
  const root = tempDir();
  for (const [rel, v] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    if (v === '<dir>') mkdirSync(join(root, rel));
    else writeFileSync(join(root, rel), v + '\n');
  }
  return root;
}

describe('thermal', () => {
  const cpu: [BoardName, number, string][] = [
    ['pi4', 52.582, 'thermal_zone0 (cpu-thermal)'],
    ['pi5', 44.6, 'thermal_zone0 (cpu-thermal)'],
    ['zero2w', 48.312, 'thermal_zone0 (cpu-thermal)'],
    ['visionfive2', 45.945, 'thermal_zone0 (cpu-thermal)'],
    ['licheepi4a', 40, 'thermal_zone0 (cpu-thermal-zone)'],
    ['milkv-duo', 42, 'thermal_zone0 (soc_thermal_0)'],
  ];
  it.each(cpu)('%s: CPU by zone type', (name, celsius, source) => {
    const r = readThermal(board(name).sys);
    expect(r).toMatchObject({ available: true, cpu_celsius: celsius, cpu_source: source });
  });

  it('x86 VM without zones or hwmon: no data', () => {
    expect(readThermal(board('x86-vm').sys)).toEqual({
      available: false,
      reason: 'no thermal zone and no hwmon temperature sensor',
    });
  });

  it('Pi 5: trip points in order, every hwmon chip by name, rp1_adc listed but never the CPU', () => {
    const r = readThermal(board('pi5').sys);
    if (!r.available) throw new Error('no data');
    expect(r.zones[0]!.trips).toEqual([
      { trip: 0, type: 'critical', temp_celsius: 110, hyst_celsius: 0 },
      { trip: 1, type: 'active', temp_celsius: 50, hyst_celsius: 5 },
      { trip: 2, type: 'active', temp_celsius: 60, hyst_celsius: 5 },
      { trip: 3, type: 'active', temp_celsius: 67.5, hyst_celsius: 5 },
      { trip: 4, type: 'active', temp_celsius: 75, hyst_celsius: 5 },
    ]);
    expect(r.hwmon.map((c) => c.chip)).toEqual(['rp1_adc', 'cpu_thermal']); // pwmfan and rpi_volt have no temp*_input
    expect(r.hwmon[0]!.temps).toEqual([{ sensor: 'temp1', label: null, temp_celsius: 46.2, error: null }]);
  });

  it('CPU chosen by type, not zone number: the CPU zone is zone 1 here', () => {
    const root = tree({
      'class/thermal/thermal_zone0/type': 'acpitz',
      'class/thermal/thermal_zone0/temp': '27800',
      'class/thermal/thermal_zone1/type': 'cpu-thermal',
      'class/thermal/thermal_zone1/temp': '61000',
    });
    expect(readThermal(root)).toMatchObject({ cpu_celsius: 61, cpu_source: 'thermal_zone1 (cpu-thermal)' });
  });

  it('orders zones numerically (thermal_zone10 after thermal_zone9)', () => {
    const files: Record<string, string> = {};
    for (const n of [10, 9, 2]) {
      files[`class/thermal/thermal_zone${n}/type`] = `z${n}`;
      files[`class/thermal/thermal_zone${n}/temp`] = '30000';
    }
    const r = readThermal(tree(files));
    expect(r.available && r.zones.map((z) => z.zone)).toEqual(['thermal_zone2', 'thermal_zone9', 'thermal_zone10']);
    expect(r.available && r.cpu_celsius).toBeNull();
  });

  it('VisionFive 2 on vendor 5.15: no zone, CPU from hwmon 120e0000.tmon (sbc-bench 4pBf)', () => {
    const root = tree({ 'class/hwmon/hwmon0/name': '120e0000.tmon', 'class/hwmon/hwmon0/temp1_input': '51000' });
    expect(readThermal(root)).toMatchObject({
      available: true,
      cpu_celsius: 51,
      cpu_source: 'hwmon 120e0000.tmon',
      zones: [],
    });
  });

  it('LicheePi 4A pvt: hottest sensor when the chip is the fallback', () => {
    const root = tree({
      'class/hwmon/hwmon3/name': 'pvt',
      'class/hwmon/hwmon3/temp1_input': '40000',
      'class/hwmon/hwmon3/temp2_input': '40200',
    });
    expect(readThermal(root)).toMatchObject({ cpu_celsius: 40.2, cpu_source: 'hwmon pvt' });
  });

  it('a zone whose temp cannot be read keeps its error; the CPU then comes from hwmon', () => {
    const root = tree({
      'class/thermal/thermal_zone0/type': 'cpu-thermal',
      'class/thermal/thermal_zone0/temp': '<dir>', // read fails (EISDIR), as EINVAL/ETIMEDOUT do on real boards
      'class/hwmon/hwmon0/name': 'cpu_thermal',
      'class/hwmon/hwmon0/temp1_input': '55123',
      'class/hwmon/hwmon0/temp1_label': 'SoC',
    });
    const r = readThermal(root);
    if (!r.available) throw new Error('no data');
    expect(r.zones[0]).toMatchObject({ type: 'cpu-thermal', temp_celsius: null, error: 'EISDIR' });
    expect(r.cpu_celsius).toBe(55.123);
    expect(r.hwmon[0]!.temps[0]!.label).toBe('SoC');
  });

  it('rejects glitch readings out of range (raspberrypi/firmware#133) and garbage', () => {
    const root = tree({
      'class/thermal/thermal_zone0/type': 'cpu-thermal',
      'class/thermal/thermal_zone0/temp': '-2147483',
      'class/thermal/thermal_zone1/type': 'soc_thermal_0',
      'class/thermal/thermal_zone1/temp': 'abc',
    });
    const r = readThermal(root);
    expect(r.available && r.zones.map((z) => z.error)).toEqual(['out_of_range', 'not_a_number']);
    expect(r.available && r.cpu_celsius).toBeNull();
  });

  it('never takes rp1_adc as the CPU even when it is the only sensor', () => {
    const root = tree({ 'class/hwmon/hwmon0/name': 'rp1_adc', 'class/hwmon/hwmon0/temp1_input': '46200' });
    expect(readThermal(root)).toMatchObject({ available: true, cpu_celsius: null, cpu_source: null });
  });
});
