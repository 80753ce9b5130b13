import { closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/io/sqlite.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import { writeRows } from '../../src/archive/rows.js';
import { SeahorseDeleter } from '../../src/prune/apply/seahorse-delete.js';
import { addConversation, handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/** The JSON lines writeRows stores for conversation C on db. */
function rowsOf(db: ReturnType<typeof openSeahorseWrite>, C: number, dir: string): string {
  const tmp = join(dir, `rows-${C}-${Math.random().toString(36).slice(2)}`);
  const r = writeRows(db, [C], tmp);
  closeSync(r.fd);
  return readFileSync(tmp, 'utf8');
}

describe("an archive's seahorse rows", () => {
  it('read the parts of a prepared conversation from the deleter: the rows a scan of message_parts gives', () => {
    const home = tempDir();
    const { dbPath } = handHome(home, []);
    const raw = new (sqlite())(dbPath);
    const t = (d: number) => `2026-08-0${d} 10:00:00`;
    const ids = ['a', 'b', 'c'].map((k, i) => addConversation(raw, `sk_v1_${k}`, [t(i + 1), t(i + 2), t(i + 3)]));
    // Parts added later to the first conversation's messages: their ids sort after the others'.
    for (const m of raw.prepare(`SELECT message_id FROM messages WHERE conversation_id = ?`).all(ids[0]) as {
      message_id: number;
    }[])
      raw
        .prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'tool_call', ?, 1)`)
        .run(m.message_id, `late part of ${m.message_id}`);
    raw.close();
    const dir = tempDir();

    const plain = openSeahorseWrite(dbPath);
    const want = ids.map((C) => rowsOf(plain, C, dir));
    plain.close();
    expect(want[0]).toContain('late part of');
    expect(want[0]!.match(/"table":"message_parts"/g)).toHaveLength(6);

    const db = openSeahorseWrite(dbPath);
    try {
      // The pass prepares the conversations it may delete: the first two, not the third.
      new SeahorseDeleter(db).prepare([ids[0]!, ids[1]!]);
      expect(ids.map((C) => rowsOf(db, C, dir))).toEqual(want);
      // Which path each took: a part given to an old message after the pass prepared (PicoClaw never does
      // that: a part comes with a new message, which the re-check catches) is not among the prepared ones,
      // nor deleted by the deleter; a conversation not prepared is read by the plain scan and has it.
      const late = (C: number) => {
        const m = db.prepare(`SELECT MIN(message_id) AS m FROM messages WHERE conversation_id = ?`).get(C) as {
          m: number;
        };
        db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', 'after', 9)`).run(
          m.m,
        );
      };
      late(ids[0]!);
      late(ids[2]!);
      expect(rowsOf(db, ids[0]!, dir)).toBe(want[0]);
      expect(rowsOf(db, ids[2]!, dir)).toContain('"text":"after"');
    } finally {
      db.close();
    }
  });
});
