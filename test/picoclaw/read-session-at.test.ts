import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSessionAt } from '../../src/picoclaw/inventory/sessions.js';
import { putEntry } from '../support/entries.js';
import { lstatFirstScan } from '../support/lstat-first-scan.js';
import { tempDir } from '../support/tmp.js';

/**
 * readSessionAt reads a meta by name, each file's facts from its open descriptor, with no lstat;
 * the scan gets to it only for a name the folder lists as a regular file, so what it does with
 * anything else is what it does when the name changed after the listing. Every pair of what can
 * stand at a meta's and a transcript's name, read both ways: it says what the lstat-first reading
 * (test/support/lstat-first-scan.ts) says of the same folder.
 */

const META = ['regular', 'corrupt', 'empty', 'symlink', 'directory', 'fifo', 'absent', 'unreadable'] as const;
const JSONL = ['regular', 'empty', 'torn', 'symlink', 'directory', 'fifo', 'absent', 'unreadable'] as const;

describe('readSessionAt', () => {
  it('says what the lstat-first reading says, for every pair of names', () => {
    for (const m of META)
      for (const j of JSONL) {
        const dir = tempDir();
        const base = 'sk_v1_x';
        putEntry(
          join(dir, `${base}.meta.json`),
          m,
          m === 'corrupt'
            ? '{"key": '
            : JSON.stringify({ key: 'agent:main:x', count: 1, updated_at: '2026-11-01T00:00:00Z' }),
        );
        const line = JSON.stringify({ role: 'user', content: 'hi', created_at: '2026-11-02T00:00:00Z' });
        putEntry(join(dir, `${base}.jsonl`), j, j === 'torn' ? `${line}\n{"role":` : `${line}\n`);
        const at = readSessionAt(dir, base, join(dir, `${base}.meta.json`), join(dir, `${base}.jsonl`));
        const scan = lstatFirstScan(dir);
        const ignored = scan.ignored.find((e) => e.name === `${base}.meta.json`);
        const want = scan.sessions[0] ?? (ignored ? ignored.why : null);
        expect(at, `meta ${m}, transcript ${j}`).toEqual(want);
      }
  });
});
