import { mkdirSync, statSync, symlinkSync, writeFileSync, copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readLastLine } from '../../src/picoclaw/inventory/jsonl-tail.js';
import { scanStore } from '../../src/picoclaw/inventory/sessions.js';
import { tempDir } from '../support/tmp.js';

const REAL = join(import.meta.dirname, '../fixtures/real-picoclaw-capture/sessions');

function meta(key: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify(
    {
      key,
      summary: '',
      skip: 0,
      count: 1,
      created_at: '2026-06-13T18:19:35.12345+02:00',
      updated_at: '2026-06-13T18:19:37.5Z',
      ...extra,
    },
    null,
    2,
  );
}

describe('the JSONL store scanner', () => {
  it('reads the real PicoClaw capture exactly', () => {
    const dir = tempDir();
    for (const f of readdirSync(REAL)) copyFileSync(join(REAL, f), join(dir, f));
    const scan = scanStore(dir);
    expect(scan.sessions).toHaveLength(1);
    const s = scan.sessions[0]!;
    expect(s.key).toBe('sk_v1_cb10fea2cfe7f7373a42cc19db45c88fb87caebad9d6295e89a00577b35d7cc1');
    expect(s.parsedMeta!.count).toBe(8);
    expect(s.parsedMeta!.createdAt).toBe('2026-05-25T10:11:16.855888+02:00');
    expect(s.parsedMeta!.updatedAt).toBe('2026-05-25T10:12:10.945017+02:00');
    expect(s.lastLineCreatedAt).toBe('2026-05-25T10:12:10.945017+02:00');
    expect(s.parsedMeta!.aliases).toContain('agent:main:main');
    expect(s.jsonl!.bytes).toBe(1795);
    expect(s.issues).toEqual([]);
  });

  it('reads the last line from the end, skipping a torn final line and empty lines', () => {
    const dir = tempDir();
    const p = join(dir, 'a.jsonl');
    writeFileSync(
      p,
      '{"role":"user","content":"x","created_at":"2026-01-01T00:00:00Z"}\n\n{"role":"assistant",' +
        '"content":"y","created_at":"2026-01-02T00:00:00Z"}\n\n{"role":"tool","content":"partial ' +
        'wri',
    );
    const last = readLastLine(p, statSync(p).size);
    expect(last.createdAt).toBe('2026-01-02T00:00:00Z');
    expect(last.issue).toBe('jsonl_truncated_last_line');
  });

  it('finds the last line across many small chunks', () => {
    const dir = tempDir();
    const p = join(dir, 'b.jsonl');
    const big = 'x'.repeat(300_000);
    const text =
      `{"role":"user","content":"a","created_at":"2026-01-01T00:00:00Z"}\n{"role":"tool",` +
      `"content":"${big}","created_at":"2026-03-04T05:06:07.1Z"}\n`;
    writeFileSync(p, text);
    expect(readLastLine(p, Buffer.byteLength(text), 1024)).toEqual({
      createdAt: '2026-03-04T05:06:07.1Z',
      issue: null,
    });
  });

  it('handles a file of one line without newline, only newlines, and a line without created_at', () => {
    const dir = tempDir();
    const one = join(dir, 'one.jsonl');
    writeFileSync(one, '{"role":"user","content":"a","created_at":"2026-01-01T00:00:00Z"}');
    expect(readLastLine(one, statSync(one).size)).toEqual({ createdAt: null, issue: 'jsonl_truncated_last_line' });
    const nl = join(dir, 'nl.jsonl');
    writeFileSync(nl, '\n\n\n');
    expect(readLastLine(nl, statSync(nl).size)).toEqual({ createdAt: null, issue: null });
    const old = join(dir, 'old.jsonl');
    writeFileSync(old, '{"role":"user","content":"from an older version"}\n');
    expect(readLastLine(old, statSync(old).size)).toEqual({ createdAt: null, issue: null });
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"role":"user","content":"a","created_at":"2026-01-01T00:00:00Z"}\nnot json at all\n');
    expect(readLastLine(bad, statSync(bad).size).issue).toBe('jsonl_last_line_corrupt');
  });

  it('reports every broken shape without failing, and never takes non-session files as sessions', () => {
    const dir = tempDir();
    const outside = tempDir();
    writeFileSync(join(dir, 'good.meta.json'), meta('agent:main:good'));
    writeFileSync(join(dir, 'good.jsonl'), '{"role":"user","content":"hi","created_at":"2026-06-13T18:19:35Z"}\n');
    writeFileSync(join(dir, 'corrupt.meta.json'), '{"key": "agent:main:corrupt",');
    writeFileSync(join(dir, 'corrupt.jsonl'), '');
    writeFileSync(join(dir, 'empty.meta.json'), '');
    writeFileSync(
      join(dir, 'latin.meta.json'),
      Buffer.from([0x7b, 0x22, 0x6b, 0x65, 0x79, 0x22, 0x3a, 0x22, 0xe9, 0xff, 0x22, 0x7d]),
    );
    writeFileSync(join(dir, 'nokey.meta.json'), '{"key":"","count":3}');
    writeFileSync(join(dir, 'metaonly.meta.json'), meta('agent:main:metaonly'));
    writeFileSync(join(dir, 'orphan.jsonl'), '{"role":"user","content":"lost"}\n');
    writeFileSync(join(dir, '.tmp-4242-1781367575123456789'), meta('agent:main:tmp'));
    writeFileSync(join(dir, 'session-123.tmp'), 'x');
    writeFileSync(join(dir, 'legacy.json'), '{"key":"agent:main:legacy","messages":[]}');
    writeFileSync(join(dir, 'legacy2.json.migrated'), '{}');
    mkdirSync(join(dir, 'folder.jsonl'));
    mkdirSync(join(dir, 'folder2.meta.json'));
    writeFileSync(join(outside, 'target.meta.json'), meta('agent:main:outside'));
    writeFileSync(join(outside, 'target.jsonl'), '{"role":"user","content":"outside"}\n');
    symlinkSync(join(outside, 'target.meta.json'), join(dir, 'link.meta.json'));
    symlinkSync(join(outside, 'target.jsonl'), join(dir, 'link.jsonl'));
    writeFileSync(join(dir, 'half.meta.json'), meta('agent:main:half'));
    symlinkSync(join(outside, 'target.jsonl'), join(dir, 'half.jsonl'));
    writeFileSync(join(dir, 'seahorse.db'), '');

    const scan = scanStore(dir);
    const by = new Map(scan.sessions.map((s) => [s.base, s]));
    expect([...by.keys()].sort()).toEqual(['corrupt', 'empty', 'good', 'half', 'latin', 'metaonly', 'nokey']);
    expect(by.get('good')!.issues).toEqual([]);
    expect(by.get('good')!.lastLineCreatedAt).toBe('2026-06-13T18:19:35Z');
    expect(by.get('corrupt')!.issues).toEqual(['meta_corrupt']);
    expect(by.get('corrupt')!.key).toBeNull();
    expect(by.get('empty')!.issues).toEqual(['meta_empty', 'jsonl_missing']);
    expect(by.get('latin')!.issues).toContain('meta_not_utf8');
    expect(by.get('nokey')!.issues).toContain('meta_no_key');
    expect(by.get('metaonly')!.issues).toEqual(['jsonl_missing']);
    expect(by.get('half')!.issues).toEqual(['jsonl_not_regular_file']);
    expect(by.get('half')!.jsonl).toBeNull();
    expect(scan.orphanJsonl.map((o) => o.path)).toEqual([join(dir, 'orphan.jsonl')]);
    const ignored = Object.fromEntries(scan.ignored.map((i) => [i.name, i.why]));
    expect(ignored).toMatchObject({
      '.tmp-4242-1781367575123456789': 'temp_file',
      'session-123.tmp': 'temp_file',
      'legacy.json': 'legacy_json',
      'legacy2.json.migrated': 'legacy_json',
      'folder.jsonl': 'directory',
      'folder2.meta.json': 'directory',
      'link.meta.json': 'symlink',
      'link.jsonl': 'symlink',
    });
  });

  it('reports a missing folder as empty and an unreadable one as an error', () => {
    const scan = scanStore('/nonexistent/sessions');
    expect(scan.exists).toBe(false);
    expect(scan.error).toBeNull();
    expect(scan.sessions).toEqual([]);
  });
});

