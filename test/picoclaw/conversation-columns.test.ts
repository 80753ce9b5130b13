import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/io/sqlite.js';
import { ConversationColumns } from '../../src/picoclaw/inventory/conversation-columns.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import type { ConversationStat } from '../../src/picoclaw/seahorse.js';
import { addConversation, handHome, oneConversationEach, writeSession } from '../support/home.js';
import { heldPerSession } from '../support/heap.js';
import { tempDir } from '../support/tmp.js';

const FIELDS = [
  'conversationId',
  'key',
  'messages',
  'summaries',
  'lastMessageAt',
  'lastMessageId',
  'createdAt',
] as const;

/** Every field of a stored conversation, read through its getters, as a plain object. */
const fields = (c: ConversationStat) => Object.fromEntries(FIELDS.map((f) => [f, c[f]]));

describe("the inventory's conversation columns", () => {
  // SQLite returns what a column holds, whatever its declared type: times of every shape, numbers
  // where a time is expected, NULLs, and integers of any size.
  const TIMES = [
    '2026-11-27 11:34:52',
    '1970-01-01 00:00:00',
    '1969-12-31 23:59:59',
    '0001-01-01 00:00:00',
    '9999-12-31 23:59:59',
    '2026-02-30 10:00:00',
    '2026-01-01 24:00:00',
    '2026-01-01 23:59:60',
    '2026-11-27T11:34:52',
    '2026-11-27 11:34:52.123',
    '2026-11-27 11:34:52Z',
    ' 2026-11-27 11:34:52',
    '',
    'yesterday',
  ];
  const time = fc.oneof(fc.constantFrom<unknown>(...TIMES), fc.constant(null), fc.integer(), fc.string());
  const num = fc.oneof(
    fc.integer(),
    fc.constantFrom<unknown>(0, -0, 2 ** 53 - 1, -(2 ** 53), 1.5, Infinity, null, 'seven'),
  );

  it('gives back every field of every row as SQLite returned it (value, type, null, absent)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record(
            {
              conversationId: num,
              key: fc.string(),
              messages: num,
              summaries: num,
              lastMessageAt: time,
              lastMessageId: num,
              createdAt: time,
            },
            { requiredKeys: ['conversationId', 'key', 'messages', 'summaries', 'lastMessageAt', 'createdAt'] },
          ),
          { maxLength: 2500 },
        ),
        (rows) => {
          const cols = new ConversationColumns();
          const kept = rows.map((r) => cols.get(cols.add(r as unknown as ConversationStat, r.key)));
          kept.forEach((c, i) => {
            const r = rows[i]! as Record<string, unknown>;
            for (const f of FIELDS) expect(Object.is(c[f], r[f]), `${f} of row ${i}: ${String(r[f])}`).toBe(true);
            expect('lastMessageId' in r ? c.lastMessageId : undefined).toBe(r.lastMessageId);
          });
        },
      ),
      { numRuns: 40 },
    );
    // Past the first blocks of 1,024 (fast-check's arrays stay short): rows of every shape in turn.
    const cols = new ConversationColumns();
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      conversationId: i * 7919,
      key: `k${i}`,
      messages: i % 5 === 0 ? null : i,
      summaries: -i,
      lastMessageAt: i % 3 === 0 ? null : TIMES[i % TIMES.length]!,
      lastMessageId: i % 4 === 0 ? null : 2 ** 40 + i,
      createdAt: i % 2 === 0 ? i : TIMES[(i * 7) % TIMES.length]!,
    }));
    const kept = rows.map((r) => cols.get(cols.add(r as unknown as ConversationStat, r.key)));
    expect(kept.map(fields)).toEqual(rows);
  });

  it('hands the inventory each row as read, one stored copy for the sessions that share it', () => {
    const home = tempDir();
    const { sessionsDir, dbPath } = handHome(home, [
      { key: 'sk_v1_a', updated: '2026-11-01T00:00:00Z', seahorse: ['2026-11-02 10:00:00', '2026-11-03 11:00:00'] },
      { key: 'sk_v1_b', updated: '2026-11-01T00:00:00Z', aliases: ['agent:main:telegram:direct:7'] },
      { key: 'sk_v1_c', updated: '2026-11-01T00:00:00Z', aliases: ['agent:main:telegram:direct:7'] },
    ]);
    writeSession(sessionsDir, {
      key: 'sk_v1_d',
      updated: '2026-11-01T00:00:00Z',
      aliases: ['agent:main:slack:direct:9'],
    });
    const db = new (sqlite())(dbPath);
    addConversation(db, 'agent:main:telegram:direct:7', ['2026-11-04 12:00:00']);
    addConversation(db, 'sk_v1_d', ['2026-11-05 13:00:00']);
    addConversation(db, 'agent:main:slack:direct:9', ['2026-11-06 14:00:00', '2026-11-06 14:00:01']);
    const raw = db.prepare(`SELECT conversation_id, created_at FROM conversations ORDER BY conversation_id`).all();
    db.close();
    const inv = buildInventory(discoverHome({ home }));
    const by = (k: string) => inv.sessions.find((s) => s.key === k)!;
    expect(by('sk_v1_a').conversations.map(fields)).toEqual([
      {
        conversationId: 1,
        key: 'sk_v1_a',
        messages: 2,
        summaries: 2,
        lastMessageAt: '2026-11-03 11:00:00',
        lastMessageId: 2,
        createdAt: (raw[0] as { created_at: string }).created_at,
      },
    ]);
    // One conversation named by two sessions' alias: one stored row, read by both.
    const rowOf = (k: string) => (by(k) as unknown as { convs: unknown }).convs;
    expect(rowOf('sk_v1_b')).toBe(1);
    expect(rowOf('sk_v1_c')).toBe(1);
    expect(by('sk_v1_b').conversations.map((c) => [c.conversationId, c.key])).toEqual([
      [2, 'agent:main:telegram:direct:7'],
    ]);
    expect(by('sk_v1_d').conversations.map((c) => [c.conversationId, c.messages, c.lastMessageAt])).toEqual([
      [3, 1, '2026-11-05 13:00:00'],
      [4, 2, '2026-11-06 14:00:01'],
    ]);
    expect(by('sk_v1_d').times.seahorse_last_message).toBe('2026-11-06 14:00:01');
    expect(by('sk_v1_a').times.seahorse_last_message).toBe('2026-11-03 11:00:00');
  });

  // About 195 bytes; 270 with an object per row, 480 with each row kept.
  it('holds under 240 bytes of heap per session with one conversation', () => {
    const home = tempDir();
    const n = 2000;
    oneConversationEach(home, n, (i) => ({
      key: `sk_v1_${String(i).padStart(64, '0')}`,
      at: new Date(Date.UTC(2026, 6, 1) + i * 60_000).toISOString(),
    }));
    const home_ = discoverHome({ home });
    // A first build compiles the code.
    expect(buildInventory(home_).sessions.every((s) => s.conversations.length === 1)).toBe(true);
    expect(heldPerSession(() => buildInventory(home_), n)).toBeLessThan(240);
  });
});
