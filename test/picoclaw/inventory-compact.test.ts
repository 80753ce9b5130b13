import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/io/sqlite.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory, releaseAliases } from '../../src/picoclaw/inventory/inventory.js';
import { withWalkCache } from '../../src/picoclaw/seahorse.js';
import { scanStore, storeTimes } from '../../src/picoclaw/inventory/sessions.js';
import { addConversation, handHome, writeSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { freedPerSession, heldPerSession } from '../support/heap.js';

/** The inventory keeps its numbers and written times packed: what it gives back must be what the files say. */
describe('the compact inventory', () => {
  // Written times of every shape a meta or a line can hold: Go's RFC3339Nano (trailing zeros cut),
  // fixed digits, offsets, a lowercase z, -00:00, a date that does not exist, year 1, no fraction.
  const SHAPES = [
    '2026-11-27T11:34:52.096855888Z',
    '2026-11-27T13:46:52.116945017+02:00',
    '2026-06-13T18:19:37.5Z',
    '2026-06-13T18:19:35.120000-05:30',
    '2026-01-01T00:00:00Z',
    '2026-01-01T00:00:00z',
    '2026-03-01T10:00:00-00:00',
    '2026-02-30T10:00:00Z',
    '0001-01-01T00:00:00Z',
    '2026-05-25T10:12:10.000000001+14:00',
    'yesterday',
    '',
    '2024-02-29T23:59:59.9Z',
    '2100-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T00:00:00+05:75',
    '2026-01-01T00:00:00-09:59',
    '0000-01-01T00:00:00Z',
    '2026-13-01T00:00:00Z',
  ];

  it('gives back every written time, base name, number and file fact exactly as the store scan read them', () => {
    // Each shape is checked as updated_at, created_at and the last line's created_at (rotated below).
    const home = tempDir();
    const { sessionsDir } = handHome(home, [], { seahorse: false });
    const shape = (i: number) => SHAPES[i % SHAPES.length]!;
    SHAPES.forEach((t, i) => {
      writeSession(sessionsDir, { key: `sk_v1_shape${i}`, updated: t, created: shape(i + 1), lastLine: shape(i + 2) });
    });
    // A key with ':' written '_' in its file name (derived), and one whose base keeps the ':' (stored).
    writeSession(sessionsDir, { key: 'agent:cron-abc-1', updated: '2026-11-01T00:00:00Z' });
    const oct = '2026-10-01T00:00:00Z';
    const odd = join(sessionsDir, 'agent:odd');
    writeFileSync(`${odd}.jsonl`, JSON.stringify({ role: 'user', content: 'x', created_at: oct }) + '\n');
    writeFileSync(`${odd}.meta.json`, JSON.stringify({ key: 'agent:odd', created_at: oct, updated_at: oct }));
    // An unreadable meta (no key, no count), a meta without its .jsonl, a file dated before 1970.
    writeFileSync(join(sessionsDir, 'broken.meta.json'), '{not json');
    writeFileSync(join(sessionsDir, 'broken.jsonl'), '');
    const lonely = { key: 'lonely', count: 3, updated_at: '2026-09-01T00:00:00Z' };
    writeFileSync(join(sessionsDir, 'lonely.meta.json'), JSON.stringify(lonely));
    writeSession(sessionsDir, { key: 'sk_v1_old_file', updated: '2026-08-01T00:00:00Z' });
    utimesSync(join(sessionsDir, 'sk_v1_old_file.jsonl'), new Date(-86_400_000), new Date(-86_400_000));

    const inv = buildInventory(discoverHome({ home }));
    const scan = scanStore(sessionsDir);
    expect(inv.sessions).toHaveLength(scan.sessions.length);
    expect(scan.sessions.length).toBe(SHAPES.length + 5);
    for (const s of scan.sessions) {
      const r = inv.sessions.find((x) => x.id === `${s.dir}/${s.base}`)!;
      expect(r, s.base).toBeDefined();
      const t = storeTimes(s);
      const newest = [t.updatedAt, t.createdAt, t.lastLine].filter((x): x is number => x !== null);
      expect({
        base: r.base,
        key: r.key,
        jsonlBytes: r.jsonlBytes,
        metaBytes: r.metaBytes,
        messages: r.messages,
        last: r.lastActivityMs,
        times: [r.times.meta_updated_at, r.times.meta_created_at, r.times.jsonl_last_line],
        files: r.files,
        issues: r.issues,
      }).toEqual({
        base: s.base,
        key: s.key,
        jsonlBytes: s.jsonl?.bytes ?? 0,
        metaBytes: s.meta?.bytes ?? 0,
        messages: s.parsedMeta?.count ?? null,
        last: newest.length ? Math.max(...newest) : null,
        times: [s.parsedMeta?.updatedAt ?? null, s.parsedMeta?.createdAt ?? null, s.lastLineCreatedAt],
        files: { jsonl: s.jsonl, meta: s.meta },
        issues: s.issues,
      });
    }
    expect(inv.sessions.find((r) => r.key === 'sk_v1_old_file')!.files.jsonl!.mtimeMs).toBe(-86_400_000);
    expect(inv.sessions.find((r) => r.key === 'agent:odd')!.base).toBe('agent:odd');
    expect(inv.sessions.find((r) => r.key === 'agent:cron-abc-1')!.base).toBe('agent_cron-abc-1');
  });

  // About 210 bytes; 390 with the aliases a list, 770 with each number and time a field.
  it('holds under 300 bytes of heap per session', () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [], { seahorse: false });
    const n = 2000;
    for (let i = 0; i < n; i++) {
      const key = `sk_v1_${String(i).padStart(64, '0')}`;
      const at = new Date(Date.UTC(2026, 6, 1) + i * 60_000).toISOString().replace('Z', '123456Z');
      const aliases = ['agent:main:main', `agent:main:direct:${i}`];
      writeSession(sessionsDir, { key, updated: at.replace('Z', '+02:00'), created: at, lastLine: at, aliases });
    }
    const home_ = discoverHome({ home });
    // A first inventory compiles the code; then only what the next one keeps is counted.
    expect(buildInventory(home_).sessions).toHaveLength(n);
    expect(heldPerSession(() => buildInventory(home_), n)).toBeLessThan(300);
  });
});