describe('the last line of a long .jsonl line (read backwards, never whole)', () => {
  const goJson = (v: unknown) =>
    JSON.stringify(v).replace(/[<>&]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  const write = (lines: unknown[]) => {
    const dir = tempDir();
    const p = join(dir, 'x.jsonl');
    writeFileSync(p, lines.map((l) => (typeof l === 'string' ? l : goJson(l))).join('\n') + '\n');
    return p;
  };

  it('reads a created_at whose text is the "too long" marker as that text, not as a line past 10 MB', () => {
    const long = { role: 'tool', content: 'x'.repeat(64 * 1024), created_at: 'too_long' };
    const p = write([{ role: 'user', content: 'a', created_at: '2026-01-01T00:00:00Z' }, long]);
    expect(readLastLine(p, statSync(p).size, 1024)).toEqual({ createdAt: 'too_long', issue: null });
  });

  it('finds created_at after a 3 MB tool result, with quotes, backslashes and newlines escaped in it', () => {
    const content = 'say \\"hi\\" \\\\ path C:\\\\dir\\\\ "quoted" \n next line ' + 'x'.repeat(3_000_000) + '\\';
    const p = write([
      { role: 'user', content: 'a', created_at: '2026-01-01T00:00:00Z' },
      { role: 'tool', content, created_at: '2026-02-03T04:05:06.789Z', tool_call_id: 'call_1' },
    ]);
    expect(readLastLine(p, statSync(p).size)).toEqual({ createdAt: '2026-02-03T04:05:06.789Z', issue: null });
  });

  it('is not fooled by a created_at nested after the top-level one, nor by one inside a string', () => {
    const p = write([
      {
        role: 'assistant',
        content: 'y'.repeat(200_000) + '"created_at":"1999-01-01T00:00:00Z"',
        model_name: 'm',
        created_at: '2026-05-25T10:11:39.37008+02:00',
        reasoning_content: 'z'.repeat(100_000),
        tool_calls: [
          {
            id: 'c',
            type: 'function',
            function: { name: 'exec', arguments: '{"created_at":"1998-01-01T00:00:00Z"}' },
            extra_content: { created_at: '1997-01-01T00:00:00Z', nested: [{ a: '}' }] },
          },
        ],
      },
    ]);
    expect(readLastLine(p, statSync(p).size, 1024).createdAt).toBe('2026-05-25T10:11:39.37008+02:00');
  });

  it('reports a long line without created_at as undated, and a long corrupt one as corrupt', () => {
    const p = write([{ role: 'tool', content: 'q'.repeat(500_000) }]);
    expect(readLastLine(p, statSync(p).size, 1024)).toEqual({ createdAt: null, issue: null });
    const bad = write([`{"role":"tool","content":"${'q'.repeat(500_000)}", "created_at": 12`]);
    expect(readLastLine(bad, statSync(bad).size, 1024).issue).toBe('jsonl_last_line_corrupt');
  });

  it('agrees with JSON.parse on random objects of any size (property)', () => {
    const str = fc.string({
      unit: fc.constantFrom('a', '"', '\\', '}', '{', ']', ':', ',', '\n', '你', ' ', 'created_at'),
      maxLength: 60,
    });
    const obj = fc.record({
      role: fc.constantFrom('user', 'assistant', 'tool'),
      content: fc.tuple(str, fc.integer({ min: 0, max: 120_000 })).map(([s, n]) => s + 'p'.repeat(n) + s),
      created_at: fc.option(fc.constantFrom('2026-01-01T00:00:00Z', '2025-06-13T18:19:35.12345+02:00'), {
        nil: undefined,
      }),
      reasoning_content: fc.option(str, { nil: undefined }),
      tool_calls: fc.option(
        fc.array(fc.record({ id: str, extra_content: fc.dictionary(str, str, { maxKeys: 3 }) }), { maxLength: 2 }),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(obj, (o) => {
        const p = write([{ role: 'user', content: 'first', created_at: '2020-01-01T00:00:00Z' }, o]);
        const got = readLastLine(p, statSync(p).size, 512);
        expect(got.issue).toBeNull();
        expect(got.createdAt).toBe(o.created_at ?? null);
      }),
      { numRuns: 60 },
    );
  });
});
