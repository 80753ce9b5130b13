import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyzeStartupLog, type StartupReport } from '../../src/startup/index.js';
import { renderConsoleLog, renderGatewayLog, renderRedirectedLog } from '../../dev/sample/gatewaylog.js';
import { ANCHOR, scenario } from './scenario.js';

/**
 * Fixture logs and their golden reports. The generated fixtures must be exactly what the
 * sample generator makes today (so a change to the generator shows up here), and every
 * fixture's report must match its golden JSON. `UPDATE_GOLDEN=1 npx vitest run
 * test/startup/golden.test.ts` rewrites both after a deliberate change: review the diff.
 */
const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));
const UPDATE = process.env.UPDATE_GOLDEN === '1';

export const GENERATED: { name: string; render: () => string }[] = [
  { name: 'sample-warn.log', render: () => renderGatewayLog(scenario('warn', false)) },
  { name: 'sample-info.log', render: () => renderGatewayLog(scenario('info', false)) },
  { name: 'sample-debug.log', render: () => renderGatewayLog(scenario('debug', false)) },
  { name: 'sample-info-events.log', render: () => renderGatewayLog(scenario('info', true)) },
  { name: 'sample-journald.log', render: () => renderConsoleLog(scenario('info', true), { journald: { host: 'raspberrypi' } }) },
  { name: 'sample-console.log', render: () => renderConsoleLog(scenario('debug', false)) },
  { name: 'sample-redirected.log', render: () => renderRedirectedLog(scenario('info', true)) },
];
const HAND = ['facts-example.log', 'garbage.log', 'midrun.log', 'warn-only.log', 'rollover-console.log', 'mixed.log', 'reload.log', 'empty.log'];

/** The report with the machine-specific path reduced to the file name. */
export async function reportFor(name: string): Promise<StartupReport> {
  const r = await analyzeStartupLog({ path: join(FIX, name) }, { dateAnchor: ANCHOR });
  r.source.path = basename(r.source.path!);
  return r;
}

describe('generated fixture logs', () => {
  for (const g of GENERATED) {
    it(`${g.name} is what the generator makes`, () => {
      const text = g.render();
      if (UPDATE) writeFileSync(join(FIX, g.name), text);
      expect(readFileSync(join(FIX, g.name), 'utf8')).toBe(text);
    });
  }
});

describe('golden reports', () => {
  for (const name of [...GENERATED.map((g) => g.name), ...HAND]) {
    it(`${name}`, async () => {
      const report = await reportFor(name);
      const golden = join(FIX, name.replace(/\.log$/, '.golden.json'));
      if (UPDATE) writeFileSync(golden, JSON.stringify(report, null, 2) + '\n');
      expect(JSON.parse(JSON.stringify(report))).toEqual(JSON.parse(readFileSync(golden, 'utf8')));
    });
  }
});
