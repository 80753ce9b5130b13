import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countSessions } from '../../src/health/picoclaw.js';
import { classifyEntry, scanStore } from '../../src/picoclaw/inventory/sessions.js';
import { tempDir } from '../support/tmp.js';

describe('which names are session files', () => {
  it('one classifier: .meta.json and .jsonl with a base name; temp files, legacy JSON and the rest are not', () => {
    const table: [string, ReturnType<typeof classifyEntry>][] = [
      ['telegram_1.meta.json', 'meta'],
      ['telegram_1.jsonl', 'jsonl'],
      ['.meta.json', 'legacy'],
      ['.jsonl', 'other'],
      ['.tmp-123.meta.json', 'temp'],
      ['session-4.tmp', 'temp'],
      ['session-4.jsonl', 'jsonl'],
      ['old.json', 'legacy'],
      ['old.json.migrated', 'legacy'],
      ['notes.txt', 'other'],
      ['a.jsonl.bak', 'other'],
    ];
    for (const [name, kind] of table) expect([name, classifyEntry(name)]).toEqual([name, kind]);
  });

  it("health's session count and the inventory agree on any folder (files, folders, symlinks, any name)", () => {
    const base = fc.constantFrom('a', 'b', 'agent_cron-job-1', 'session-1', '.tmp-9', '', 'x.meta');
    const suffix = fc.constantFrom('.meta.json', '.jsonl', '.json', '.json.migrated', '.tmp', '', '.jsonl.bak');
    const type = fc.constantFrom('file', 'file', 'file', 'dir', 'symlink');
    const entry = fc.record({ base, suffix, type, bytes: fc.nat(40) });
    fc.assert(
      fc.property(fc.uniqueArray(entry, { selector: (e) => e.base + e.suffix, maxLength: 25 }), (entries) => {
        const dir = tempDir('pcg-classify-');
        const target = join(tempDir('pcg-classify-target-'), 'target');
        writeFileSync(target, '{"key":"elsewhere"}');
        for (const e of entries) {
          const name = e.base + e.suffix;
          if (name === '') continue;
          const p = join(dir, name);
          if (e.type === 'dir') mkdirSync(p);
          else if (e.type === 'symlink') symlinkSync(target, p);
          else writeFileSync(p, 'x'.repeat(e.bytes));
        }
        const count = countSessions(dir);
        const scan = scanStore(dir);
        expect(count.error).toBeNull();
        expect(count.sessions).toBe(scan.sessions.length);
        expect(count.cron_sessions).toBe(scan.sessions.filter((s) => s.base.startsWith('agent_cron-')).length);
        const jsonls = [...scan.sessions.map((s) => s.jsonl), ...scan.orphanJsonl];
        const jsonlBytes = jsonls.reduce((n, j) => n + (j?.bytes ?? 0), 0);
        expect(count.jsonl_bytes).toBe(jsonlBytes);
      }),
      { numRuns: 60 },
    );
  });
});
