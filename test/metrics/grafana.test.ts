import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { emittedNames, metricNames } from './snapshot.js';

/** config/grafana-dashboard.json: valid JSON, a fleet view, and every query names real metrics. */
const DASHBOARD = fileURLToPath(new URL('../../config/grafana-dashboard.json', import.meta.url));

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: { expr?: string; refId?: string }[];
  panels?: Panel[];
  gridPos: { x: number; y: number; w: number; h: number };
}

function allPanels(ps: Panel[]): Panel[] {
  return ps.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

describe('config/grafana-dashboard.json', () => {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    title: string;
    panels: Panel[];
    templating: { list: { name: string; query: unknown; definition?: string }[] };
  };
  const panels = allPanels(dash.panels);
  const queries = [
    ...panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr ?? '' }))),
    ...dash.templating.list
      .filter((v) => v.definition)
      .map((v) => ({ where: `variable $${v.name}`, expr: v.definition! })),
  ];

  it('parses; unique panel ids; every panel with a query has one; a board variable for the fleet', () => {
    expect(dash.uid).toBe('picoclaw-guard-fleet');
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.expr, p.title).toBeTruthy();
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
    const instance = dash.templating.list.find((v) => v.name === 'instance');
    expect(instance?.definition).toBe('label_values(picoclaw_guard_build_info, instance)');
    expect(
      queries.filter((q) => q.where.startsWith('panel')).every((q) => q.expr.includes('instance=~"$instance"')),
    ).toBe(true);
  });

  it('every metric a query names is one the exporter really emits', async () => {
    const emitted = await emittedNames();
    const used = new Set<string>();
    for (const q of queries) {
      const names = metricNames(q.expr);
      expect(names.length, `${q.where}: ${q.expr}`).toBeGreaterThan(0);
      for (const n of names) {
        used.add(n);
        expect(emitted, `${q.where} uses ${n}`).toContain(n);
      }
    }
    // The dashboard covers the main families.
    for (const n of [
      'picoclaw_guard_cpu_temperature_celsius',
      'picoclaw_guard_throttle_flag',
      'picoclaw_guard_under_voltage',
      'picoclaw_guard_gateway_ready',
      'picoclaw_guard_sessions',
      'picoclaw_guard_seahorse_db_bytes',
      'picoclaw_guard_prune_passes_total',
      'picoclaw_guard_prune_deleted_sessions_total',
      'picoclaw_guard_bootstrap_gap_seconds',
    ]) {
      expect(used).toContain(n);
    }
  });
});