describe('aliases', () => {
  it('read back as the meta lists them, whatever their characters', () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [], { seahorse: false });
    const odd = [
      ['agent:main:main', 'agent:main:telegram:direct:1'],
      ['a"b', 'back\\slash', 'new\nline', '\u0000', 'émoji 🦞', '\ud800 lone', ''],
      ['agent:main:main', 'agent:main:main'],
    ];
    odd.forEach((aliases, i) =>
      writeSession(sessionsDir, { key: `sk_v1_${i}`, updated: '2026-11-01T00:00:00Z', aliases }),
    );
    const inv = buildInventory(discoverHome({ home }));
    for (const [i, aliases] of odd.entries()) {
      const s = inv.sessions.find((x) => x.key === `sk_v1_${i}`)!;
      expect(s.aliases).toEqual(aliases);
      // A fresh list each read: a caller that changes one changes nothing kept.
      s.aliases.push('x');
      expect(s.aliases).toEqual(aliases);
    }
  });
});

describe('releaseAliases', () => {
  it('frees what four aliases a session hold (over 80 bytes a session) and leaves every other field', () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [], { seahorse: false });
    const n = 2000;
    for (let i = 0; i < n; i++) {
      const key = `sk_v1_${String(i).padStart(64, '0')}`;
      const at = new Date(Date.UTC(2026, 6, 1) + i * 60_000).toISOString();
      const aliases = ['agent:ops:main', `agent:ops:direct:${i}`, `agent:ops:cli:direct:${i}`];
      writeSession(sessionsDir, { key, updated: at, aliases: [...aliases, `agent:ops:cli:default:direct:${i}`] });
    }
    const home_ = discoverHome({ home });
    const inv = buildInventory(home_);
    const before = inv.sessions.map((s) => [s.key, s.base, s.lastActivityMs, s.jsonlBytes, s.times, s.files]);
    expect(inv.sessions.every((s) => s.aliases.length === 4)).toBe(true);
    releaseAliases(inv);
    expect(inv.sessions.every((s) => s.aliases.length === 0)).toBe(true);
    expect(inv.sessions.map((s) => [s.key, s.base, s.lastActivityMs, s.jsonlBytes, s.times, s.files])).toEqual(before);
    // What releasing them frees: four aliases are one string of about 110 characters.
    expect(freedPerSession(() => buildInventory(home_), releaseAliases, n)).toBeGreaterThan(80);
    // Held as one flat string: about 300 bytes a session in all. As the rope JSON.stringify makes, 400.
    expect(heldPerSession(() => buildInventory(home_), n)).toBeLessThan(350);
  });
});

