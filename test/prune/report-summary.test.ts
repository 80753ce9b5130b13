import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { layoutToString } from '../../src/commands/format.js';
import { reasonText } from '../../src/commands/prune-text.js';
import { deleteTotals, writeSummary } from '../../src/commands/prune-summary.js';
import { VerdictTally } from '../../src/prune/report/summary.js';

/**
 * Invariant: the summary counts every session once, under its verdict, with its bytes, whatever the
 * verdicts are: a reason the renderer has never heard of (a new keep verdict, as `pinned` once was) is
 * counted and shown by its name, with no code for it. Deletions come first.
 */
const verdict = fc.record({
  action: fc.constantFrom('keep' as const, 'delete' as const),
  reason: fc.oneof(
    fc.constantFrom('max_age_days', 'within_policy', 'newest', 'undated', 'constructor', 'toString'),
    fc.stringMatching(/^[a-z_]{1,12}$/),
  ),
  bytes: fc.nat({ max: 1e9 }),
});

describe('the summary by verdict', () => {
  it('counts every session once, with its bytes; deletions first; any reason shown', () => {
    fc.assert(
      fc.property(fc.array(verdict, { maxLength: 200 }), (sessions) => {
        const t = new VerdictTally();
        for (const s of sessions) t.add(s.action, s.reason, s.bytes);
        const list = t.list();
        expect(list.reduce((n, v) => n + v.sessions, 0)).toBe(sessions.length);
        expect(list.reduce((n, v) => n + v.bytes, 0)).toBe(sessions.reduce((n, s) => n + s.bytes, 0));
        const dels = sessions.filter((s) => s.action === 'delete');
        expect(deleteTotals(list)).toEqual({ sessions: dels.length, bytes: dels.reduce((n, s) => n + s.bytes, 0) });
        // One entry per (action, reason), deletions before keeps.
        expect(new Set(list.map((v) => `${v.action} ${v.reason}`)).size).toBe(list.length);
        const firstKeep = list.findIndex((v) => v.action === 'keep');
        if (firstKeep >= 0) expect(list.slice(firstKeep).every((v) => v.action === 'keep')).toBe(true);
        const text = layoutToString(
          (w) =>
            writeSummary(
              w,
              { dry: true, where: null, verdicts: list, orphansDelete: 0, warnings: ['w1'], db: null },
              reasonText,
            ),
          Infinity,
        );
        for (const v of list) expect(text).toContain(reasonText(v.reason));
        expect(text).toMatch(new RegExp(`would delete ${dels.length} of ${sessions.length} session`));
        expect(text.trimEnd().endsWith('warning: w1')).toBe(true);
      }),
    );
  });

  it('a verdict the renderer does not know is shown by its name', () => {
    expect(reasonText('a_verdict_from_tomorrow')).toBe('a_verdict_from_tomorrow');
    expect(reasonText('max_age_days')).toBe('older than max_age_days');
  });
});
