import { describe, expect, it } from 'vitest';
import { newApplyResult, type ApplyResult } from '../../src/prune/apply/apply.js';
import { buildReport, type ReportInput } from '../../src/prune/report/report.js';
import { plannedHome, reportInput, sampleReportHome } from '../support/report-input.js';

const NOW = new Date('2026-11-30T12:00:00Z');

function input(home: string, consume: boolean, applied = false): ReportInput {
  const planned = plannedHome(home, NOW.getTime());
  const plan = planned.plan;
  // An apply's outcomes: most groups as planned, a few kept because they changed (stored apart).
  let result: ApplyResult | null = null;
  if (applied) {
    result = newApplyResult(plan);
    for (const g of plan.groups)
      result.groups.set(
        g.id,
        g.id % 7 === 3 ? { action: 'keep', reason: 'changed_since_plan' } : { action: g.action, reason: g.reason },
      );
  }
  return reportInput(planned, NOW.getTime(), result, consume);
}

describe('buildReport with consume', () => {
  it('makes the very same report and lets the inventory sessions and plan groups go', () => {
    const home = sampleReportHome(NOW.getTime());
    const kept = input(home, false);
    const spent = input(home, true);
    expect(spent.plan!.groups.length).toBeGreaterThan(30);
    const a = buildReport(kept);
    const b = buildReport(spent);
    expect({ ...b, duration_ms: 0 }).toEqual({ ...a, duration_ms: 0 });
    expect(a.sessions).toHaveLength(40);
    expect(a.totals.delete).toBeGreaterThan(0);
    expect(spent.inventory!.sessions).toEqual([]);
    expect(spent.plan!.groups).toEqual([]);
    expect(kept.plan!.groups.length).toBeGreaterThan(30);
  });

  it("reads an apply's outcomes, stored apart or as planned, before it lets their groups go", () => {
    const home = sampleReportHome(NOW.getTime());
    const a = buildReport(input(home, false, true));
    const b = buildReport(input(home, true, true));
    expect({ ...b, duration_ms: 0 }).toEqual({ ...a, duration_ms: 0 });
    expect(a.sessions.filter((s) => s.reason === 'changed_since_plan').length).toBeGreaterThan(3);
  });
});
