import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROMTOOL } from '../daemon/support.js';
import { emittedNames, metricNames } from './snapshot.js';

/**
 * config/prometheus-alerts.yml: valid for promtool, firing on the series it is about
 * (promtool test rules, test/metrics/fixtures/*.promtest.yml), and written against metric
 * names the exporter really emits.
 */
const RULES = fileURLToPath(new URL('../../config/prometheus-alerts.yml', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

function promtool(args: string[], cwd?: string) {
  const r = spawnSync(PROMTOOL!, args, { encoding: 'utf8', cwd });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('config/prometheus-alerts.yml', () => {
  it.skipIf(!PROMTOOL)('promtool check rules accepts it', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.out).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.code).toBe(0);
  });

  it.skipIf(!PROMTOOL)('promtool test rules: each alert fires where it should and nowhere else', () => {
    const r = promtool(['test', 'rules', 'alerts.promtest.yml', 'alerts-week.promtest.yml'], FIXTURES);
    expect(r.out).not.toMatch(/FAILED/);
    expect(r.code).toBe(0);
  });

  it('covers what the issue asks for, using only metrics the exporter emits', async () => {
    const text = readFileSync(RULES, 'utf8');
    const alerts = [...text.matchAll(/- alert: (\w+)\n\s+expr: (.+)/g)].map((m) => ({ name: m[1]!, expr: m[2]! }));
    const names = alerts.map((a) => a.name);
    for (const want of [
      'PicoClawBoardHot',
      'PicoClawThrottledSinceBoot',
      'PicoClawUnderVoltageSinceBoot',
      'PicoClawGatewayNotReady',
      'PicoClawSeahorseDbNearLimit',
      'PicoClawPruneFailing',
      'PicoClawPruneNotRunning',
      'PicoClawBootstrapGapGrowing',
    ]) {
      expect(names).toContain(want);
    }
    const emitted = await emittedNames();
    for (const a of alerts) for (const m of metricNames(a.expr)) expect(emitted, `${a.name} uses ${m}`).toContain(m);
  });
});
