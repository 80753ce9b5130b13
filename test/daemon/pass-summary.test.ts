import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summarizeReport } from '../../src/daemon/pass-summary.js';
import type { PruneReport } from '../../src/prune/report/report.js';
import { SessionEntries } from '../../src/prune/report/sessions.js';

type Entry = PruneReport['sessions'][number];

function entry(agent: string, key: string, action: 'keep' | 'delete', lastActivity: string | null): Entry {
  return { agent, key, action, last_activity: lastActivity } as unknown as Entry;
}

describe('summarizeReport: what the daemon keeps of a pass for GET /prune', () => {
  const sessions = [
    entry('main', 'a', 'delete', '2025-01-01T00:00:00Z'),
    entry('main', 'b', 'keep', null),
    entry('other', 'c', 'keep', null),
    entry('main', 'd', 'keep', null),
    entry('other', 'e', 'delete', null),
  ];
  const report = {
    mode: 'apply',
    totals: { sessions: 5, deleted_sessions: 2 },
    warnings: ['w'],
    sessions,
  } as unknown as PruneReport;

  it('keeps every field but the session list, the first entries of that list and their count', () => {
    const s = summarizeReport(report, '/state', 2);
    expect(s.sessions.map((e) => e.key)).toEqual(['a', 'b']);
    expect(s).toMatchObject({
      mode: 'apply',
      totals: { sessions: 5, deleted_sessions: 2 },
      warnings: ['w'],
      sessions_total: 5,
      sessions_shown: 2,
      history_file: join('/state', 'prune-history.jsonl'),
    });
    // The report it was cut from is left whole.
    expect(report.sessions).toHaveLength(5);
  });

  it('counts the undated sessions kept per agent over the whole list, not only the entries shown', () => {
    expect(summarizeReport(report, '/state', 1).undated_kept_per_agent).toEqual({ main: 2, other: 1 });
  });

  it('shows every entry of a report shorter than the limit', () => {
    const s = summarizeReport(report, '/state');
    expect(s.sessions_shown).toBe(5);
    expect(s.sessions).toEqual(sessions);
  });

  it('summarizes a list made as it is read the same, making no entry past the limit the second time', () => {
    let made = 0;
    const lazy = new SessionEntries(sessions.length, function* () {
      for (const e of sessions) {
        made++;
        yield { ...e };
      }
    });
    const s = summarizeReport({ ...report, sessions: lazy }, '/state', 2);
    expect(s).toEqual(summarizeReport(report, '/state', 2));
    // One read for the per-agent counts, one for the first two entries.
    expect(made).toBe(sessions.length + 2);
  });
});
