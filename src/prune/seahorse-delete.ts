import type { Database } from '../io/sqlite.js';

/**
 * Deleting one conversation's rows from seahorse.db, in time linear in what is deleted.
 *
 * PicoClaw's delete triggers (`messages_ad`, `summaries_ad`) run
 * `DELETE FROM messages_fts WHERE message_id = old.message_id`: a filter on an FTS5
 * column is a full scan, so every deleted row scans the whole index (quadratic;
 * ops-facts.md §0 measured 5.9 s for 10% of 20k messages). Instead, inside each write
 * transaction: capture the two triggers' SQL from sqlite_master, drop them, delete the
 * FTS rows by rowid (found once per pass from the FTS content table), delete the rows
 * in picoclaw-facts.md §3.5 order (children first), and recreate the triggers from the
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
  /** Called after each transaction (progress, crash-test hooks). */
  onTxn?: (ms: number) => void;
}

interface TriggerSql {
  name: string;
  sql: string;
}

/** Map FTS rowids by the id column, reading the FTS5 content table once (no per-row scan). */
function ftsRowids(db: Database, table: 'messages_fts' | 'summaries_fts', wanted: Set<string>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  if (wanted.size === 0) return out;
  const hasContent = db.prepare(`SELECT 1 FROM sqlite_master WHERE type='table' AND name=?`).get(`${table}_content`) !== undefined;
  const sql = hasContent ? `SELECT id AS rowid, c0 AS k FROM ${table}_content` : `SELECT rowid, ${table === 'messages_fts' ? 'message_id' : 'summary_id'} AS k FROM ${table}`;
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
  readonly stats: DeleteStats = { messages: 0, summaries: 0, parts: 0, transactions: 0, longestTxnMs: 0, totalTxnMs: 0 };
  private msgRowids = new Map<string, number[]>();
  private sumRowids = new Map<string, number[]>();

  constructor(db: Database, opts: DeleterOptions = {}) {
    this.db = db;
    this.opts = { chunk: opts.chunk ?? 2000, targetTxnMs: opts.targetTxnMs ?? 100, onTxn: opts.onTxn };
    this.chunk = this.opts.chunk;
  }

  /**
   * Read, once, where the FTS rows of every conversation to delete are. Read-only;
   * each write transaction re-checks every rowid it uses before deleting by it.
   */
  prepare(conversationIds: number[]): void {
    if (conversationIds.length === 0) return;
    const db = this.db;
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS guard_victim_convs (id INTEGER PRIMARY KEY)`);
    db.exec(`DELETE FROM temp.guard_victim_convs`);
    const ins = db.prepare(`INSERT OR IGNORE INTO temp.guard_victim_convs (id) VALUES (?)`);
    db.transaction(() => {
      for (const id of conversationIds) ins.run(id);
    })();
    const msgIds = new Set<string>();
    for (const r of db.prepare(`SELECT message_id AS id FROM messages WHERE conversation_id IN (SELECT id FROM temp.guard_victim_convs)`).iterate() as Iterable<{ id: number }>) msgIds.add(String(r.id));
    const sumIds = new Set<string>();
    for (const r of db.prepare(`SELECT summary_id AS id FROM summaries WHERE conversation_id IN (SELECT id FROM temp.guard_victim_convs)`).iterate() as Iterable<{ id: string }>) sumIds.add(String(r.id));
    this.msgRowids = ftsRowids(db, 'messages_fts', msgIds);
    this.sumRowids = ftsRowids(db, 'summaries_fts', sumIds);
  }

  private captureTriggers(): TriggerSql[] {
    return this.db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('messages_ad', 'summaries_ad') ORDER BY name`).all() as TriggerSql[];
  }

  /** Resolve FTS rowids for ids, re-checking the cached ones; fall back to a scan for any that moved. */
  private rowidsFor(table: 'messages_fts' | 'summaries_fts', ids: string[]): number[] {
    const cache = table === 'messages_fts' ? this.msgRowids : this.sumRowids;
    const hasContent = this.db.prepare(`SELECT 1 FROM sqlite_master WHERE type='table' AND name=?`).get(`${table}_content`) !== undefined;
    const check = hasContent ? this.db.prepare(`SELECT c0 AS k FROM ${table}_content WHERE id = ?`) : this.db.prepare(`SELECT ${table === 'messages_fts' ? 'message_id' : 'summary_id'} AS k FROM ${table} WHERE rowid = ?`);
    const out: number[] = [];
    const missing = new Set<string>();
    for (const id of ids) {
      const cached = cache.get(id);
      if (!cached) {
        missing.add(id);
        continue;
      }
      for (const rowid of cached) {
        const row = check.get(rowid) as { k: unknown } | undefined;
        if (row && String(row.k) === id) out.push(rowid);
        else missing.add(id);
      }
    }
    if (missing.size > 0) {
      // A row moved since prepare() (an UPDATE re-inserts it): one scan for those ids only.
      for (const [, rowids] of ftsRowids(this.db, table, missing)) out.push(...rowids);
    }
    return [...new Set(out)];
  }

  /**
   * Run fn in one BEGIN IMMEDIATE transaction with the two delete triggers out of
   * the way; fn returning false rolls the transaction back.
   */
  private txn(fn: () => boolean | void): number {
    const t0 = performance.now();
    const db = this.db;
    db.exec('BEGIN IMMEDIATE');
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
    const del = this.db.prepare(`DELETE FROM ${table} WHERE rowid = ?`);
    for (const r of rowids) del.run(r);
  }

  /**
   * Delete every row of one conversation (picoclaw-facts.md §3.5), the conversations
   * row last. `guard` runs first inside the first transaction; if it returns false the
   * transaction is rolled back and nothing is deleted (the conversation changed).
   */
  deleteConversation(conversationId: number, guard?: () => boolean): boolean {
    const db = this.db;
    const C = conversationId;
    let aborted = false;
    // 1. Summaries and everything hanging off them, plus context items (small).
    this.txn(() => {
      if (guard && !guard()) {
        aborted = true;
        return false;
      }
      const sumIds = (db.prepare(`SELECT summary_id AS id FROM summaries WHERE conversation_id = ?`).all(C) as { id: string }[]).map((r) => String(r.id));
      db.prepare(`DELETE FROM context_items WHERE conversation_id = ?`).run(C);
      db.prepare(`DELETE FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).run(C);
      db.prepare(`DELETE FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).run(C, C);
      this.deleteByRowids('summaries_fts', this.rowidsFor('summaries_fts', sumIds));
      this.stats.summaries += db.prepare(`DELETE FROM summaries WHERE conversation_id = ?`).run(C).changes;
    });
    if (aborted) return false;
    // 2. Messages in chunks, each with its parts, summary links and FTS rows.
    const pick = db.prepare(`SELECT message_id AS id FROM messages WHERE conversation_id = ? ORDER BY message_id LIMIT ?`);
    for (;;) {
      let done = false;
      const ms = this.txn(() => {
        const ids = (pick.all(C, this.chunk) as { id: number }[]).map((r) => r.id);
        if (ids.length === 0) {
          done = true;
          return;
        }
        const lo = ids[0]!;
        const hi = ids[ids.length - 1]!;
        this.stats.parts += db.prepare(`DELETE FROM message_parts WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?)`).run(C, lo, hi).changes;
        db.prepare(`DELETE FROM summary_messages WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?)`).run(C, lo, hi);
        db.prepare(`DELETE FROM context_items WHERE conversation_id = ? AND message_id BETWEEN ? AND ?`).run(C, lo, hi);
        this.deleteByRowids('messages_fts', this.rowidsFor('messages_fts', ids.map(String)));
        this.stats.messages += db.prepare(`DELETE FROM messages WHERE conversation_id = ? AND message_id BETWEEN ? AND ?`).run(C, lo, hi).changes;
      });
      if (done) break;
      // Keep each transaction near the target: halve on a slow one, grow on a fast one.
      if (ms > this.opts.targetTxnMs && this.chunk > 50) this.chunk = Math.max(50, Math.floor(this.chunk / 2));
      else if (ms < this.opts.targetTxnMs / 4 && this.chunk < 20_000) this.chunk *= 2;
    }
    // 3. The conversation row (PicoClaw's ClearConversation keeps it; a prune does not).
    this.txn(() => {
      db.prepare(`DELETE FROM context_items WHERE conversation_id = ?`).run(C);
      db.prepare(`DELETE FROM conversations WHERE conversation_id = ?`).run(C);
    });
    return true;
  }
}

/** PicoClaw's own way, for comparison in benchmarks: plain deletes that fire the per-row triggers. */
export function deleteConversationWithTriggers(db: Database, conversationId: number): void {
  const C = conversationId;
  db.transaction(() => {
    db.prepare(`DELETE FROM context_items WHERE conversation_id = ?`).run(C);
    db.prepare(`DELETE FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).run(C);
    db.prepare(`DELETE FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).run(C, C);
    db.prepare(`DELETE FROM summaries WHERE conversation_id = ?`).run(C);
    db.prepare(`DELETE FROM message_parts WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?)`).run(C);
    db.prepare(`DELETE FROM messages WHERE conversation_id = ?`).run(C);
    db.prepare(`DELETE FROM conversations WHERE conversation_id = ?`).run(C);
  })();
}
