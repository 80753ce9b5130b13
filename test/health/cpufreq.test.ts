import { describe, expect, it } from 'vitest';
import { readCpufreq } from '../../src/health/cpufreq.js';
import { parseCpuList } from '../../src/health/read.js';
import { board } from './boards.js';

describe('cpufreq', () => {
  it('Pi 4: per-core folders, kHz to Hz', () => {
    const r = readCpufreq(board('pi4').sys);
    if (!r.available) throw new Error('no data');
    expect(r.cores).toHaveLength(4);
    expect(r.cores[3]).toEqual({
      cpu: 3,
      cur_hertz: 600_000_000,
      scaling_min_hertz: 600_000_000,
      scaling_max_hertz: 1_500_000_000,
      cpuinfo_min_hertz: 600_000_000,
      cpuinfo_max_hertz: 1_500_000_000,
      governor: 'ondemand',
      driver: 'cpufreq-dt',
    });
  });

  it('VisionFive 2: one policy shared by four cores (affected_cpus)', () => {
    const r = readCpufreq(board('visionfive2').sys);
    if (!r.available) throw new Error('no data');
    expect(r.cores.map((c) => c.cpu)).toEqual([0, 1, 2, 3]);
    expect(
      r.cores.every(
        (c) => c.cur_hertz === 1_500_000_000 && c.cpuinfo_min_hertz === 375_000_000 && c.governor === 'performance',
      ),
    ).toBe(true);
  });

  it('Milk-V Duo and the x86 VM: no cpufreq is "no data", never 0 Hz', () => {
    expect(readCpufreq(board('milkv-duo').sys)).toEqual({
      available: false,
      reason: 'no cpufreq support (no cpufreq folder for any CPU)',
    });
    expect(readCpufreq(board('x86-vm').sys).available).toBe(false);
  });

  it('parses kernel CPU lists', () => {
    expect(parseCpuList('0-3')).toEqual([0, 1, 2, 3]);
    expect(parseCpuList('0,2-3,7')).toEqual([0, 2, 3, 7]);
    expect(parseCpuList('0 1 2 3')).toEqual([0, 1, 2, 3]);
    expect(parseCpuList('')).toEqual([]);
  });
});
