import { closeSync, constants, openSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import type { Database } from '../io/sqlite.js';
import { IO_BUF, sha256, writeAll } from './tar.js';

/*
 * An archive's seahorse rows (src/archive/archive.ts): read row by row, written as JSON lines.
 */

/**
 * The temp tables SeahorseDeleter.prepare() fills on its connection: the conversations to delete,
 * and their message parts by id (message_parts has no index on message_id). The archiver reads the
 * parts it stores from there too.
 */
export const VICTIM_CONVS = 'guard_victim_convs';
export const VICTIM_PARTS = 'guard_victim_parts';

const ROW_QUERIES: [table: string, sql: string, params: number][] = [
  ['conversations', `SELECT * FROM conversations WHERE conversation_id = ?`, 1],
  ['messages', `SELECT * FROM messages WHERE conversation_id = ? ORDER BY message_id`, 1],
  [
    'message_parts',
    `SELECT * FROM message_parts WHERE message_id IN (SELECT message_id FROM ` +
      `messages WHERE conversation_id = ?) ORDER BY part_id`,
    1,
  ],
  ['summaries', `SELECT * FROM summaries WHERE conversation_id = ?`, 1],
  [
    'summary_parents',
    `SELECT * FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM ` +
      `summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id ` +
      `FROM summaries WHERE conversation_id = ?)`,
    2,
  ],
  [
    'summary_messages',
    `SELECT * FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`,
    1,
  ],
  ['context_items', `SELECT * FROM context_items WHERE conversation_id = ? ORDER BY ordinal`, 1],
];

type Statement = BetterSqlite3.Statement<unknown[]>;
/** ROW_QUERIES prepared once per connection, not once per archive. */
const rowStatements = new WeakMap<Database, Statement[]>();

/**
 * Every seahorse row of the conversations (docs/picoclaw.md, seahorse schema), one JSON
 * line each (`{"table":…,"row":…}`, BLOBs as {"$base64":…}), streamed row by row into
 * a temp file. Returns its open fd, size, hash and row counts.
 */
export function writeRows(db: Database, conversationIds: number[], tmpPath: string) {
  let statements = rowStatements.get(db);
  if (!statements) rowStatements.set(db, (statements = ROW_QUERIES.map(([, sql]) => db.prepare(sql))));
  const parts = preparedParts(db);
  const fd = openSync(tmpPath, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
  const h = sha256();
  const rows: Record<string, number> = {};
  let pending: string[] = [];
  let pendingLen = 0;
  let bytes = 0;
  const flush = () => {
    const b = Buffer.from(pending.join(''));
    writeAll(fd, b);
    h.update(b);
    bytes += b.length;
    pending = [];
    pendingLen = 0;
  };
  try {
    for (const [i, [table, , n]] of ROW_QUERIES.entries()) {
      rows[table] = 0;
      for (const conversationId of conversationIds) {
        const stmt = (table === 'message_parts' && parts?.(conversationId)) || statements[i]!;
        for (const row of stmt.iterate(...Array<number>(n).fill(conversationId)) as Iterable<Record<string, unknown>>) {
          for (const k of Object.keys(row))
            if (Buffer.isBuffer(row[k])) row[k] = { $base64: row[k].toString('base64') };
          const line = JSON.stringify({ table, row }) + '\n';
          pending.push(line);
          pendingLen += line.length;
          rows[table]++;
          if (pendingLen >= IO_BUF) flush();
        }
      }
    }
    flush();
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return { fd, bytes, sha256: h.digest('hex'), rows };
}

/**
 * The parts of a conversation a prepared deleter will delete, read from the ids its prepare()
 * found on this connection (SeahorseDeleter.prepare): the plain query scans all of message_parts
 * for each archive, so an archiving pass grew with the square of the home (BENCHMARKS.md section 10f). The deleter
 * deletes exactly those parts, and a part only ever comes with a new message, which the
 * conversation's re-check catches before anything is deleted (and the archive is then removed).
 * Returns, for a conversation, that statement, or null when it was not prepared (the plain query).
 */
function preparedParts(db: Database): ((conversationId: number) => Statement | null) | null {
  const has = db
    .prepare(`SELECT COUNT(*) AS n FROM temp.sqlite_master WHERE type = 'table' AND name IN (?, ?)`)
    .get(VICTIM_CONVS, VICTIM_PARTS) as { n: number };
  if (has.n !== 2) return null;
  let s = preparedStatements.get(db);
  if (!s)
    preparedStatements.set(
      db,
      (s = {
        prepared: db.prepare(`SELECT 1 FROM temp.${VICTIM_CONVS} WHERE id = ?`),
        parts: db.prepare(
          `SELECT * FROM message_parts WHERE part_id IN (SELECT part_id FROM temp.${VICTIM_PARTS} WHERE ` +
            `message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?)) ORDER BY part_id`,
        ),
      }),
    );
  const { prepared, parts } = s;
  return (conversationId) => (prepared.get(conversationId) === undefined ? null : parts);
}

const preparedStatements = new WeakMap<Database, { prepared: Statement; parts: Statement }>();
