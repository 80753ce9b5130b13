import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodePiSoc, readBoard } from '../../src/health/board.js';
import { tempDir } from '../support/tmp.js';
import { board, type BoardName } from './boards.js';

describe('board identity', () => {
  const cases: [BoardName, { model: string | null; soc: string | null; arch: string; pi: boolean }][] = [
    ['pi4', { model: 'Raspberry Pi 4 Model B Rev 1.5', soc: 'brcm,bcm2711', arch: 'aarch64', pi: true }],
    ['pi5', { model: 'Raspberry Pi 5 Model B Rev 1.0', soc: 'brcm,bcm2712', arch: 'aarch64', pi: true }],
    ['zero2w', { model: 'Raspberry Pi Zero 2 W Rev 1.0', soc: 'brcm,bcm2837', arch: 'armv7l', pi: true }],
    ['visionfive2', { model: 'StarFive VisionFive V2', soc: 'starfive,jh7110', arch: 'riscv64', pi: false }],
    ['licheepi4a', { model: 'Sipeed Lichee Pi 4A', soc: 'thead,light-val', arch: 'riscv64', pi: false }],
    ['milkv-duo', { model: 'Milk-V DuoS', soc: 'cvitek,cv181x', arch: 'riscv64', pi: false }],
    ['x86-vm', { model: 'Standard PC (Q35 + ICH9, 2009)', soc: null, arch: 'x86_64', pi: false }],
  ];
  it.each(cases)('%s', (name, want) => {
    const b = board(name);
    const r = readBoard(b.sys, b.proc);
    expect(r.available).toBe(true);
    if (!r.available) return;
    expect(r.model).toBe(want.model);
    expect(r.soc).toBe(want.soc);
    expect(r.arch).toBe(want.arch);
    expect(r.raspberry_pi).toBe(want.pi);
    expect(r.kernel).not.toBeNull();
  });

  it('infers the architecture from cpuinfo when kernel.arch is missing (pi4, Duo have no arch file)', () => {
    const b = board('pi4');
    const r = readBoard(b.sys, b.proc);
    expect(r.available && r.pi_revision).toBe('d03115');
  });

  it('falls back to /sys/firmware/devicetree/base and decodes the SoC from the Pi revision code', () => {
    const root = tempDir();
    mkdirSync(join(root, 'sys/firmware/devicetree/base'), { recursive: true });
    writeFileSync(join(root, 'sys/firmware/devicetree/base/model'), 'Raspberry Pi 4 Model B Rev 1.4\0');
    mkdirSync(join(root, 'proc'));
    writeFileSync(join(root, 'proc/cpuinfo'), 'Revision\t: c03114\n');
    const r = readBoard(join(root, 'sys'), join(root, 'proc'));
    expect(r).toMatchObject({
      available: true,
      model: 'Raspberry Pi 4 Model B Rev 1.4',
      soc: 'brcm,bcm2711',
      raspberry_pi: true,
      arch: null,
    });
  });

  it('decodes revision codes (revision-codes.adoc)', () => {
    expect(decodePiSoc('d03115')).toBe('brcm,bcm2711');
    expect(decodePiSoc('d04170')).toBe('brcm,bcm2712');
    expect(decodePiSoc('902120')).toBe('brcm,bcm2837');
    expect(decodePiSoc('a02082')).toBe('brcm,bcm2837');
    expect(decodePiSoc('000e')).toBeNull(); // old-style code: no processor field
    expect(decodePiSoc(null)).toBeNull();
  });

  it('is "no data" on an empty tree', () => {
    const root = tempDir();
    expect(readBoard(join(root, 'sys'), join(root, 'proc'))).toEqual({ available: false, reason: expect.any(String) });
  });
});
