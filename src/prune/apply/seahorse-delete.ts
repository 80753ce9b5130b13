import type BetterSqlite3 from 'better-sqlite3';
import type { Database } from '../../io/sqlite.js';
import { GatewayBusy, WriteLock } from './write-lock.js';
import { VICTIM_CONVS, VICTIM_PARTS } from '../../archive/rows.js';

export { GatewayBusy };

/**
 * Deleting one conversation's rows from seahorse.db, in time linear in what is deleted.
 *
 * PicoClaw's delete triggers (`messages_ad`, `summaries_ad`) run
 * `DELETE FROM messages_fts WHERE message_id = old.message_id`: a filter on an FTS5
 * column is a full scan, so every deleted row scans the whole index (quadratic;
 * docs/picoclaw.md#deleting-is-slow-the-fts5-triggers; BENCHMARKS.md section 2 measures it). Instead, inside each write
 * transaction: capture the two triggers' SQL from sqlite_master, drop them, delete the
 * FTS rows by rowid (found once per pass from the FTS content table), delete the rows
 * in docs/picoclaw.md#delete-order (children first), and recreate the triggers from the
 * captured SQL. DDL is transactional: no other connection ever sees a missing trigger.
 * The broken summaries trigger of older databases (FTS5 'delete' on an ordinary table)
 * never fires this way, and is put back exactly as it was.
 *
 * Large conversations are split across several short transactions by message_id so
 * that no write lock is held anywhere near the gateway's 5 s busy timeout.
 */

export interface DeleteStats {
  messages: number;
  summaries: number;
  parts: number;
  transactions: number;
  longestTxnMs: number;
  totalTxnMs: number;
}

export interface DeleterOptions {
  /** Start size of a message chunk per transaction (adapted to stay under targetTxnMs). */
  chunk?: number;
  targetTxnMs?: number;
  /**
   * Online only: take each transaction's write lock only at a quiet moment, without
   * waiting in SQLite's busy handler (src/prune/apply/write-lock.ts says why). 0: gateway stopped.
   */
  quietMs?: number;
  /** Give up (GatewayBusy) when the database has not been quiet for this long. */
  maxQuietWaitMs?: number;
  /** Called after each transaction (progress, crash-test hooks). */
  onTxn?: (ms: number) => void;
}

/** How far deleteConversation got. */
export interface ConversationDelete {
  /** Every row is gone, the conversations row included. */
  complete: boolean;
  /** Something was deleted (summaries, messages): an incomplete delete is a partial one. */
  touched: boolean;
  deletedMessages: number;
}

type Statement = BetterSqlite3.Statement<unknown[]>;

interface TriggerSql {
  name: string;
  sql: string;
}

/** Map FTS rowids by the id column, reading the FTS5 content table once (no per-row scan). */
function ftsRowids(db: Database, table: 'messages_fts' | 'summaries_fts', wanted: Set<string>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  if (wanted.size === 0) return out;
  const hasContent =
    db.prepare(`SELECT 1 FROM sqlite_master WHERE type='table' AND name=?`).get(`${table}_content`) !== undefined;
  const sql = hasContent
    ? `SELECT id AS rowid, c0 AS k FROM ${table}_content`
    : `SELECT rowid, ${table === 'messages_fts' ? 'message_id' : 'summary_id'} AS k FROM ${table}`;
  for (const r of db.prepare(sql).iterate() as Iterable<{ rowid: number; k: unknown }>) {
    const k = String(r.k);
    if (wanted.has(k)) {
      const list = out.get(k);
      if (list) list.push(r.rowid);
      else out.set(k, [r.rowid]);
    }
  }
  return out;
}

export class SeahorseDeleter {
  private readonly db: Database;
  private readonly opts: Required<Omit<DeleterOptions, 'onTxn'>> & Pick<DeleterOptions, 'onTxn'>;
  private chunk: number;
  private readonly lock: WriteLock;
  readonly stats: DeleteStats = {
    messages: 0,
    summaries: 0,
    parts: 0,
    transactions: 0,
    longestTxnMs: 0,
    totalTxnMs: 0,
  };

  constructor(db: Database, opts: DeleterOptions = {}) {
    this.db = db;
    this.opts = {
      chunk: opts.chunk ?? 2000,
      targetTxnMs: opts.targetTxnMs ?? 100,
      quietMs: opts.quietMs ?? 0,
      maxQuietWaitMs: opts.maxQuietWaitMs ?? 60_000,
      onTxn: opts.onTxn,
    };
    this.chunk = this.opts.chunk;
    this.lock = new WriteLock(db, { quietMs: this.opts.quietMs, maxWaitMs: this.opts.maxQuietWaitMs });
  }

