import { closeSync, constants, existsSync, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { sqlite, sqliteUri, type Database } from '../io/sqlite.js';
import { IdNumbersBuilder, type IdNumbers } from '../io/id-numbers.js';
import { sqliteFilesProblem } from '../io/regular-file.js';

export { isMainAlias, opaqueKey } from './keys.js';

/**
 * seahorse.db, read from outside the gateway (docs/picoclaw.md#seahorsedb).
 * One database per gateway, under the default agent's sessions folder, shared by
 * all agents. Reading never writes: see seahorseReadMode for how a dry-run opens it.
 */

export const SEAHORSE_TABLES = [
  'conversations',
  'messages',
  'message_parts',
  'summaries',
  'summary_parents',
  'summary_messages',
  'context_items',
  'messages_fts',
  'summaries_fts',
] as const;

export interface ConversationStat {
  conversationId: number;
  key: string;
  messages: number;
  summaries: number;
  /** MAX(messages.created_at) as stored (`YYYY-MM-DD HH:MM:SS`, UTC), or null. */
  lastMessageAt: string | null;
  /** MAX(messages.message_id): a new message always gets a higher one (null: no message; absent: not read). */
  lastMessageId?: number | null;
  /** conversations.created_at (set once at insert; PicoClaw never updates the row). */
  createdAt: string | null;
}

export interface DbFileBytes {
  db: number;
  wal: number;
  total: number;
}

export function dbFileBytes(path: string): DbFileBytes {
  const size = (p: string) => {
    try {
      return statSync(p).size;
    } catch {
      return 0;
    }
  };
  const db = size(path);
  const wal = size(`${path}-wal`);
  return { db, wal, total: db + wal };
}

export type SeahorseOpen =
  | { state: 'absent' }
  | {
      state: 'error';
      reason: string;
      kind: 'not_a_database' | 'damaged' | 'schema' | 'unreadable' | 'locked' | 'no_fts5';
    }
  | { state: 'open'; db: Database; mode: 'immutable' | 'readonly' | 'readonly-shm' | 'readwrite' };

function classifyOpenError(err: unknown): {
  reason: string;
  kind: 'not_a_database' | 'damaged' | 'unreadable' | 'locked';
} {
  const code = errnoCode(err) ?? '';
  const msg = errorMessage(err);
  if (code === 'SQLITE_NOTADB' || /not a database/i.test(msg))
    return { kind: 'not_a_database', reason: 'file is not a SQLite database' };
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || /locked|busy/i.test(msg))
    return { kind: 'locked', reason: `database is locked (${msg})` };
  // A damaged page (or the disk failing under it): not a store that cannot delete for now, but data to leave be.
  if (code.startsWith('SQLITE_CORRUPT') || code.startsWith('SQLITE_IOERR') || /malformed/i.test(msg))
    return { kind: 'damaged', reason: `the database is damaged (${code || 'error'}: ${msg}); see PRAGMA quick_check` };
  return { kind: 'unreadable', reason: `${code || 'error'}: ${msg}` };
}

/** Check that the tables PicoClaw creates are there, and that this SQLite can use FTS5 trigram. */
export function checkSchema(db: Database): string | null {
  const names = new Set(
    (db.prepare(`SELECT name FROM sqlite_master WHERE type IN ('table')`).all() as { name: string }[]).map(
      (r) => r.name,
    ),
  );
  const missing = SEAHORSE_TABLES.filter((t) => !names.has(t));
  if (missing.length > 0) return `not a seahorse database: missing table(s) ${missing.join(', ')}`;
  return null;
}

