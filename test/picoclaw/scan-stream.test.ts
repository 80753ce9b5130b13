import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withSmallFile, readSmallFile } from '../../src/io/smallfile.js';
import { classifyEntry, parseMeta, scanStore, type StoredSession } from '../../src/picoclaw/inventory/sessions.js';
import { tempDir } from '../support/tmp.js';
import { settledHeapData } from '../support/heap.js';

type Kind = 'file' | 'dir' | 'symlink' | 'fifo';

/**
 * What a scan of `dir` must report, said without streaming: every entry by its name in sort
 * order; sessions are the regular `.meta.json` files, each with its `.jsonl` when that is a
 * regular file (a symlink or folder in its place is reported, anything else is "missing");
 * orphans are the regular `.jsonl` files without a regular meta.
 */
function expected(dir: string, names: string[]) {
  const kind = (name: string): Kind | null => {
    try {
      const st = lstatSync(join(dir, name));
      return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'fifo';
    } catch {
      return null;
    }
  };
  const sorted = [...names].sort();
  const ignored: { name: string; why: string }[] = [];
  const sessions: [string, string | null, string][] = [];
  const orphans: string[] = [];
  for (const name of sorted) {
    const c = classifyEntry(name);
    if (c === 'other') continue;
    if (c === 'temp') {
      ignored.push({ name, why: 'temp_file' });
      continue;
    }
    const k = kind(name);
    if (k === 'symlink') ignored.push({ name, why: 'symlink' });
    else if (k === 'dir') ignored.push({ name, why: 'directory' });
    else if (k === 'fifo') ignored.push({ name, why: 'not_a_regular_file' });
    else if (c === 'legacy') ignored.push({ name, why: 'legacy_json' });
    if (k !== 'file') continue;
    if (c === 'meta') {
      const base = name.slice(0, -'.meta.json'.length);
      const j = kind(`${base}.jsonl`);
      const jsonl = j === 'file' ? join(dir, `${base}.jsonl`) : null;
      sessions.push([
        base,
        jsonl,
        j === 'symlink' || j === 'dir' || j === 'fifo' ? 'jsonl_not_regular_file' : jsonl ? '' : 'jsonl_missing',
      ]);
    } else if (c === 'jsonl' && kind(`${name.slice(0, -'.jsonl'.length)}.meta.json`) !== 'file')
      orphans.push(join(dir, name));
  }
  return { ignored, sessions, orphans };
}

const seen = (s: StoredSession): [string, string | null, string] => [
  s.base,
  s.jsonl?.path ?? null,
  s.issues.find((i) => i === 'jsonl_missing' || i === 'jsonl_not_regular_file') ?? '',
];

