import { describe, expect, it } from 'vitest';
import { writeJson } from '../../src/commands/json-stream.js';
import { newApplyResult, type ApplyResult } from '../../src/prune/apply/apply.js';
import { buildReport, buildStreamedReport } from '../../src/prune/report/report.js';
import { heldPerSession } from '../support/heap.js';
import { oneConversationEach } from '../support/home.js';
import { plannedHome, reportInput, sampleReportHome } from '../support/report-input.js';
import { tempDir } from '../support/tmp.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const day = (d: number) => new Date(NOW.getTime() - d * 86_400_000).toISOString();

/** An apply's outcomes of every kind: as planned, kept after a change, archived, partly deleted. */
function outcomes(p: ReturnType<typeof plannedHome>): ApplyResult {
  const result = newApplyResult(p.plan);
  for (const g of p.plan.groups) {
    if (g.id % 7 === 3)
      result.groups.set(g.id, { action: 'keep', reason: 'changed_since_plan', detail: `moved ${g.id}` });
    else if (g.id % 7 === 4 && g.action === 'delete')
      result.groups.set(g.id, {
        action: 'delete',
        reason: g.reason,
        archives: g.members.map((m) => `/archive/${m.agent}_${m.base}.tar.gz`),
      });
    else if (g.id % 7 === 5) result.groups.set(g.id, { action: 'keep', reason: 'interrupted', partial: 'its .jsonl' });
    else result.groups.set(g.id, { action: g.action, reason: g.reason });
  }
  return result;
}

describe('a report whose sessions are made as they are read', () => {
  for (const applied of [false, true])
    it(`gives the entries, totals and JSON of the report made at once (${applied ? 'apply' : 'dry-run'})`, () => {
      const p = plannedHome(sampleReportHome(NOW.getTime()), NOW.getTime());
      const result = applied ? outcomes(p) : null;
      const eager = buildReport(reportInput(p, NOW.getTime(), result, false));
      const lazy = buildStreamedReport(reportInput(p, NOW.getTime(), result, false));
      expect(eager.sessions).toHaveLength(40);
      expect(lazy.sessions).toHaveLength(40);
      // Read twice: the same entries each time, new objects each time.
      const first = [...lazy.sessions];
      const second = [...lazy.sessions];
      expect(first).toEqual(eager.sessions);
      expect(second).toEqual(eager.sessions);
      expect(second[0]).not.toBe(first[0]);
      expect({ ...lazy, sessions: first, duration_ms: 0 }).toEqual({ ...eager, duration_ms: 0 });
      if (applied) {
        expect(first.some((s) => s.archive !== null)).toBe(true);
        expect(first.some((s) => s.partly_deleted !== null)).toBe(true);
      }
      // Written as it goes, and by JSON.stringify: the bytes of the report made at once.
      const streamed: string[] = [];
      writeJson({ ...lazy, duration_ms: 0 }, (s) => streamed.push(s));
      expect(streamed.join('')).toBe(`${JSON.stringify({ ...eager, duration_ms: 0 }, null, 2)}\n`);
      expect(JSON.stringify({ ...lazy, duration_ms: 0 })).toBe(JSON.stringify({ ...eager, duration_ms: 0 }));
      // The plan is left as it was (nothing consumed).
      expect(p.plan.groups.length).toBeGreaterThan(30);
      expect(p.inventory.sessions).toHaveLength(40);
    });

  it('holds nothing per session, where the entries made at once hold about 200 bytes each', () => {
    const home = tempDir();
    // Large enough that V8 letting go of old bytecode meanwhile (a few hundred KB) stays a small part of it.
    const n = 4000;
    oneConversationEach(home, n, (i) => ({
      key: `sk_v1_${String(i).padStart(64, '0')}`,
      at: day(60 - i * 0.01),
    }));
    const p = plannedHome(home, NOW.getTime());
    const input = reportInput(p, NOW.getTime(), null, false);
    // Each kind is made once first, so that compiling its code is not counted.
    const reports = [buildReport(input), buildStreamedReport(input)];
    expect(reports.map((r) => r.totals.sessions)).toEqual([n, n]);
    // The control (the measure sees what a report made at once holds) is a bound from below: the most of three.
    const eager = heldPerSession(() => buildReport(input), n, 'most');
    // The report itself is what is kept (its list of sessions included); its length is what is checked.
    const lazy = heldPerSession(() => {
      const report = buildStreamedReport(input);
      return { report, sessions: { length: report.sessions.length } as unknown[] };
    }, n);
    expect(eager).toBeGreaterThan(100);
    expect(lazy).toBeLessThan(20);
  });
});
