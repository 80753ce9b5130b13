import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { SampleRestart } from '../../dev/sample/gateway-events.js';
import { renderGatewayLog } from '../../dev/sample/gatewaylog.js';
import { tempDir } from '../support/tmp.js';

const DIST = fileURLToPath(new URL('../../dist/src/', import.meta.url));

/**
 * Constant memory: 256 MiB of log streamed through the analysis in a fresh process stays
 * under 100 MB peak RSS (the process's own high-water mark, from getrusage). The input is
 * a ~7 MB sample log repeated in memory, so no big file is written.
 */
describe('memory', () => {
  it('256 MiB of log, peak RSS under 100 MB', () => {
    const DAY = 86_400_000;
    const base = Date.UTC(2026, 0, 1);
    const restarts: SampleRestart[] = Array.from({ length: 40 }, (_, i) => ({
      startMs: base + i * DAY,
      sessions: 20 + i * 10,
      gapMs: 2000 + i * 500,
      end: i % 7 === 3 ? 'crashed' : 'stopped',
      stopMs: base + i * DAY + DAY / 2,
      traffic: 300,
    }));
    const blockFile = join(tempDir(), 'block.log');
    writeFileSync(
      blockFile,
      renderGatewayLog({ restarts, level: 'info', events: true, seed: 1, home: '/h', utcOffsetMin: 120 }),
    );
    const script =
      `
      const { readFileSync } = await import('node:fs');
      const { analyzeStartupLog } = await import(${JSON.stringify(DIST + 'startup/index.js')}` +
      `);
      const block = readFileSync(${JSON.stringify(blockFile)});
      const total = 256 * 1024 * 1024;
      async function* stream() { for (let n = 0; n < total; n += block.length) ` +
      `yield block; }
      const r = await analyzeStartupLog({ stream: stream() }, { dateAnchor: ` +
      `null });
      console.log(JSON.stringify({ maxRssKiB: process.resourceUsage().maxRSS,` +
      ` bytes: r.source.bytes_read, restarts: r.restarts_found }));
    `;
    const p = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(p.stderr).toBe('');
    const m = JSON.parse(p.stdout) as { maxRssKiB: number; bytes: number; restarts: number };
    expect(m.bytes).toBeGreaterThanOrEqual(256 * 1024 * 1024);
    expect(m.restarts).toBeGreaterThan(1000);
    expect(m.maxRssKiB * 1024).toBeLessThan(100 * 1000 * 1000);
  });
});
