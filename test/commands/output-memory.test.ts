import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeJson } from '../../src/commands/json-stream.js';
import { LayoutWriter } from '../../src/commands/format.js';

const FORMAT = fileURLToPath(new URL('../../dist/src/commands/format.js', import.meta.url));

/**
 * What the report writers hold before they write: text kept across the young generation's
 * collections is promoted and grows the old one, so both hand their text over in chunks of
 * about 8 KiB, never tens of KiB.
 */
describe('report output holds little', () => {
  it('LayoutWriter and writeJson hand over chunks of at most 8 KiB and a line', () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `row ${i} ${'x'.repeat(i % 90)}`);
    const text: string[] = [];
    const w = new LayoutWriter(Infinity, (c) => text.push(c));
    w.push(...rows);
    w.flush();
    expect(text.join('')).toBe(rows.join('\n') + '\n');
    expect(Math.max(...text.map((c) => c.length))).toBeLessThanOrEqual(8 * 1024 + 100);
    expect(text.length).toBeGreaterThan(20);

    const json: string[] = [];
    const doc = { rows: rows.map((r, i) => ({ i, r })) };
    writeJson(doc, (c) => json.push(c));
    expect(json.join('')).toBe(JSON.stringify(doc, null, 2) + '\n');
    expect(Math.max(...json.map((c) => c.length))).toBeLessThanOrEqual(8 * 1024 + 200);
  });

  it('blockingStdout: a write to a pipe is done when it returns, nothing is queued in memory', () => {
    // 4 MiB in one write, far more than a pipe holds (64 KiB): without blocking, Node queues what
    // the pipe does not take and writableLength says how much is held.
    const script =
      `const { blockingStdout } = await import(${JSON.stringify(FORMAT)});\n` +
      `if (process.argv[1] === 'block') blockingStdout();\n` +
      `process.stdout.write('x'.repeat(4 * 1024 * 1024));\n` +
      `process.stderr.write(String(process.stdout.writableLength));\n`;
    const run = (mode: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', script, mode], {
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
      });
    const blocked = run('block');
    expect(blocked.stdout.length).toBe(4 * 1024 * 1024);
    expect(Number(blocked.stderr)).toBe(0);
  });
});