describe('a walk over seahorse.db', () => {
  it('runs with a 500 KB page cache and gives the connection its own back; a smaller one is left alone', () => {
    const db = new (sqlite())(join(tempDir(), 'x.db'));
    try {
      const cache = () => db.pragma('cache_size', { simple: true });
      expect(cache()).toBe(-16000);
      expect(withWalkCache(db, cache)).toBe(-500);
      expect(cache()).toBe(-16000);
      db.pragma('cache_size = 100');
      expect(withWalkCache(db, cache)).toBe(100);
      expect(() =>
        withWalkCache(db, () => {
          throw new Error('walk failed');
        }),
      ).toThrow('walk failed');
      expect(cache()).toBe(100);
      db.pragma('cache_size = -16000');
      expect(() =>
        withWalkCache(db, () => {
          throw new Error('walk failed');
        }),
      ).toThrow('walk failed');
      expect(cache()).toBe(-16000);
    } finally {
      db.close();
    }
  });
});

describe('an inventory built without aliases (the text sessions table)', () => {
  it('ties the seahorse rows named by aliases to their sessions as before, then holds no alias', () => {
    const home = tempDir();
    const { sessionsDir, dbPath } = handHome(home, []);
    const db = new (sqlite())(dbPath);
    const at = (i: number) => `2026-07-0${1 + (i % 9)} 10:00:00`;
    for (let i = 0; i < 12; i++) {
      const key = `sk_v1_s${i}`;
      const aliases = i % 3 === 0 ? [] : ['agent:main:main', `agent:main:direct:${i}`];
      writeSession(sessionsDir, { key, updated: at(i).replace(' ', 'T') + 'Z', aliases });
      // Every other aliased session's rows are under an alias, not under its key.
      addConversation(db, i % 3 !== 0 && i % 2 === 0 ? `agent:main:direct:${i}` : key, [at(i), at(i + 1)]);
    }
    addConversation(db, 'agent:main:direct:99', [at(3)]);
    db.close();
    const h = discoverHome({ home, env: {} });
    const view = (inv: ReturnType<typeof buildInventory>) => ({
      sessions: inv.sessions.map((s) => [s.key, s.conversations.map((c) => [c.conversationId, c.key, c.messages])]),
      orphans: inv.orphanConversations.map((c) => [c.conversationId, c.key]),
    });
    const full = buildInventory(h);
    const bare = buildInventory(h, { withoutAliases: true });
    expect(full.sessions.filter((s) => s.aliases.length > 0)).toHaveLength(8);
    expect(bare.sessions.every((s) => s.aliases.length === 0)).toBe(true);
    expect(view(bare)).toEqual(view(full));
    // Rows found through an alias, and the one no session names.
    expect(full.sessions.find((s) => s.key === 'sk_v1_s2')!.conversations.map((c) => c.key)).toEqual([
      'agent:main:direct:2',
    ]);
    expect(view(full).orphans).toEqual([[13, 'agent:main:direct:99']]);
  });
});
