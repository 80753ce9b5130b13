import { renameSync, rmSync } from 'node:fs';
import { Rng } from '../dev/sample/random.js';
import { seahorseSchemaSql } from '../dev/seahorse-schema.js';
import { sqlite } from '../src/io/sqlite.js';

/**
 * seahorse.db as a board that has been pruned for months holds it: message ids are never
 * reused (AUTOINCREMENT), so the live messages' ids are spread over a range many times their
 * number. The database is rebuilt the way PicoClaw would have filled it, row by row in the
 * order the messages came, each message inserted with an explicit id that leaves a gap for
 * the messages a prune deleted since (the triggers fill messages_fts as on the board, and
 * sqlite_sequence ends at the highest id).
 *
 * The gaps are geometric (memoryless: each id in between was deleted with the same chance),
 * their mean chosen so that the highest id lands near `maxId`.
 */
export interface SparseIds {
  /** Messages in the database. */
  messages: number;
  /** The highest message id after the rebuild. */
  maxId: number;
  /** The highest message id before (the dense build's). */
  denseMaxId: number;
}

/** The ids `count` messages get when the highest is to land near `maxId` (ascending, first ≥ 1). */
export function sparseIdSequence(count: number, maxId: number, seed: number): number[] {
  const rng = new Rng(seed);
  const mean = Math.max(1, maxId / Math.max(1, count));
  // P(gap = k) = p (1-p)^(k-1), k ≥ 1: mean 1/p.
  const p = 1 / mean;
  const out: number[] = [];
  let id = 0;
  for (let i = 0; i < count; i++) {
    const u = 1 - rng.next();
    const gap = p >= 1 ? 1 : 1 + Math.floor(Math.log(u) / Math.log(1 - p));
    id += gap;
    out.push(id);
  }
  return out;
}

/** Rebuild `dbPath` with sparse message ids (the file is replaced; its WAL is checkpointed first). */
export function spreadMessageIds(dbPath: string, maxId: number, seed: number): SparseIds {
  const Database = sqlite();
  const dense = `${dbPath}.dense`;
  {
    const db = new Database(dbPath);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  renameSync(dbPath, dense);
  for (const s of ['-wal', '-shm']) rmSync(dbPath + s, { force: true });
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.exec(seahorseSchemaSql('current'));
  db.prepare('ATTACH DATABASE ? AS d').run(dense);
  const ids = (db.prepare('SELECT message_id FROM d.messages ORDER BY message_id').raw().all() as [number][]).map(
    (r) => r[0],
  );
  const denseMaxId = ids.length ? ids[ids.length - 1]! : 0;
  const next = sparseIdSequence(ids.length, maxId, seed);
  const fill = db.transaction(() => {
    db.exec('CREATE TEMP TABLE idmap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)');
    const put = db.prepare('INSERT INTO idmap (old, new) VALUES (?, ?)');
    ids.forEach((old, i) => put.run(old, next[i]!));
    db.exec(`
      INSERT INTO conversations (conversation_id, session_key, created_at, updated_at)
        SELECT conversation_id, session_key, created_at, updated_at FROM d.conversations ORDER BY conversation_id;
      INSERT INTO messages (message_id, conversation_id, role, content, token_count, created_at, reasoning_content, model_name)
        SELECT m.new, o.conversation_id, o.role, o.content, o.token_count, o.created_at, o.reasoning_content, o.model_name
        FROM d.messages o JOIN idmap m ON m.old = o.message_id ORDER BY o.message_id;
      INSERT INTO message_parts (part_id, message_id, type, text, name, arguments, tool_call_id, media_uri, mime_type, ordinal)
        SELECT o.part_id, m.new, o.type, o.text, o.name, o.arguments, o.tool_call_id, o.media_uri, o.mime_type, o.ordinal
        FROM d.message_parts o JOIN idmap m ON m.old = o.message_id ORDER BY o.part_id;
      INSERT INTO summaries SELECT * FROM d.summaries;
      INSERT INTO summary_parents SELECT * FROM d.summary_parents;
      INSERT INTO summary_messages (summary_id, message_id, ordinal)
        SELECT o.summary_id, m.new, o.ordinal FROM d.summary_messages o JOIN idmap m ON m.old = o.message_id;
      INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id, message_id, token_count, created_at)
        SELECT o.conversation_id, o.ordinal, o.item_type, o.summary_id, m.new, o.token_count, o.created_at
        FROM d.context_items o LEFT JOIN idmap m ON m.old = o.message_id;
    `);
  });
  fill();
  db.exec('DETACH DATABASE d');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const max = (db.prepare('SELECT MAX(message_id) AS m FROM messages').get() as { m: number | null }).m ?? 0;
  db.close();
  rmSync(dense, { force: true });
  return { messages: ids.length, maxId: max, denseMaxId };
}
