import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanStore, type StoredSession } from '../../src/picoclaw/inventory/sessions.js';
import { putEntry } from '../support/entries.js';
import { lstatFirstScan } from '../support/lstat-first-scan.js';
import { tempDir } from '../support/tmp.js';

/**
 * The scan opens each meta once and looks at a transcript's name by lstat only when no meta took it
 * as a regular file. Invariant: of any folder it tells exactly what the lstat-first reading tells
 * (test/support/lstat-first-scan.ts): the same sessions with the same facts and issues, the same
 * orphans and the same ignored entries, each in name order. The folders are generated: sessions
 * whose meta and transcript are each any of what can stand at a name, orphan transcripts, names that
 * sort between a transcript and its meta, temp files and legacy names of every kind; and with or
 * without a callback taking the sessions.
 */

const KINDS = ['regular', 'empty', 'torn', 'corrupt', 'symlink', 'directory', 'fifo', 'absent', 'unreadable'] as const;
type Kind = (typeof KINDS)[number];

/** `text` as a kind makes it: torn (its end cut off), corrupt (not JSON), or as it is. */
function put(path: string, what: Kind, text: string): void {
  putEntry(
    path,
    what,
    what === 'torn' ? text.slice(0, Math.max(1, text.length - 5)) : what === 'corrupt' ? '{"key": ' : text,
  );
}

const kind = fc.constantFrom(...KINDS);
// "a" and "a.k": a.jsonl < a.k.jsonl < a.k.meta.json < a.meta.json, so names sort between a pair.
const base = fc.constantFrom('a', 'a.k', 'a.z', 'b', 'agent_main_x', 'sk_v1_0f', 'é');
const folder = fc.record({
  sessions: fc.uniqueArray(fc.record({ base, meta: kind, jsonl: kind }), { selector: (s) => s.base, maxLength: 5 }),
  extras: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom('a.json', 'b.json.migrated', '.tmp-123', 'session-1.tmp', 'notes.txt', 'x.jsonl.tmp'),
      what: kind,
    }),
    { selector: (e) => e.name, maxLength: 3 },
  ),
  callback: fc.boolean(),
});

describe('the scan of a sessions folder', () => {
  it('tells what the lstat-first reading tells, of any folder', () => {
    fc.assert(
      fc.property(folder, (f) => {
        const dir = tempDir('pcg-scan-ref-');
        for (const s of f.sessions) {
          const at = '2026-11-01T00:00:00Z';
          put(
            join(dir, `${s.base}.meta.json`),
            s.meta,
            JSON.stringify({ key: `agent:main:${s.base}`, count: 1, updated_at: at }),
          );
          const line = JSON.stringify({ role: 'user', content: 'hi', created_at: '2026-11-02T00:00:00Z' });
          put(join(dir, `${s.base}.jsonl`), s.jsonl, `${line}\n${line}\n`);
        }
        for (const e of f.extras) put(join(dir, e.name), e.what, '{}');
        const want = lstatFirstScan(dir);
        let got = scanStore(dir);
        if (f.callback) {
          const handed: StoredSession[] = [];
          got = scanStore(dir, (s) => handed.push(s));
          expect(got.sessions).toEqual([]);
          got = { ...got, sessions: handed };
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 150 },
    );
  });
});
