import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The fixture trees under test/fixtures/boards (docs/board-health.md; made by test/fixtures/boards/generate.mjs). */
export const FIXTURES = fileURLToPath(new URL('../fixtures/boards/', import.meta.url)).replace(/\/$/, '');
export const BOARDS = [
  'pi4',
  'pi4-undervoltage',
  'pi5',
  'zero2w',
  'visionfive2',
  'licheepi4a',
  'milkv-duo',
  'x86-vm',
] as const;
export type BoardName = (typeof BOARDS)[number];

export function board(name: BoardName) {
  const dir = join(FIXTURES, name);
  const vcg = join(dir, 'vcgencmd');
  return { dir, sys: join(dir, 'sys'), proc: join(dir, 'proc'), vcgencmd: existsSync(vcg) ? vcg : null };
}
