import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyzeStartupLog, type StartupReport } from '../../src/startup/index.js';
import { renderConsoleLog, renderGatewayLog, renderRedirectedLog } from '../../dev/sample/gatewaylog.js';
import { ANCHOR, RESTARTS, scenario } from './scenario.js';

/**
 * Fixture logs and their golden reports. The generated fixtures must be exactly what the
 * sample generator makes today (so a change to the generator shows up here), and every
 * fixture's report must match its golden JSON. `UPDATE_GOLDEN=1 npx vitest run
 * test/startup/golden.test.ts` rewrites both after a deliberate change: review the diff.
 */
const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));
const UPDATE = process.env.UPDATE_GOLDEN === '1';

export const GENERATED: {
  name: string;
  level: 'warn' | 'info' | 'debug';
  events: boolean;
  dated: boolean;
  render: () => string;
}[] = [
  {
    name: 'sample-warn.log',
    level: 'warn',
    events: false,
    dated: true,
    render: () => renderGatewayLog(scenario('warn', false)),
  },
  {
    name: 'sample-info.log',
    level: 'info',
    events: false,
    dated: true,
    render: () => renderGatewayLog(scenario('info', false)),
  },
  {
    name: 'sample-debug.log',
    level: 'debug',
    events: false,
    dated: true,
    render: () => renderGatewayLog(scenario('debug', false)),
  },
  {
    name: 'sample-info-events.log',
    level: 'info',
    events: true,
    dated: true,
    render: () => renderGatewayLog(scenario('info', true)),
  },
  {
    name: 'sample-journald.log',
    level: 'info',
    events: true,
    dated: true,
    render: () => renderConsoleLog(scenario('info', true), { journald: { host: 'raspberrypi' } }),
  },
  {
    name: 'sample-console.log',
    level: 'debug',
    events: false,
    dated: false,
    render: () => renderConsoleLog(scenario('debug', false)),
  },
  {
    name: 'sample-redirected.log',
    level: 'info',
    events: true,
    dated: true,
    render: () => renderRedirectedLog(scenario('info', true)),
  },
];
const HAND = [
  'facts-example.log',
  'garbage.log',
  'midrun.log',
  'warn-only.log',
  'rollover-console.log',
  'mixed.log',
  'reload.log',
  'empty.log',
];

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

/**
 * The golden reports of the generated logs are checked against the scenario they were generated
 * from (test/startup/scenario.ts), not only against themselves: UPDATE_GOLDEN rewrites a golden from
 * the code under test, so a golden that disagreed with the scenario would otherwise be blessed.
 * The generator's timeline (dev/sample/gateway-events.ts): agents registered at start t, short_expand
 * at t+200 ms, the next core tool at t+200+gapMs, Agent initialized 300 ms later, ready 520 ms after
 * that, gateway.Run 40 ms before t.
 */
describe('golden reports of generated logs agree with their scenario', () => {
  const local = (ms: number) => new Date(ms + 120 * 60_000).toISOString().slice(0, 19) + '+02:00';
  const complete = (i: number) => RESTARTS[i]!.end !== 'failed' && RESTARTS[i]!.crashPhase !== 'bootstrap';
  for (const g of GENERATED) {
    it(g.name, () => {
      const golden = JSON.parse(
        readFileSync(join(FIX, g.name.replace(/\.log$/, '.golden.json')), 'utf8'),
      ) as StartupReport;
      if (g.level === 'warn') {
        // At warn level a start shows only through its warnings and errors (and a stop not at all, so an end
        // is what the visible lines allow): each restart reported is one of the scenario's, in order.
        let j = 0;
        for (const r of golden.restarts) {
          while (j < RESTARTS.length && local(RESTARTS[j]!.startMs) !== r.started_at) j++;
          expect(j, `${r.started_at} is a start of the scenario`).toBeLessThan(RESTARTS.length);
          expect(r.bootstrap_gap).toBeNull();
          j++;
        }
        expect(golden.restarts.length).toBeGreaterThan(0);
        return;
      }
      expect(golden.restarts.map((r) => r.end)).toEqual(RESTARTS.map((r) => r.end));
      golden.restarts.forEach((r, i) => {
        const s = RESTARTS[i]!;
        // A console log has no dates: it is placed by its last line and the file's mtime, and a silence of a day
        // or more cannot be seen, so the last start is pinned to its date and the others to their time of day.
        if (g.dated || i === RESTARTS.length - 1) expect(r.started_at).toBe(local(s.startMs));
        else expect(r.started_at!.slice(10)).toBe(local(s.startMs).slice(10));
        if (!complete(i)) return;
        const gapFrom = g.level === 'debug' ? s.gapMs : s.gapMs + 500;
        expect(Math.abs(r.bootstrap_gap!.seconds - gapFrom / 1000), `restart ${i + 1} gap`).toBeLessThanOrEqual(1);
        const ready = (s.gapMs + 1060) / 1000;
        if (g.events) expect(r.time_to_ready!.seconds).toBeCloseTo(ready, 6);
        else expect(Math.abs(r.time_to_ready!.seconds - ready)).toBeLessThanOrEqual(1);
      });
    });
  }
});