  /**
   * Read, once, where the FTS rows of every conversation to delete are. Read-only;
   * each write transaction re-checks every rowid it uses before deleting by it.
   */
  prepare(conversationIds: number[]): void {
    if (conversationIds.length === 0) return;
    const db = this.db;
    // Everything is kept in temp tables, not in JS: a 200k-message database stays within the memory budget.
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS ${VICTIM_CONVS} (id INTEGER PRIMARY KEY)`);
    db.exec(`DELETE FROM temp.${VICTIM_CONVS}`);
    const ins = this.stmt(`INSERT OR IGNORE INTO temp.${VICTIM_CONVS} (id) VALUES (?)`);
    db.transaction(() => {
      for (const id of conversationIds) ins.run(id);
    })();
    for (const t of ['messages_fts', 'summaries_fts'] as const) {
      const idCol = t === 'messages_fts' ? 'message_id' : 'summary_id';
      const source = t === 'messages_fts' ? 'messages' : 'summaries';
      db.exec(`CREATE TEMP TABLE IF NOT EXISTS guard_${t}_rowids (k, fts_rowid INTEGER)`);
      db.exec(`DELETE FROM temp.guard_${t}_rowids`);
      // One scan of the FTS content table for all victims (the IN list becomes an index).
      const from = this.hasContent(t)
        ? `SELECT c0, id FROM ${t}_content WHERE c0 IN`
        : `SELECT ${idCol}, rowid FROM ${t} WHERE ${idCol} IN`;
      db.exec(
        `INSERT INTO temp.guard_${t}_rowids (k, fts_rowid) ${from} (SELECT ${idCol}` +
          ` FROM ${source} WHERE conversation_id IN (SELECT id FROM temp.${VICTIM_CONVS}))`,
      );
      db.exec(`CREATE INDEX IF NOT EXISTS temp.guard_${t}_rowids_k ON guard_${t}_rowids (k)`);
    }
    // message_parts has no index on message_id (PicoClaw's schema): find the victims' parts once.
    db.exec(
      `CREATE TEMP TABLE IF NOT EXISTS ${VICTIM_PARTS} (part_id INTEGER PRIMARY KEY, message_id INTEGER NOT NULL)`,
    );
    db.exec(`DELETE FROM temp.${VICTIM_PARTS}`);
    db.exec(
      `INSERT INTO temp.${VICTIM_PARTS} SELECT part_id, message_id FROM message_parts ` +
        `WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id ` +
        `IN (SELECT id FROM temp.${VICTIM_CONVS}))`,
    );
    db.exec(`CREATE INDEX IF NOT EXISTS temp.${VICTIM_PARTS}_msg ON ${VICTIM_PARTS} (message_id)`);
    this.prepared = true;
  }

  private prepared = false;
  private contentTables = new Map<string, boolean>();
  /**
   * Each statement is prepared once per pass: a fresh one per use made about twenty per
   * conversation, each holding SQLite's compiled program in native memory until V8 happened to
   * collect its wrapper, churning the allocator next to the page cache.
   */
  private readonly statements = new Map<string, Statement>();

  private stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private hasContent(table: string): boolean {
    let v = this.contentTables.get(table);
    if (v === undefined) {
      v = this.stmt(`SELECT 1 FROM sqlite_master WHERE type='table' AND name=?`).get(`${table}_content`) !== undefined;
      this.contentTables.set(table, v);
    }
    return v;
  }

  private captureTriggers(): TriggerSql[] {
    return this.stmt(
      `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ` +
        `('messages_ad', 'summaries_ad') ORDER BY name`,
    ).all() as TriggerSql[];
  }

  /** FTS rowids for ids, from prepare()'s map, each re-checked; a scan for any that moved or were not mapped. */
  private rowidsFor(table: 'messages_fts' | 'summaries_fts', ids: string[]): number[] {
    if (ids.length === 0) return [];
    const check = this.hasContent(table)
      ? this.stmt(`SELECT c0 AS k FROM ${table}_content WHERE id = ?`)
      : this.stmt(
          `SELECT ${table === 'messages_fts' ? 'message_id' : 'summary_id'} AS k FROM ${table} WHERE rowid = ?`,
        );
    const mapped = this.prepared
      ? this.stmt(`SELECT fts_rowid AS r FROM temp.guard_${table}_rowids WHERE k = ?`)
      : null;
    const out: number[] = [];
    const missing = new Set<string>();
    for (const id of ids) {
      const key = table === 'messages_fts' ? Number(id) : id;
      const cached = mapped ? (mapped.all(key) as { r: number }[]) : [];
      if (cached.length === 0) missing.add(id);
      for (const { r } of cached) {
        const row = check.get(r) as { k: unknown } | undefined;
        if (row && String(row.k) === id) out.push(r);
        else missing.add(id);
      }
    }
    if (missing.size > 0) {
      // Not mapped, or moved since prepare() (an UPDATE re-inserts the row): one scan for those ids only.
      for (const [, rowids] of ftsRowids(this.db, table, missing)) out.push(...rowids);
    }
    return [...new Set(out)];
  }

  /**
   * Run fn in one BEGIN IMMEDIATE transaction with the two delete triggers out of
   * the way; fn returning false rolls the transaction back.
   */
  private txn(fn: () => boolean | void): number {
    const db = this.db;
    this.lock.begin();
    const t0 = performance.now();
    try {
      const triggers = this.captureTriggers();
      for (const t of triggers) db.exec(`DROP TRIGGER ${t.name}`);
      if (fn() === false) {
        db.exec('ROLLBACK');
      } else {
        for (const t of triggers) db.exec(t.sql);
        db.exec('COMMIT');
      }
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    const ms = performance.now() - t0;
    this.stats.transactions++;
    this.stats.totalTxnMs += ms;
    if (ms > this.stats.longestTxnMs) this.stats.longestTxnMs = ms;
    this.opts.onTxn?.(ms);
    return ms;
  }

  private deleteByRowids(table: 'messages_fts' | 'summaries_fts', rowids: number[]): void {
    const del = this.stmt(`DELETE FROM ${table} WHERE rowid = ?`);
    for (const r of rowids) del.run(r);
  }

  /**
   * Delete every row of one conversation (docs/picoclaw.md#delete-order), the conversations
   * row last. `guard` runs inside every transaction, before it deletes anything, with
   * the number of this conversation's messages that earlier transactions deleted; if it
   * returns false that transaction is rolled back and the deletion stops there. So a
   * message written between two transactions (a large conversation takes several) is
   * never deleted: the caller learns how far it got and reports a partial delete.
   */
  deleteConversation(conversationId: number, guard?: (deletedSoFar: number) => boolean): ConversationDelete {
    const count = (
      this.stmt(`SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?`).get(conversationId) as { n: number }
    ).n;
    const out: ConversationDelete = { complete: false, touched: false, deletedMessages: 0 };
    let aborted = false;
    const checked = (work: () => void) => () => {
      if (guard && !guard(out.deletedMessages)) {
        aborted = true;
        return false;
      }
      work();
    };
    if (count <= this.chunk) {
      // Small enough for one short transaction: everything at once (fewer commits, fewer chances
      // to stand in a live gateway's way).
      let n = 0;
      this.txn(
        checked(() => {
          this.deleteSummaries(conversationId);
          for (let k; (k = this.deleteMessageChunk(conversationId, this.chunk)) > 0;) n += k;
          this.deleteConversationRow(conversationId);
        }),
      );
      if (aborted) return out;
      return { complete: true, touched: true, deletedMessages: n };
    }
    // 1. Summaries and everything hanging off them, plus context items (small).
    this.txn(checked(() => this.deleteSummaries(conversationId)));
    if (aborted) return out;
    out.touched = true;
    // 2. Messages in chunks, each with its parts, summary links and FTS rows, each re-checked.
    for (;;) {
      let n = 0;
      const ms = this.txn(
        checked(() => {
          n = this.deleteMessageChunk(conversationId, this.chunk);
        }),
      );
      if (aborted) return out;
      if (n === 0) break;
      out.deletedMessages += n;
      // Keep each transaction near the target: halve on a slow one, grow on a fast one.
      if (ms > this.opts.targetTxnMs && this.chunk > 50) this.chunk = Math.max(50, Math.floor(this.chunk / 2));
      else if (ms < this.opts.targetTxnMs / 4 && this.chunk < 20_000) this.chunk *= 2;
    }
    // 3. The conversation row (PicoClaw's ClearConversation keeps it; a prune does not).
    this.txn(checked(() => this.deleteConversationRow(conversationId)));
    if (aborted) return out;
    out.complete = true;
    return out;
  }

  /** Delete order steps 1-4: context items, summary links and parents, summaries with their FTS rows. */
  private deleteSummaries(conversationId: number): void {
    const sumIds = (
      this.stmt(`SELECT summary_id AS id FROM summaries WHERE conversation_id = ?`).all(conversationId) as {
        id: string;
      }[]
    ).map((r) => String(r.id));
    this.stmt(`DELETE FROM context_items WHERE conversation_id = ?`).run(conversationId);
    this.stmt(
      `DELETE FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`,
    ).run(conversationId);
    this.stmt(
      `DELETE FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM ` +
        `summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id ` +
        `FROM summaries WHERE conversation_id = ?)`,
    ).run(conversationId, conversationId);
    this.deleteByRowids('summaries_fts', this.rowidsFor('summaries_fts', sumIds));
    this.stats.summaries += this.stmt(`DELETE FROM summaries WHERE conversation_id = ?`).run(conversationId).changes;
  }

  /** Delete order steps 5-6 for the oldest `limit` messages: parts, links, FTS rows, messages. Returns how many. */
  private deleteMessageChunk(conversationId: number, limit: number): number {
    const ids = (
      this.stmt(`SELECT message_id AS id FROM messages WHERE conversation_id = ? ORDER BY message_id LIMIT ?`).all(
        conversationId,
        limit,
      ) as { id: number }[]
    ).map((r) => r.id);
    if (ids.length === 0) return 0;
    const lo = ids[0]!;
    const hi = ids[ids.length - 1]!;
    // Parts by the ids prepare() found: message_parts has no index on message_id, so the plain
    // delete scans the whole table per chunk. Parts only ever come with a new message, which
    // the conversation's re-check (count, newest time) catches before anything is deleted.
    this.stats.parts += this.prepared
      ? this.stmt(
          `DELETE FROM message_parts WHERE part_id IN (SELECT part_id FROM temp.${VICTIM_PARTS} ` +
            `WHERE message_id BETWEEN ? AND ?) AND message_id IN (SELECT message_id ` +
            `FROM messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?)`,
        ).run(lo, hi, conversationId, lo, hi).changes
      : this.stmt(
          `DELETE FROM message_parts WHERE message_id IN (SELECT message_id FROM ` +
            `messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?)`,
        ).run(conversationId, lo, hi).changes;
    this.stmt(
      `DELETE FROM summary_messages WHERE message_id IN (SELECT message_id FROM ` +
        `messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?)`,
    ).run(conversationId, lo, hi);
    this.stmt(`DELETE FROM context_items WHERE conversation_id = ? AND message_id BETWEEN ? AND ?`).run(
      conversationId,
      lo,
      hi,
    );
    this.deleteByRowids('messages_fts', this.rowidsFor('messages_fts', ids.map(String)));
    const n = this.stmt(`DELETE FROM messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?`).run(
      conversationId,
      lo,
      hi,
    ).changes;
    this.stats.messages += n;
    return n;
  }

  /** Delete order step 7: the conversation row itself, last. */
  private deleteConversationRow(conversationId: number): void {
    this.stmt(`DELETE FROM context_items WHERE conversation_id = ?`).run(conversationId);
    this.stmt(`DELETE FROM conversations WHERE conversation_id = ?`).run(conversationId);
  }
}

/** PicoClaw's own way, for comparison in benchmarks: plain deletes that fire the per-row triggers. */
export function deleteConversationWithTriggers(db: Database, conversationId: number): void {
  db.transaction(() => {
    db.prepare(`DELETE FROM context_items WHERE conversation_id = ?`).run(conversationId);
    db.prepare(
      `DELETE FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`,
    ).run(conversationId);
    db.prepare(
      `DELETE FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM ` +
        `summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id ` +
        `FROM summaries WHERE conversation_id = ?)`,
    ).run(conversationId, conversationId);
    db.prepare(`DELETE FROM summaries WHERE conversation_id = ?`).run(conversationId);
    db.prepare(
      `DELETE FROM message_parts WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?)`,
    ).run(conversationId);
    db.prepare(`DELETE FROM messages WHERE conversation_id = ?`).run(conversationId);
    db.prepare(`DELETE FROM conversations WHERE conversation_id = ?`).run(conversationId);
  })();
}
