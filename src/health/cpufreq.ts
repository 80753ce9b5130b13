import { join } from 'node:path';
import { byNumberSuffix, listDir, parseCpuList, readInt, readString } from './read.js';
import { noData, type Section } from './types.js';

/**
 * CPU frequency per core from cpufreq sysfs (docs/board-health.md#cpu-frequency). sysfs speaks
 * kHz; the report speaks Hz (×1000), as node_exporter does.
 *
 * `scaling_cur_freq` is what the kernel asked for; on a Pi the firmware may run slower
 * , which is why throttling comes from vcgencmd, not from here.
 * `cpuinfo_cur_freq` is root-only (mode 0400) and is not read. Boards without a
 * cpufreq driver (Milk-V Duo class) get "no data", never 0.
 */
export interface CoreFreq {
  cpu: number;
  cur_hertz: number | null;
  scaling_min_hertz: number | null;
  scaling_max_hertz: number | null;
  cpuinfo_min_hertz: number | null;
  cpuinfo_max_hertz: number | null;
  governor: string | null;
  driver: string | null;
}

export type Cpufreq = Section<{ cores: CoreFreq[] }>;

function hz(khz: number | null): number | null {
  return khz === null ? null : khz * 1000;
}

/** The CPUs to look at: `online`, else every cpuN folder. */
export function onlineCpus(sysRoot: string): number[] {
  const base = join(sysRoot, 'devices', 'system', 'cpu');
  const online = readString(join(base, 'online'));
  if (online !== null) return parseCpuList(online);
  return listDir(base)
    .filter((n) => /^cpu\d+$/.test(n))
    .sort(byNumberSuffix)
    .map((n) => Number(n.slice(3)));
}

export function readCpufreq(sysRoot: string): Cpufreq {
  const base = join(sysRoot, 'devices', 'system', 'cpu');
  // cpuN/cpufreq is a symlink into cpufreq/policyM; trees without the per-CPU link
  // (and fixtures) are mapped through each policy's affected_cpus.
  const policyOf = new Map<number, string>();
  for (const p of listDir(join(base, 'cpufreq')).filter((n) => /^policy\d+$/.test(n))) {
    const dir = join(base, 'cpufreq', p);
    for (const cpu of parseCpuList(readString(join(dir, 'affected_cpus')) ?? p.slice(6))) policyOf.set(cpu, dir);
  }
  const cores: CoreFreq[] = [];
  for (const cpu of onlineCpus(sysRoot)) {
    const own = join(base, `cpu${cpu}`, 'cpufreq');
    const dir = listDir(own).length > 0 ? own : policyOf.get(cpu);
    if (!dir) continue;
    cores.push({
      cpu,
      cur_hertz: hz(readInt(join(dir, 'scaling_cur_freq'))),
      scaling_min_hertz: hz(readInt(join(dir, 'scaling_min_freq'))),
      scaling_max_hertz: hz(readInt(join(dir, 'scaling_max_freq'))),
      cpuinfo_min_hertz: hz(readInt(join(dir, 'cpuinfo_min_freq'))),
      cpuinfo_max_hertz: hz(readInt(join(dir, 'cpuinfo_max_freq'))),
      governor: readString(join(dir, 'scaling_governor')),
      driver: readString(join(dir, 'scaling_driver')),
    });
  }
  if (cores.length === 0) return noData('no cpufreq support (no cpufreq folder for any CPU)');
  return { available: true, cores };
}
