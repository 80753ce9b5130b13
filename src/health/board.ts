import { join } from 'node:path';
import { readBytes, readString } from './read.js';
import { noData, type Section } from './types.js';

/**
 * Which board this is. The model comes from the device tree on Pi and RISC-V boards
 * alike (`/proc/device-tree/model`, a symlink to /sys/firmware/devicetree/base:
 * docs/board-health.md#board-identity); RISC-V /proc/cpuinfo has no model name. x86
 * machines have no device tree: DMI's product_name names them instead.
 */
export interface BoardReading {
  model: string | null;
  /** device-tree `compatible`, most specific first (`raspberrypi,4-model-b`, `brcm,bcm2711`). */
  compatible: string[];
  /** The SoC: the last `compatible` entry, else decoded from a Pi revision code. */
  soc: string | null;
  /** /proc/cpuinfo `model name` (x86, some arm) or `uarch` (RISC-V). */
  cpu_model: string | null;
  raspberry_pi: boolean;
  /** Pi revision code from /proc/cpuinfo (`d03115`), decoded by revision-codes.adoc. */
  pi_revision: string | null;
  kernel: string | null;
  arch: string | null;
}

export type Board = Section<BoardReading>;

/** revision-codes.adoc, bits 12-15 of a new-style code. */
const PI_PROCESSORS = ['brcm,bcm2835', 'brcm,bcm2836', 'brcm,bcm2837', 'brcm,bcm2711', 'brcm,bcm2712'];

function deviceTree(procRoot: string, sysRoot: string, name: string): Buffer | null {
  return (
    readBytes(join(procRoot, 'device-tree', name)) ?? readBytes(join(sysRoot, 'firmware', 'devicetree', 'base', name))
  );
}

/** `Key\t: value` lines of /proc/cpuinfo; the first occurrence wins. */
export function cpuinfoFields(text: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of (text ?? '').split('\n')) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const k = line.slice(0, i).trim();
    if (!out.has(k)) out.set(k, line.slice(i + 1).trim());
  }
  return out;
}

/** The architecture when /proc/sys/kernel/arch is missing (older kernels), from cpuinfo alone. */
function archFromCpuinfo(f: Map<string, string>): string | null {
  const isa = f.get('isa');
  if (isa) return isa.startsWith('rv64') ? 'riscv64' : isa.startsWith('rv32') ? 'riscv32' : null;
  const cpuArch = f.get('CPU architecture');
  if (cpuArch === '8') return 'aarch64';
  if (cpuArch === '7') return 'armv7l';
  const flags = f.get('flags');
  if (flags) return /\blm\b/.test(flags) ? 'x86_64' : 'i686';
  return null;
}

export function decodePiSoc(revision: string | null): string | null {
  if (!revision || !/^[0-9a-f]+$/i.test(revision)) return null;
  const code = parseInt(revision, 16);
  if (!((code >> 23) & 1)) return null; // old-style codes carry no processor field
  return PI_PROCESSORS[(code >> 12) & 0xf] ?? null;
}

export function readBoard(sysRoot: string, procRoot: string): Board {
  const cpuinfo = cpuinfoFields(readString(join(procRoot, 'cpuinfo')));
  const dtModel = deviceTree(procRoot, sysRoot, 'model');
  const compatible = (deviceTree(procRoot, sysRoot, 'compatible')?.toString('utf8') ?? '')
    .split('\0')
    .filter((s) => s !== '');
  const dmi = readString(join(sysRoot, 'devices', 'virtual', 'dmi', 'id', 'product_name'));
  const model =
    (dtModel ? dtModel.toString('utf8').replace(/\0+$/, '').trim() : '') || cpuinfo.get('Model') || dmi || null;
  const raspberry_pi = /^Raspberry Pi/i.test(model ?? '') || compatible.some((c) => c.startsWith('raspberrypi,'));
  const revision = raspberry_pi ? (cpuinfo.get('Revision') ?? null) : null;
  const soc = compatible.length > 1 ? compatible[compatible.length - 1]! : (compatible[0] ?? decodePiSoc(revision));
  const kernel = readString(join(procRoot, 'sys', 'kernel', 'osrelease'));
  const arch = readString(join(procRoot, 'sys', 'kernel', 'arch')) ?? archFromCpuinfo(cpuinfo);
  const cpu_model = cpuinfo.get('model name') ?? cpuinfo.get('uarch') ?? null;
  if (model === null && kernel === null && arch === null && compatible.length === 0)
    return noData('no device tree, DMI, cpuinfo or kernel release readable');
  return { available: true, model, compatible, soc, cpu_model, raspberry_pi, pi_revision: revision, kernel, arch };
}
