import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendHistory,
  HISTORY_FILE,
  HISTORY_MAX_BYTES,
  readHistory,
  type PruneHistoryEntry,
} from '../../src/state/history.js';
import { tempDir } from '../support/tmp.js';

const entry = (i: number): PruneHistoryEntry => ({
  at: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
  home: '/h',
  mode: 'apply',
  outcome: 'ok',
  deleted_sessions: i,
  deleted_orphans: 0,
  freed_bytes: 100,
  sessions_before: 200,
  sessions_after: 190,
  duration_ms: 50,
  reason: null,
});

describe('the prune history', () => {
  it('appends one line per pass and reads them back for one home', () => {
    const d = tempDir();
    appendHistory(d, entry(1));
    appendHistory(d, { ...entry(2), home: '/other' });
    expect(readHistory(d, '/h').map((e) => e.deleted_sessions)).toEqual([1]);
    expect(readHistory(d).length).toBe(2);
  });

  it('stays bounded: past 1 MiB it keeps its newest half, whole lines only', () => {
    const d = tempDir();
    let i = 0;
    while (i < 10_000) appendHistory(d, entry(i++));
    const size = statSync(join(d, HISTORY_FILE)).size;
    expect(size).toBeLessThanOrEqual(HISTORY_MAX_BYTES + 400);
    const all = readHistory(d);
    expect(all[all.length - 1]!.deleted_sessions).toBe(9_999);
    expect(
      readFileSync(join(d, HISTORY_FILE), 'utf8')
        .split('\n')
        .filter(Boolean)
        .every((l) => JSON.parse(l).home === '/h'),
    ).toBe(true);
  });
});
