import { appendFileSync, mkdirSync, readFileSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundLogs } from '../../src/logs/index.js';
import { keptParts } from '../../src/picoclaw/gatewaylog/parts.js';
import { analyzeStartupLog, type StartupReport } from '../../src/startup/index.js';
import { skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * `startup` reads the kept parts of a cut gateway.log before the file (src/startup/source.ts):
 * however the log was cut while the gateway wrote it, the report finds the same restarts, with
 * the same spans, as the log never cut. Only the blank line each cut leaves differs.
 */
const FIXTURE = readFileSync(new URL('../fixtures/logs/sample-info.log', import.meta.url));

function essence(r: StartupReport) {
  const { empty, total, ...lines } = r.lines;
  return {
    lines: { ...lines, not_blank: total - empty },
    levels: r.levels,
    restarts_found: r.restarts_found,
    // A restart's `lines` counts every line in its time, the blank one a cut leaves too (compared apart).
    restarts: r.restarts.map((e) => ({ ...e, lines: 0 })),
    reloads: r.reloads,
    summary: r.summary,
    timestamps: r.timestamps,
  };
}

const EXT = new Set([0xef53, 0x58465342]);

describe('startup over a cut gateway.log', () => {
  it('finds every restart the uncut log has, wherever the cuts fell', async (ctx) => {
    const probe = tempDir('pcg-startup-parts-');
    if (!EXT.has(statfsSync(probe).type)) return skipWithReason(ctx, 'the temporary folder is not ext4/xfs');
    const whole = join(probe, 'whole.log');
    writeFileSync(whole, FIXTURE);
    const uncut = await analyzeStartupLog({ path: whole });
    const expected = essence(uncut);
    expect(expected.restarts_found).toBeGreaterThan(3);
    const lineEnds: number[] = [];
    for (let i = FIXTURE.indexOf(10); i >= 0; i = FIXTURE.indexOf(10, i + 1)) lineEnds.push(i + 1);

    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: lineEnds.length - 1 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 8, max: 40 }),
        async (splits, limitKiB) => {
          const root = tempDir('pcg-startup-parts-');
          mkdirSync(join(root, 'logs'));
          const file = join(root, 'logs', 'gateway.log');
          const at = [...splits.map((i) => lineEnds[i]!).sort((a, b) => a - b), FIXTURE.length];
          let from = 0;
          for (const to of at) {
            // The gateway appends (O_APPEND), then the guard's periodic cut runs.
            appendFileSync(file, FIXTURE.subarray(from, to));
            from = to;
            await boundLogs([file], { stateDir: join(root, 'state'), limitBytes: limitKiB * 1024, keepParts: 1000 });
          }
          const report = await analyzeStartupLog({ path: file });
          expect(essence(report)).toEqual(expected);
          const parts = keptParts(file);
          const blanks = report.lines.empty;
          expect(blanks).toBeLessThanOrEqual(parts.length);
          const extra = report.restarts.map((e, i) => e.lines - uncut.restarts[i]!.lines);
          expect(extra.every((d) => d >= 0)).toBe(true);
          expect(extra.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(blanks);
          expect(report.source.parts?.length ?? 0).toBe(parts.length);
          expect(report.source.parts?.every((p) => p.error === null) ?? true).toBe(true);
          // Without the parts the cut lines are missing: the parts are what keeps them in the report.
          if (parts.length > 0) {
            const alone = await analyzeStartupLog({ path: file, parts: false });
            expect(alone.source.bytes_read).toBeLessThan(report.source.bytes_read);
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a part that is cut short is named, and the lines after it are still read', async () => {
    const root = tempDir('pcg-startup-parts-');
    mkdirSync(join(root, 'logs'));
    const file = join(root, 'logs', 'gateway.log');
    const { gzipSync } = await import('node:zlib');
    const half = FIXTURE.indexOf(10, FIXTURE.length >> 1) + 1;
    const gz = gzipSync(FIXTURE.subarray(0, half));
    writeFileSync(`${file}.1.gz`, gz.subarray(0, gz.length - 40));
    writeFileSync(file, FIXTURE.subarray(half));
    const report = await analyzeStartupLog({ path: file });
    expect(report.source.parts).toHaveLength(1);
    expect(report.source.parts![0]!.error).not.toBeNull();
    expect(report.source.state).toBe('ok');
    expect(report.restarts_found).toBeGreaterThan(0);
  });

  it('the parts alone are read when the log itself is gone', async () => {
    const root = tempDir('pcg-startup-parts-');
    mkdirSync(join(root, 'logs'));
    const file = join(root, 'logs', 'gateway.log');
    const { gzipSync } = await import('node:zlib');
    writeFileSync(`${file}.1.gz`, gzipSync(FIXTURE));
    const report = await analyzeStartupLog({ path: file });
    const whole = join(root, 'whole.log');
    writeFileSync(whole, FIXTURE);
    expect(essence(report)).toEqual(essence(await analyzeStartupLog({ path: whole })));
  });
});
