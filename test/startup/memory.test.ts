import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIST = fileURLToPath(new URL('../../dist/src/', import.meta.url));

/**
 * Constant memory: 256 MiB of log streamed through the analysis in a fresh process stays
 * under 100 MB peak RSS (the process's own high-water mark, from getrusage). The input is
 * a sample log repeated, generated on the fly, so no big file is written.
 */
describe('memory', () => {
  it('256 MiB of log, peak RSS under 100 MB', () => {
    const script = `
      const { analyzeStartupLog } = await import(${JSON.stringify(DIST + 'health/startup.js')});
      const { renderGatewayLog } = await import(${JSON.stringify(DIST + 'sample/gatewaylog.js')});
      const DAY = 86400000, base = Date.UTC(2026, 0, 1);
      const restarts = Array.from({ length: 40 }, (_, i) => ({ startMs: base + i * DAY, sessions: 20 + i * 10, gapMs: 2000 + i * 500, end: i % 7 === 3 ? 'crashed' : 'stopped', stopMs: base + i * DAY + DAY / 2, traffic: 300 }));
      const block = Buffer.from(renderGatewayLog({ restarts, level: 'info', events: true, seed: 1, home: '/h', utcOffsetMin: 120 }));
      const total = 256 * 1024 * 1024;
      async function* stream() { for (let n = 0; n < total; n += block.length) yield block; }
      const before = process.resourceUsage().maxRSS;
      const r = await analyzeStartupLog({ stream: stream() }, { dateAnchor: null });
      console.log(JSON.stringify({ before, after: process.resourceUsage().maxRSS, bytes: r.source.bytes_read, restarts: r.restarts_found, kept: r.restarts.length }));
    `;
    const p = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
    expect(p.stderr).toBe('');
    const m = JSON.parse(p.stdout) as { before: number; after: number; bytes: number; restarts: number; kept: number };
    expect(m.bytes).toBeGreaterThanOrEqual(256 * 1024 * 1024);
    expect(m.restarts).toBeGreaterThan(1000);
    expect(m.after * 1024).toBeLessThan(100 * 1000 * 1000); // maxRSS is in KiB
  });
});
