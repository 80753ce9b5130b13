import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readContentBytes } from '../../src/picoclaw/seahorse.js';
import { addConversation, createSeahorse } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

type Db = ReturnType<typeof createSeahorse>;

/**
 * The size estimate's rule spelled out with SQL joins: per conversation id, its messages' content
 * bytes plus 64 each, its messages' parts' text and arguments bytes plus 48 each, its summaries'
 * content bytes plus 96 each. An id SQL reads as something other than a number is summed apart.
 */
function reference(db: Db): { byId: Map<number, number>; total: number } {
  const byId = new Map<number, number>();
  let total = 0;
  const add = (rows: { id: unknown; b: number | null }[]) => {
    for (const r of rows) {
      const b = r.b ?? 0;
      total += b;
      if (typeof r.id === 'number') byId.set(r.id, (byId.get(r.id) ?? 0) + b);
    }
  };
  add(
    db
      .prepare(
        `SELECT conversation_id AS id, SUM(octet_length(content)) + COUNT(*) * 64 AS b FROM messages GROUP BY conversation_id`,
      )
      .all() as { id: unknown; b: number | null }[],
  );
  add(
    db
      .prepare(
        `SELECT m.conversation_id AS id, SUM(COALESCE(octet_length(p.text), 0) + COALESCE(octet_length(p.arguments), 0) + 48) AS b
           FROM message_parts p JOIN messages m ON m.message_id = p.message_id
          WHERE typeof(m.conversation_id) IN ('integer', 'real') GROUP BY m.conversation_id`,
      )
      .all() as { id: unknown; b: number | null }[],
  );
  add(
    db
      .prepare(
        `SELECT conversation_id AS id, SUM(octet_length(content) + 96) AS b FROM summaries GROUP BY conversation_id`,
      )
      .all() as { id: unknown; b: number | null }[],
  );
  return { byId, total };
}

describe("seahorse's content bytes per conversation (the size estimate's basis)", () => {
  it('are what the rule gives for every conversation, odd rows included', () => {
    const db = createSeahorse(join(tempDir(), 'seahorse.db'));
    const t = (d: number) => `2026-08-${String(d).padStart(2, '0')} 10:00:00`;
    for (let i = 0; i < 30; i++)
      addConversation(db, `sk_v1_c${i}`, [t(1 + (i % 9)), t(2 + (i % 9)), t(3 + (i % 9))].slice(0, 1 + (i % 3)), {
        contentBytes: i * 37,
      });
    // Rows PicoClaw would not write, that a hand-edited or damaged database can hold.
    db.pragma('foreign_keys = OFF');
    // A conversation with summaries only, one with a very large id, messages with empty content.
    db.prepare(
      `INSERT INTO summaries (summary_id, conversation_id, kind, content) VALUES ('s-only', 500, 'leaf', 'ab')`,
    ).run();
    db.prepare(`INSERT INTO conversations (conversation_id, session_key) VALUES (?, 'sk_v1_big')`).run(2 ** 40);
    for (const c of [2 ** 40, 2 ** 40, 7])
      db.prepare(
        `INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'user', '', '2026-08-01 10:00:00')`,
      ).run(c);
    // Parts with only arguments, with neither, and of a message that is gone.
    const last = (db.prepare(`SELECT MAX(message_id) AS m FROM messages`).get() as { m: number }).m;
    db.prepare(
      `INSERT INTO message_parts (message_id, type, arguments, ordinal) VALUES (?, 'tool_call', '{"x":"é"}', 1)`,
    ).run(last);
    db.prepare(`INSERT INTO message_parts (message_id, type, ordinal) VALUES (?, 'tool_call', 2)`).run(last - 1);
    db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', 'lost', 0)`).run(
      last + 1000,
    );
    // A message whose conversation id is text: no conversation has it, yet its bytes are in the file.
    db.prepare(
      `INSERT INTO messages (conversation_id, role, content, created_at) VALUES ('abc', 'user', 'hello', '2026-08-01 10:00:00')`,
    ).run();

    const got = readContentBytes(db);
    const want = reference(db);
    expect(want.byId.size).toBe(32);
    expect(got.size).toBe(want.byId.size);
    for (const [id, b] of want.byId) expect([id, got.get(id)]).toEqual([id, b]);
    for (const id of [0, 1.5, -1, 499, 501, 2 ** 40 + 1]) expect(got.get(id)).toBe(want.byId.get(id));
    let total = 0;
    for (const b of got.values()) total += b;
    expect(total).toBe(want.total);
    db.close();
  });

  it('are the same when the message ids are sparse (ids are never reused: a pruned database drifts there)', () => {
    const db = createSeahorse(join(tempDir(), 'seahorse.db'));
    const t = '2026-08-01 10:00:00';
    for (let i = 0; i < 40; i++) addConversation(db, `sk_v1_s${i}`, [t, t], { contentBytes: 10 + i });
    // Move each message (and its parts) to an id far above the last, as years of deletions leave them.
    const ids = (db.prepare(`SELECT message_id AS m FROM messages ORDER BY message_id`).all() as { m: number }[]).map(
      (r) => r.m,
    );
    db.pragma('foreign_keys = OFF');
    ids.forEach((m, i) => {
      const to = (i + 1) * 123_456_789 + 2 ** 33;
      db.prepare(`UPDATE messages SET message_id = ? WHERE message_id = ?`).run(to, m);
      db.prepare(`UPDATE message_parts SET message_id = ? WHERE message_id = ?`).run(to, m);
    });
    for (const m of ids.slice(0, 5))
      db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', 'xy', 3)`).run(
        (ids.indexOf(m) + 1) * 123_456_789 + 2 ** 33,
      );
    const got = readContentBytes(db);
    const want = reference(db);
    expect(want.byId.size).toBe(40);
    for (const [id, b] of want.byId) expect([id, got.get(id)]).toEqual([id, b]);
    db.close();
  });
});