describe('the store scan streams a folder', () => {
  // About 160-210 bytes: the folder's names, the only thing the scan keeps for the whole folder.
  // 590-650 when it kept a record, a path and a map entry per file until the folder was done.
  it('holds under 350 bytes of heap per session halfway through a 5,000-session folder', () => {
    const dir = tempDir('pcg-scan-mem-');
    const n = 5000;
    const at = '2026-07-01T10:00:00.123456Z';
    for (let i = 0; i < n; i++) {
      const base = `sk_v1_${i.toString(16).padStart(64, '0')}`;
      writeFileSync(join(dir, `${base}.jsonl`), JSON.stringify({ role: 'user', content: 'hi', created_at: at }) + '\n');
      writeFileSync(
        join(dir, `${base}.meta.json`),
        JSON.stringify({ key: base, count: 1, created_at: at, updated_at: at }),
      );
    }
    // A first scan compiles the code (counted in the heap too); then a full collection before the
    // second one and one when it has handed over half the sessions (threshold 0: always collect).
    let count = 0;
    scanStore(dir, () => count++);
    expect(count).toBe(n);
    const before = settledHeapData();
    let held = NaN;
    count = 0;
    const scan = scanStore(dir, () => {
      if (++count === n / 2) held = settledHeapData() - before;
    });
    expect(count).toBe(n);
    expect(scan.sessions).toEqual([]);
    const perSession = held / n;
    expect(perSession).toBeLessThan(350);
  });

  it('pairs a .jsonl with its meta when other transcripts sort between them', () => {
    const dir = tempDir('pcg-scan-pairs-');
    const target = join(tempDir('pcg-scan-target-'), 'target');
    writeFileSync(target, '{"key":"elsewhere"}');
    const line = '{"role":"user","created_at":"2026-07-01T10:00:00Z"}\n';
    const files: [string, Kind][] = [
      ['.tmp-1.meta.json', 'file'],
      ['a.jsonl', 'file'],
      ['a.jsonl.jsonl', 'file'],
      ['a.jsonl.meta.json', 'file'],
      ['a.k.jsonl', 'symlink'],
      ['a.k.meta.json', 'file'],
      ['a.meta.json', 'file'],
      ['b.jsonl', 'dir'],
      ['b.meta.json', 'file'],
      ['c.jsonl', 'fifo'],
      ['c.meta.json', 'file'],
      ['d.jsonl', 'file'],
      ['e.jsonl.bak', 'file'],
      ['f.jsonl', 'file'],
      ['f.meta.json', 'symlink'],
      ['old.json', 'file'],
    ];
    for (const [name, kind] of files) {
      const p = join(dir, name);
      if (kind === 'dir') mkdirSync(p);
      else if (kind === 'symlink') symlinkSync(target, p);
      else if (kind === 'fifo') execFileSync('mkfifo', [p]);
      else writeFileSync(p, name.endsWith('.meta.json') ? JSON.stringify({ key: name, count: 1 }) : line);
    }
    const want = {
      ignored: [
        { name: '.tmp-1.meta.json', why: 'temp_file' },
        { name: 'a.k.jsonl', why: 'symlink' },
        { name: 'b.jsonl', why: 'directory' },
        { name: 'c.jsonl', why: 'not_a_regular_file' },
        { name: 'f.meta.json', why: 'symlink' },
        { name: 'old.json', why: 'legacy_json' },
      ],
      sessions: [
        ['a.jsonl', join(dir, 'a.jsonl.jsonl'), ''],
        ['a.k', null, 'jsonl_not_regular_file'],
        ['a', join(dir, 'a.jsonl'), ''],
        ['b', null, 'jsonl_not_regular_file'],
        ['c', null, 'jsonl_not_regular_file'],
      ],
      orphans: [join(dir, 'd.jsonl'), join(dir, 'f.jsonl')],
    };
    expect(
      expected(
        dir,
        files.map(([name]) => name),
      ),
    ).toEqual(want);
    const handed: StoredSession[] = [];
    const scan = scanStore(dir, (s) => handed.push(s));
    expect({
      ignored: scan.ignored,
      sessions: handed.map(seen),
      orphans: scan.orphanJsonl.map((o) => o.path),
    }).toEqual(want);
    expect(handed.map((s) => s.lastLineCreatedAt)).toEqual([
      '2026-07-01T10:00:00Z',
      null,
      '2026-07-01T10:00:00Z',
      null,
      null,
    ]);
  });

  it('reports sessions, orphans and ignored entries in name order, whatever lies between a .jsonl and its meta', () => {
    // Bases chosen so that other names sort between `x.jsonl` and `x.meta.json` (`a.jsonl.meta.json`,
    // `a.k`), and every kind of entry under every name shape.
    const base = fc.constantFrom(
      'a',
      'a.jsonl',
      'a.meta',
      'a.k',
      'b',
      'B',
      'agent_cron-1',
      'session-1',
      '.tmp-9',
      'é',
      '',
    );
    const suffix = fc.constantFrom('.meta.json', '.jsonl', '.json', '.json.migrated', '.tmp', '', '.jsonl.bak');
    const type = fc.constantFrom<Kind>('file', 'file', 'file', 'file', 'dir', 'symlink', 'fifo');
    const entry = fc.record({ base, suffix, type });
    fc.assert(
      fc.property(fc.uniqueArray(entry, { selector: (e) => e.base + e.suffix, maxLength: 30 }), (entries) => {
        const dir = tempDir('pcg-scan-order-');
        const target = join(tempDir('pcg-scan-target-'), 'target');
        writeFileSync(target, '{"key":"elsewhere"}');
        const names: string[] = [];
        for (const e of entries) {
          const name = e.base + e.suffix;
          if (name === '') continue;
          const p = join(dir, name);
          if (e.type === 'dir') mkdirSync(p);
          else if (e.type === 'symlink') symlinkSync(target, p);
          else if (e.type === 'fifo') execFileSync('mkfifo', [p]);
          else if (name.endsWith('.meta.json')) writeFileSync(p, JSON.stringify({ key: e.base || 'k', count: 1 }));
          else writeFileSync(p, '{"role":"user","created_at":"2026-07-01T10:00:00Z"}\n');
          names.push(name);
        }
        const want = expected(dir, names);
        const handed: StoredSession[] = [];
        const streamed = scanStore(dir, (s) => handed.push(s));
        const whole = scanStore(dir);
        for (const [scan, sessions] of [
          [streamed, handed],
          [whole, whole.sessions],
        ] as const) {
          expect(scan.error).toBeNull();
          expect(scan.ignored).toEqual(want.ignored);
          expect(sessions.map(seen)).toEqual(want.sessions);
          expect(scan.orphanJsonl.map((o) => o.path)).toEqual(want.orphans);
          for (const s of sessions) expect(s.meta!.path).toBe(join(dir, `${s.base}.meta.json`));
        }
        expect(streamed.sessions).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });
});

describe('an empty meta', () => {
  it('is one of white space as String.prototype.trim sees its bytes as Latin-1 (every byte, every pair)', () => {
    expect(parseMeta(Buffer.alloc(0)).issue).toBe('meta_empty');
    for (let a = 0; a < 256; a++)
      for (let b = -1; b < 256; b++) {
        const bytes = Buffer.from(b < 0 ? [a] : [a, b]);
        const blank = bytes.toString('latin1').trim() === '';
        expect([bytes.toString('hex'), parseMeta(bytes).issue === 'meta_empty']).toEqual([
          bytes.toString('hex'),
          blank,
        ]);
      }
  });
});

describe('small files are read into one reused buffer', () => {
  it('lends one buffer to each read, a fresh one to a read made while it is lent; readSmallFile copies', () => {
    const dir = tempDir();
    const a = join(dir, 'a.json');
    const b = join(dir, 'b.json');
    writeFileSync(a, '{"a":1}');
    writeFileSync(b, '{"b":2}');
    const first = withSmallFile(a, 'meta', {}, (bytes) => bytes.buffer);
    const second = withSmallFile(b, 'meta', {}, (bytes) => bytes.buffer);
    expect(second).toBe(first);
    const nested = withSmallFile(a, 'meta', {}, (outer) => {
      const inner = withSmallFile(b, 'meta', {}, (bytes) => [bytes.buffer, bytes.toString()] as const);
      return [outer.buffer, outer.toString(), ...inner] as const;
    });
    expect(nested[0]).toBe(first);
    expect(nested[2]).not.toBe(first);
    expect([nested[1], nested[3]]).toEqual(['{"a":1}', '{"b":2}']);
    // What readSmallFile returns is the caller's to keep: later reads do not overwrite it.
    const kept = readSmallFile(a, 'meta');
    readSmallFile(b, 'meta');
    expect(kept.buffer).not.toBe(first);
    expect(kept.toString()).toBe('{"a":1}');
  });

  it('reads a file larger than the buffer whole, and still stops at the cap', () => {
    const p = join(tempDir(), 'big.json');
    const text = JSON.stringify({ key: 'k', summary: 'x'.repeat(200 * 1024) });
    writeFileSync(p, text);
    expect(readSmallFile(p, 'meta').toString()).toBe(text);
    expect(withSmallFile(p, 'meta', {}, (bytes) => bytes.toString())).toBe(text);
    expect(() => readSmallFile(p, 'meta', { maxBytes: 100 * 1024 })).toThrow(/is larger than 100 KiB/);
    expect(() => readSmallFile(p, 'meta', { maxBytes: text.length - 1 })).toThrow(/is larger than/);
    expect(readSmallFile(p, 'meta', { maxBytes: text.length }).toString()).toBe(text);
  });
});