/** Whether this build of SQLite has FTS5 with the trigram tokenizer (needed by the delete triggers). */
export function hasFts5Trigram(db: Database): boolean {
  try {
    db.prepare(`CREATE VIRTUAL TABLE IF NOT EXISTS temp._guard_trigram_check USING fts5(a, tokenize='trigram')`).run();
    db.prepare(`DROP TABLE IF EXISTS temp._guard_trigram_check`).run();
    return true;
  } catch {
    return false;
  }
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * How a read-only look at seahorse.db may open it. `immutable` tells SQLite the file
 * cannot change and skips locking: it creates no -wal/-shm beside a WAL database, but
 * it reads garbage if anything writes meanwhile, and it never reads a WAL. So it is
 * used only when the header says WAL mode and neither -wal nor -shm sits beside the
 * real file (a connected WAL client always has both, so nobody has the database
 * open). A symlink is resolved first: SQLite keeps the WAL beside the real file.
 * Everything else (rollback journal mode, a WAL in use) is opened normally read-only:
 * a reader then takes SQLite's shared lock and sees what an --apply pass would see.
 *
 * `gatewayDown` (the probe found no gateway: the pre-start window) allows two more ways that
 * write nothing beside the file, for the -wal and -shm a gateway leaves when it stops without
 * its last checkpoint:
 * - no -wal, or an empty one: everything is in the file, and nobody writes it: `immutable`;
 * - a -wal with frames and its -shm: `readonly-shm` (`readonly_shm=1`): SQLite reads the -shm
 *   read-only and, with no other connection, builds its WAL index in its own memory from the
 *   -wal (sqlite.org/wal.html, read-only databases). It reads every committed frame, truncates
 *   and writes nothing. (It still opens the -wal read-write, as it does for any WAL it may
 *   checkpoint, and as root it sets the owner of both to the database's owner: the pre-start
 *   unit runs as the gateway's user.)
 * A plain read-only open of a WAL database whose -wal exists rebuilds the -shm (a truncate
 * and writes) or creates it: `writesBeside` says so, for a caller that must write nothing.
 */
export function seahorseReadMode(
  path: string,
  o: { gatewayDown?: boolean } = {},
): { realPath: string; mode: 'immutable' | 'readonly' | 'readonly-shm'; writesBeside: boolean } {
  let realPath = path;
  try {
    realPath = realpathSync(path);
  } catch {
    return { realPath, mode: 'readonly', writesBeside: false };
  }
  const head = Buffer.alloc(20);
  let fd: number | undefined;
  try {
    fd = openSync(realPath, constants.O_RDONLY | constants.O_NONBLOCK);
    if (!fstatSync(fd).isFile()) return { realPath, mode: 'readonly', writesBeside: false };
    if (readSync(fd, head, 0, head.length, 0) < head.length) return { realPath, mode: 'readonly', writesBeside: false };
  } catch {
    return { realPath, mode: 'readonly', writesBeside: false };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  // Bytes 18 and 19: the file format write and read versions, 2 in WAL mode (1: rollback journal).
  const wal = head.subarray(0, 16).equals(SQLITE_MAGIC) && head[18] === 2 && head[19] === 2;
  if (!wal) return { realPath, mode: 'readonly', writesBeside: false };
  const walBytes = sizeOf(`${realPath}-wal`);
  const shm = existsSync(`${realPath}-shm`);
  if (walBytes === null && !shm) return { realPath, mode: 'immutable', writesBeside: false };
  if (o.gatewayDown) {
    if (walBytes === null || walBytes === 0) return { realPath, mode: 'immutable', writesBeside: false };
    if (shm) return { realPath, mode: 'readonly-shm', writesBeside: false };
  }
  return { realPath, mode: 'readonly', writesBeside: true };
}

function sizeOf(p: string): number | null {
  try {
    return statSync(p).size;
  } catch {
    return null;
  }
}

/**
 * Open seahorse.db for reading, without writing anything (see seahorseReadMode for how). `quiet`: the
 * gateway is down and nothing may be written beside the file; where no open can promise that, an error
 * (`locked`) that says so, and the caller's full pass reads it.
 */
export function openSeahorseRead(path: string, opts: { busyTimeoutMs?: number; quiet?: boolean } = {}): SeahorseOpen {
  if (!existsSync(path)) return { state: 'absent' };
  const Database = sqlite();
  let db: Database;
  const { realPath, mode, writesBeside } = seahorseReadMode(path, { gatewayDown: opts.quiet });
  if (opts.quiet && writesBeside)
    return {
      state: 'error',
      kind: 'locked',
      reason: 'its -wal has no -shm beside it: it cannot be read without writing one',
    };
  // SQLite opens the file, its -wal, -shm and -journal with a blocking open(2): a FIFO there would
  // hang the command for ever. Checked non-blocking first, beside the real file.
  const notRegular = sqliteFilesProblem(realPath);
  if (notRegular) return { state: 'error', kind: 'not_a_database', reason: notRegular };
  try {
    const timeout = opts.busyTimeoutMs ?? 5000;
    db =
      mode === 'immutable'
        ? new Database(sqliteUri(realPath, { immutable: '1' }), { readonly: true, fileMustExist: true, timeout })
        : mode === 'readonly-shm'
          ? new Database(sqliteUri(realPath, { readonly_shm: '1' }), { readonly: true, fileMustExist: true, timeout })
          : new Database(realPath, { readonly: true, fileMustExist: true, timeout });
  } catch (err) {
    const c = classifyOpenError(err);
    return { state: 'error', ...c };
  }
  try {
    const bad = checkSchema(db);
    if (bad) {
      db.close();
      return { state: 'error', kind: 'schema', reason: bad };
    }
  } catch (err) {
    db.close();
    const c = classifyOpenError(err);
    return { state: 'error', ...c };
  }
  return { state: 'open', db, mode };
}

/** Open seahorse.db for pruning: read-write, with our own busy timeout. Throws GuardError. */
export function openSeahorseWrite(path: string, busyTimeoutMs = 5000): Database {
  const Database = sqlite();
  let db: Database;
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    // SQLite reports what is wrong with it
  }
  const notRegular = sqliteFilesProblem(real);
  if (notRegular)
    throw new GuardError(`${path}: ${notRegular}`, {
      exitCode: ExitCode.DATA,
      path,
      hint: 'nothing was deleted; put the real file back (or move this one aside) and run again',
    });
  try {
    db = new Database(path, { fileMustExist: true, timeout: busyTimeoutMs });
  } catch (err) {
    throw seahorseError(path, err);
  }
  try {
    const bad = checkSchema(db);
    if (bad)
      throw new GuardError(`${path}: ${bad}`, {
        exitCode: ExitCode.DATA,
        path,
        hint: 'this is not a PicoClaw seahorse database; move it aside or point --home elsewhere',
      });
    // better-sqlite3 defaults foreign_keys to ON (SQLite's own default, which PicoClaw uses, is OFF).
    // Children are deleted before parents anyway; OFF keeps old databases with dangling rows deletable.
    db.pragma('foreign_keys = OFF');
  } catch (err) {
    db.close();
    if (err instanceof GuardError) throw err;
    throw seahorseError(path, err);
  }
  return db;
}

export function seahorseError(path: string, err: unknown): GuardError {
  const c = classifyOpenError(err);
  if (c.kind === 'not_a_database') {
    return new GuardError(`${path} is not a SQLite database`, {
      exitCode: ExitCode.DATA,
      path,
      hint:
        'nothing was deleted; move the file aside (PicoClaw recreates seahorse.db ' +
        'from the JSONL history at its next start)',
    });
  }
  if (c.kind === 'locked') {
    return new GuardError(`${path}: ${c.reason}`, {
      exitCode: ExitCode.SKIPPED,
      path,
      hint:
        'another process holds a write lock longer than the busy timeout; nothing ' +
        'was deleted, the next pass will try again',
    });
  }
  return new GuardError(`cannot open ${path}: ${c.reason}`, {
    exitCode: ExitCode.SKIPPED,
    path,
    hint: 'check the file and its folder are readable and writable by this user',
  });
}

/**
 * SQLite's page cache while the whole file is walked once: better-sqlite3 builds SQLite with a
 * 16 MB default, which a walk in index order fills without ever hitting it again. On a
 * 20,000-session database 2 MB was as fast as 16 and 11 MiB less resident; 500 KB as fast
 * again (the inventory's walk and the size walk), 1.5 MiB less than 2 MB.
 */
const WALK_CACHE_KIB = 500;

/** Run one walk over the database with a small page cache, then give the connection its own back. */
export function withWalkCache<T>(db: Database, walk: () => T): T {
  const cache = db.pragma('cache_size', { simple: true }) as number;
  // Positive: pages; negative: KiB. A caller's smaller cache is left as it is.
  const kib = cache < 0 ? -cache : (cache * (db.pragma('page_size', { simple: true }) as number)) / 1024;
  if (kib <= WALK_CACHE_KIB) return walk();
  db.pragma(`cache_size = ${-WALK_CACHE_KIB}`);
  try {
    return walk();
  } finally {
    db.pragma(`cache_size = ${cache}`);
  }
}

/** One row per conversation: its key, message and summary counts, and its newest message time. */
export function readConversations(db: Database): ConversationStat[] {
  const out: ConversationStat[] = [];
  eachConversation(db, (c) => out.push(c));
  return out;
}

/**
 * readConversations one row at a time, in conversation_id order: a caller that keeps only some
 * rows (or parts of them) never holds them all at once.
 */
export function eachConversation(db: Database, fn: (c: ConversationStat) => void): void {
  withWalkCache(db, () => {
    for (const row of db
      .prepare(
        `SELECT c.conversation_id AS conversationId, c.session_key AS key, c.created_at AS createdAt,
              (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS messages,
              (SELECT MAX(m.created_at) FROM messages m WHERE m.conversation_id = c.conversation_id) AS lastMessageAt,
              (SELECT MAX(m.message_id) FROM messages m WHERE m.conversation_id = c.conversation_id) AS lastMessageId,
              (SELECT COUNT(*) FROM summaries s WHERE s.conversation_id = c.conversation_id) AS summaries
         FROM conversations c ORDER BY c.conversation_id`,
      )
      .iterate() as IterableIterator<ConversationStat>)
      fn(row);
  });
}

export interface DbPages {
  pageSize: number;
  pageCount: number;
  freelistCount: number;
}

/** The page counts behind every size estimate (plan shares, the size guard, whether VACUUM is worth it). */
export function readPages(db: Database): DbPages {
  return {
    pageSize: db.pragma('page_size', { simple: true }) as number,
    pageCount: db.pragma('page_count', { simple: true }) as number,
    freelistCount: db.pragma('freelist_count', { simple: true }) as number,
  };
}

/**
 * Content bytes per conversation (messages, their parts, summaries): the basis of
 * each session's estimated share of the file for the size guard. Scans the tables
 * once; only called when the size check is needed.
 *
 * Messages and summaries are summed by SQL through their conversation indexes, in id order,
 * straight into the sorted table. message_parts has no index on message_id: its rows are walked
 * once, each joined to its message by rowid, and added to its conversation's entry here. A
 * `GROUP BY` over that join would make SQLite sort every part, text included, in a temporary file
 * (on a board, the SD card) as large as the parts themselves; and a table indexed by message id
 * grows with the highest id, which only rises (ids are never reused, so a pruned database's ids
 * drift sparse). This holds the conversations' table only.
 */
export function readContentBytes(db: Database): IdNumbers {
  const table = new IdNumbersBuilder();
  for (const [id, b] of db
    .prepare(
      `SELECT id, SUM(b) FROM (
         SELECT conversation_id AS id, SUM(octet_length(content)) + COUNT(*) * 64 AS b FROM messages GROUP BY conversation_id
         UNION ALL
         SELECT conversation_id, SUM(octet_length(content) + 96) FROM summaries GROUP BY conversation_id
       ) GROUP BY id ORDER BY id`,
    )
    .raw()
    .iterate() as Iterable<[unknown, number | null]>)
    table.push(id, b ?? 0);
  let lastConversation: unknown = undefined;
  let lastAt = -1;
  for (const [c, b] of db
    .prepare(
      `SELECT m.conversation_id, COALESCE(octet_length(p.text), 0) + COALESCE(octet_length(p.arguments), 0) + 48
         FROM message_parts p JOIN messages m ON m.message_id = p.message_id`,
    )
    .raw()
    .iterate() as Iterable<[unknown, number]>) {
    // Parts come mostly in their messages' order: one lookup per run of a conversation, not per part.
    if (c !== lastConversation) {
      lastConversation = c;
      lastAt = table.indexOf(c);
    }
    // A conversation id that is not a number (SQLite lets a text into an INTEGER column): no lookup finds it.
    if (lastAt >= 0) table.addAt(lastAt, b);
  }
  return table.done();
}
