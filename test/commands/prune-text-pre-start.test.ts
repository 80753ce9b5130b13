import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderPruneText } from '../../src/commands/prune-text.js';
import { buildReport, KEPT_AT_APPLY, type PruneReport } from '../../src/prune/report/report.js';
import { plannedHome, reportInput, sampleReportHome } from '../support/report-input.js';

/**
 * What a pre-start pass prints goes to the journal before every gateway start: the sessions it
 * deleted, and those it meant to delete and kept for what it found, never a line per kept session.
 * Invariant: with `deletedOnly`, the table's rows are exactly the sessions deleted or kept by apply
 * (changed, archive failed, ...), by key; without it, every session. The outcomes are generated:
 * which of the plan's deletions apply made, and which it kept, and why.
 */

const NOW = Date.parse('2026-11-20T12:00:00Z');
const APPLY_KEPT = [...KEPT_AT_APPLY];

/** The keys of the table's rows: the lines after its header, up to the first that is no row. */
function tableKeys(text: string): string[] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith('ACTION'));
  if (at < 0) return [];
  const keys: string[] = [];
  for (const l of lines.slice(at + 2)) {
    const m = /^(DELETED|kept)\s{2,}.*?\s{2,}main\s{2,}(\S+)/.exec(l);
    if (!m) break;
    keys.push(m[2]!);
  }
  return keys;
}

describe('the pre-start pass text', () => {
  const p = plannedHome(sampleReportHome(NOW), NOW);
  const planned = buildReport(reportInput(p, NOW, null, false));

  it('lists what the pass deleted or meant to, and no session it kept by plan', () => {
    const deletions = planned.sessions.filter((s) => s.action === 'delete').length;
    expect(deletions).toBeGreaterThan(2);
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.constantFrom(...APPLY_KEPT), { nil: null }), {
          minLength: deletions,
          maxLength: deletions,
        }),
        (fates) => {
          // Apply's outcomes: each planned deletion made (null) or kept for a reason apply found.
          let k = 0;
          const sessions = planned.sessions.map((s) => {
            if (s.action !== 'delete') return s;
            const fate = fates[k++]!;
            return fate === null ? s : { ...s, action: 'keep' as const, reason: fate };
          });
          const by_reason: Record<string, number> = {};
          for (const s of sessions) by_reason[s.reason] = (by_reason[s.reason] ?? 0) + 1;
          const del = sessions.filter((s) => s.action === 'delete').length;
          const r: PruneReport = {
            ...planned,
            mode: 'apply',
            duration_ms: 0,
            sessions,
            totals: { ...planned.totals, delete: del, deleted_sessions: del, keep: sessions.length - del, by_reason },
          };
          const attempted = sessions
            .filter((s) => s.action === 'delete' || KEPT_AT_APPLY.has(s.reason))
            .map((s) => s.key);
          expect(tableKeys(renderPruneText(r, Infinity, { deletedOnly: true }))).toEqual(attempted);
          expect(tableKeys(renderPruneText(r, Infinity))).toEqual(sessions.map((s) => s.key));
          const text = renderPruneText(r, 80, { deletedOnly: true });
          if (attempted.length === 0) expect(text).toContain(`No session deleted; the ${sessions.length} kept`);
          else if (attempted.length < sessions.length)
            expect(text).toContain(`the ${sessions.length - attempted.length} kept session(s) are counted above`);
        },
      ),
      { numRuns: 100 },
    );
  });
});
