import { join } from 'node:path';
import { rootSortKey } from '../../io/collate.js';
import { openWorkingDb, type WorkingDb } from '../../io/working-db.js';
import type { Database } from '../../io/sqlite.js';
import type { PicoClawHome } from '../home.js';
import { dbFileBytes, eachConversation, openSeahorseRead, type ConversationStat } from '../seahorse.js';
import { parseSqliteTime, usable } from '../time.js';
import type { OrphanConversation, SeahorseSummary, SessionTimes } from './inventory.js';
import { isMainAlias } from '../keys.js';
import {
  META_SUFFIX,
  storeTimes,
  type FileFacts,
  type IgnoredEntry,
  type Issue,
  type StoredSession,
} from './sessions.js';
import { orphanFacts, streamStore } from './stream-scan.js';

/**
 * The inventory in a working database (src/io/working-db.ts): every session of every agent and
 * what seahorse.db holds for it, as rows, not objects. seahorse's conversations are copied first,
 * then each folder is streamed in, a row a session; once all are in, one pass of SQL ties each
 * session to the conversations its key or aliases name, dates it by them, and tells the orphans.
 * The reports read it back in pages, in the order they print. What this holds in memory is a
 * page, whatever the home's size. It reads the home; it never writes there.
 *
 * Why this file is long: the schema, the filling and the reads are one contract (each read's
 * order is an index the schema makes, each column one the filling writes); split, a change to
 * one would have to be made in three files that only make sense together.
 */

/** A session as a report reads it: one row and its conversations. */
export interface WorkingSession {
  agent: string;
  dir: string;
  base: string;
  key: string | null;
  aliases: string[];
  jsonlBytes: number;
  metaBytes: number;
  messages: number | null;
  lastActivityMs: number | null;
  times: SessionTimes;
  issues: Issue[];
  conversations: ConversationStat[];
  /** `<dir>/<base>`. */
  id: string;
  metaPath: string;
}

/**
 * A session's row. Strings that come from a meta's JSON (the key, the times) are kept as JSON text:
 * a JSON string may hold a lone surrogate, which SQLite's UTF-8 would turn into U+FFFD.
 */
interface SessionRow {
  id: number;
  folder: number;
  name16: Buffer | null;
  o_null: number;
  o_neg: number;
  sk_key: Buffer;
  agent: number;
  base: string;
  key_j: string | null;
  aliases: string | null;
  jsonl_bytes: number;
  meta_bytes: number;
  messages: number | null;
  /** [meta updated_at, meta created_at, the last line's created_at] */
  times_j: string;
  last_ms: number | null;
  issues: string | null;
}

/** The columns of a Keyed. */
const KEYED_COLS = `key_j, agent, last_ms, jsonl_bytes, meta_bytes, messages, n_conv, conv_messages,
  issues IS NOT NULL AS has_issues`;
type KeyedRow = Pick<SessionRow, 'key_j' | 'agent' | 'last_ms' | 'jsonl_bytes' | 'meta_bytes' | 'messages'> & {
  n_conv: number;
  conv_messages: number;
  has_issues: number;
};
/** The columns of the session order's index. */
type OrderCols = Pick<SessionRow, 'o_null' | 'o_neg' | 'sk_key'>;

/** Rows a page of the session order holds. */
const PAGE = 64;

const SCHEMA = `
  CREATE TABLE session(
    id INTEGER PRIMARY KEY, folder INTEGER NOT NULL, agent INTEGER NOT NULL, base TEXT NOT NULL,
    name16 BLOB, key_j TEXT, aliases TEXT, jsonl_bytes INTEGER, meta_bytes INTEGER,
    messages INTEGER, times_j TEXT NOT NULL, last_ms REAL, issues TEXT, n_conv INTEGER NOT NULL DEFAULT 0,
    conv_messages INTEGER NOT NULL DEFAULT 0, key_t,
    o_null INTEGER NOT NULL, o_neg REAL NOT NULL, sk_key BLOB NOT NULL, o_js INTEGER NOT NULL);
  -- A session's other keys that name seahorse conversations (key_t is its own).
  CREATE TABLE skey(session INTEGER NOT NULL, key NOT NULL);
  CREATE TABLE conv(id INTEGER PRIMARY KEY, conversation_id, key, messages, summaries,
    last_message_at, created_at, last_ms REAL, orphan_ms REAL);
  -- Covering: a session's look-up of its conversations reads the index alone.
  CREATE INDEX conv_key ON conv(key, id, last_ms, messages);
  CREATE TABLE tie(session INTEGER NOT NULL, conv INTEGER NOT NULL, PRIMARY KEY(session, conv)) WITHOUT ROWID;
  -- Every transcript first; those a session took go once the folders are read.
  CREATE TABLE orphan(folder INTEGER NOT NULL, base TEXT NOT NULL, name16 BLOB);
`;

/** The newer of a session's own last activity and its conversations' (x.l), either null. */
const NEWEST = '(CASE WHEN x.l IS NULL THEN last_ms WHEN last_ms IS NULL THEN x.l ELSE max(last_ms, x.l) END)';

/**
 * After the scan, in one go: each session tied to the conversations its keys name (key_t and
 * skey hold only text: SQLite compares no number or blob equal to them), its last activity and
 * conversation figures from them; then the indexes the reads use; the orphans are the
 * transcripts no session of their folder and base took.
 */
const SETTLE = `
  INSERT OR IGNORE INTO tie(session, conv)
    SELECT s.id, c.id FROM session s JOIN conv c ON c.key = s.key_t WHERE s.key_t IS NOT NULL
    UNION ALL SELECT a.session, c.id FROM skey a JOIN conv c ON c.key = a.key;
  CREATE INDEX tie_conv ON tie(conv);
  UPDATE session SET n_conv = x.n, conv_messages = x.m, last_ms = ${NEWEST}, o_null = ${NEWEST} IS NULL,
      o_neg = coalesce(-${NEWEST}, 0)
    FROM (SELECT t.session AS sid, count(*) AS n, sum(c.messages) AS m, max(c.last_ms) AS l
            FROM tie t JOIN conv c ON c.id = t.conv GROUP BY t.session) AS x
    WHERE session.id = x.sid;
  CREATE INDEX session_order ON session(o_null, o_neg, sk_key, id);
  CREATE INDEX session_issues ON session(folder, name16) WHERE issues IS NOT NULL;
  DELETE FROM orphan WHERE (folder, base) IN (SELECT folder, base FROM session);
  UPDATE orphan SET name16 = utf16be(base || '.jsonl');
  CREATE INDEX orphan_name ON orphan(folder, name16);
`;

/** A string's UTF-16 code units, big-endian: their byte order is JavaScript's string order. */
function utf16(s: string): Buffer {
  const b = Buffer.from(s, 'utf16le');
  return b.swap16();
}

const EMPTY = Buffer.alloc(0);
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function newest(...ms: (number | null)[]): number | null {
  let best: number | null = null;
  for (const m of ms) if (m !== null && (best === null || m > best)) best = m;
  return best;
}

function agentOf(s: StoredSession, agents: string[]): string {
  const scoped = s.parsedMeta?.agentIdInScope;
  if (scoped && agents.includes(scoped)) return scoped;
  return agents[0]!;
}

/** What a session's line in the text table and its cron run count read, in no order (one walk of the table). */
export interface Keyed {
  key: string | null;
  agent: string;
  lastActivityMs: number | null;
  jsonlBytes: number;
  metaBytes: number;
  messages: number | null;
  /** Its seahorse conversations, and their messages in all. */
  conversationCount: number;
  conversationMessages: number;
  hasIssues: boolean;
}

/** What the order of sessions with one last activity reads: the key, then `<dir>/<base>`. */
export interface Ordered {
  key: string | null;
  id: string;
}

export interface WorkingInventory {
  home: PicoClawHome;
  seahorse: SeahorseSummary;
  ignored: { dir: string; entry: IgnoredEntry }[];
  storeErrors: { dir: string; error: string }[];
  /** Sessions, undated ones, and ones with issues. */
  counts: { sessions: number; undated: number; withIssues: number };
  /** By agent, in the home's order of agents. */
  perAgent: { agent: string; sessions: number; jsonl_bytes: number; meta_bytes: number; messages: number }[];
  /** Newest first, undated last; ties by key, then id, in `collate`'s order (the `sessions` order). */
  byActivity(): Iterable<WorkingSession>;
  /** In the scan's order (folder by folder, by meta file name). */
  withIssues(): Iterable<WorkingSession>;
  /** Every session's figures, in no order: one walk of the table, none of its conversations' rows. */
  keyed(): Iterable<Keyed>;
  /** The figures of the sessions whose key starts with `prefix` (plain ASCII), in no order. */
  keyedStarting(prefix: string): Iterable<Keyed>;
  /** Every session's figures in the order of byActivity, none of its conversations' rows. */
  byActivityKeyed(): Iterable<Keyed & Ordered>;
  /** The sessions of these agents and keys (few), in the scan's order, one entry a session. */
  named(which: readonly { agent: string; key: string }[]): { agent: string; key: string }[];
  orphanJsonl(): Iterable<{ agent: string; file: FileFacts }>;
  orphanConversations(): Iterable<OrphanConversation>;
  /** The working file. */
  path: string;
  close(): void;
}

export interface WorkingOptions {
  /** The gateway is down and nothing may be written beside seahorse.db (seahorseReadMode's `gatewayDown`). */
  quietSeahorse?: boolean;
  /** The order of sessions with the same last activity (the report's). */
  compareKeys: (a: Ordered, b: Ordered) => number;
  /** Where the working file may go (src/io/working-db.ts chooses by default). */
  workDirs?: string[];
}

export function buildWorkingInventory(home: PicoClawHome, opts: WorkingOptions): WorkingInventory {
  const work: WorkingDb = openWorkingDb(opts.workDirs);
  try {
    return fill(work, home, opts);
  } catch (err) {
    work.close();
    throw err;
  }
}

function fill(work: WorkingDb, home: PicoClawHome, opts: WorkingOptions): WorkingInventory {
  const db = work.db;
  db.exec(SCHEMA);
  // seahorse.db first: each session is then tied to its conversations as it is stored, with its
  // last activity complete, and its row is written once.
  const seahorse: SeahorseSummary = {
    path: home.seahorsePath,
    state: 'absent',
    error: null,
    errorKind: null,
    bytes: dbFileBytes(home.seahorsePath),
    conversations: 0,
    messages: 0,
  };
  const opened = openSeahorseRead(home.seahorsePath, { quiet: opts.quietSeahorse });
  if (opened.state === 'error') {
    seahorse.state = 'error';
    seahorse.error = opened.reason;
    seahorse.errorKind = opened.kind;
  } else if (opened.state === 'open') {
    seahorse.state = 'open';
    try {
      copyConversations(opened.db, db, seahorse);
    } finally {
      opened.db.close();
    }
  }

  const agentIds = home.agents.map((a) => a.id);
  const ignored: WorkingInventory['ignored'] = [];
  const storeErrors: WorkingInventory['storeErrors'] = [];
  const insSession = db.prepare(
    `INSERT INTO session(folder, agent, base, name16, key_j, aliases, jsonl_bytes, meta_bytes, messages,
       times_j, last_ms, issues, o_null, o_neg, sk_key, o_js, key_t)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insKey = db.prepare('INSERT INTO skey(session, key) VALUES (?, ?)');
  const insOrphan = db.prepare('INSERT INTO orphan(folder, base) VALUES (?, ?)');
  /** Agents by their number in the rows, with their totals (the home's agents first, in its order). */
  const perAgent: WorkingInventory['perAgent'] = [];
  const agentNumber = new Map<string, number>();
  const agentOfRow = (a: string): number => {
    let n = agentNumber.get(a);
    if (n === undefined) {
      agentNumber.set(a, (n = perAgent.length));
      perAgent.push({ agent: a, sessions: 0, jsonl_bytes: 0, meta_bytes: 0, messages: 0 });
    }
    return n;
  };
  for (const a of agentIds) agentOfRow(a);
  let sessions = 0;
  let withIssues = 0;
  const withConversations = seahorse.conversations > 0;
  db.exec('BEGIN');
  home.sessionsDirs.forEach(({ dir, agents }, folder) => {
    const here: IgnoredEntry[] = [];
    const r = streamStore(dir, {
      session(s) {
        const t = storeTimes(s);
        const last = newest(t.updatedAt, t.createdAt, t.lastLine);
        const key = s.key;
        const aliases = s.parsedMeta?.aliases ?? [];
        const skKey = rootSortKey(key ?? '');
        const agent = agentOfRow(agentOf(s, agents));
        const totals = perAgent[agent]!;
        totals.sessions++;
        totals.jsonl_bytes += s.jsonl?.bytes ?? 0;
        totals.meta_bytes += s.meta?.bytes ?? 0;
        totals.messages += s.parsedMeta?.count ?? 0;
        sessions++;
        if (s.issues.length > 0) withIssues++;
        const row = insSession.run(
          folder,
          agent,
          s.base,
          s.issues.length > 0 ? utf16(s.base + META_SUFFIX) : null,
          key === null ? null : JSON.stringify(key),
          aliases.length > 0 ? JSON.stringify(aliases) : null,
          s.jsonl?.bytes ?? 0,
          s.meta?.bytes ?? 0,
          s.parsedMeta?.count ?? null,
          JSON.stringify([s.parsedMeta?.updatedAt ?? null, s.parsedMeta?.createdAt ?? null, s.lastLineCreatedAt]),
          last,
          s.issues.length > 0 ? JSON.stringify(s.issues) : null,
          last === null ? 1 : 0,
          last === null ? 0 : -last,
          skKey ?? EMPTY,
          skKey === null ? 1 : 0,
          // A key with a lone surrogate names no conversation (SQLite's text never holds one, and
          // its UTF-8 would make it another key); nor does the empty key, or a main alias.
          withConversations && key && !LONE_SURROGATE.test(key) ? key : null,
        );
        if (withConversations)
          for (const a of aliases)
            if (a !== key && !isMainAlias(a, agentIds) && !LONE_SURROGATE.test(a)) insKey.run(row.lastInsertRowid, a);
      },
      jsonl(base) {
        insOrphan.run(folder, base);
      },
      ignored(e) {
        here.push(e);
      },
    });
    if (r.error) storeErrors.push({ dir, error: r.error });
    // The folder's own order is no order: by name, as a sorted listing gives them.
    here.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of here) ignored.push({ dir, entry: e });
  });
  db.function('utf16be', { deterministic: true }, (t) => utf16(t as string));
  db.exec(SETTLE);
  db.exec('COMMIT');
  const undated = (db.prepare('SELECT count(*) FROM session WHERE last_ms IS NULL').pluck().get() as number) ?? 0;
  return reader(work, home, {
    seahorse,
    ignored,
    storeErrors,
    counts: { sessions, undated, withIssues },
    perAgent,
    agentNumber,
    compareKeys: opts.compareKeys,
  });
}

/** Every seahorse conversation as a row, in conversation_id order, found by its key. */
function copyConversations(source: Database, db: Database, seahorse: SeahorseSummary): void {
  const ins = db.prepare(
    `INSERT INTO conv(conversation_id, key, messages, summaries, last_message_at, created_at, last_ms, orphan_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  db.exec('BEGIN');
  eachConversation(source, (c) => {
    seahorse.conversations++;
    seahorse.messages += c.messages;
    const lastMs = usable(parseSqliteTime(c.lastMessageAt));
    // A bare row (no message, no summary) is what an interrupted delete leaves behind, or a turn
    // that never stored anything: its insert time is the only activity it has, if it is no session's.
    const bare = c.messages === 0 && c.summaries === 0;
    const orphanMs = lastMs ?? (bare ? usable(parseSqliteTime(c.createdAt)) : null);
    ins.run(c.conversationId, c.key, c.messages, c.summaries, c.lastMessageAt, c.createdAt, lastMs, orphanMs);
  });
  db.exec('COMMIT');
}

interface Made {
  seahorse: SeahorseSummary;
  ignored: WorkingInventory['ignored'];
  storeErrors: WorkingInventory['storeErrors'];
  counts: WorkingInventory['counts'];
  perAgent: WorkingInventory['perAgent'];
  agentNumber: Map<string, number>;
  compareKeys: (a: Ordered, b: Ordered) => number;
}

/** Pages of rows in an index's order: each page a query of its own, so other queries may run between. */
function* paged<R>(first: () => R[], next: (last: R) => R[]): Generator<R[]> {
  let page = first();
  while (page.length > 0) {
    yield page;
    if (page.length < PAGE) return;
    page = next(page[page.length - 1]!);
  }
}

function reader(work: WorkingDb, home: PicoClawHome, made: Made): WorkingInventory {
  const db = work.db;
  const { perAgent, agentNumber, compareKeys } = made;
  const dirs = home.sessionsDirs.map((d) => d.dir);
  // The conversations of a page's sessions, by one query (the ids of a short page padded with 0).
  const convsOf = db.prepare(
    `SELECT t.session, c.conversation_id AS conversationId, c.key, c.messages, c.summaries,
            c.last_message_at AS lastMessageAt, c.created_at AS createdAt
       FROM tie t JOIN conv c ON c.id = t.conv
      WHERE t.session IN (${Array.from({ length: PAGE }, () => '?').join(', ')}) ORDER BY t.session, c.id`,
  );
  const pageConversations = (rows: SessionRow[]): Map<number, ConversationStat[]> => {
    const ids = rows.map((r) => r.id);
    while (ids.length < PAGE) ids.push(0);
    const out = new Map<number, ConversationStat[]>();
    for (const { session: id, ...c } of convsOf.all(...ids) as (ConversationStat & { session: number })[]) {
      const list = out.get(id);
      if (list) list.push(c);
      else out.set(id, [c]);
    }
    return out;
  };
  const COLS = `id, folder, name16, o_null, o_neg, sk_key, o_js, agent, base, key_j, aliases,
    jsonl_bytes, meta_bytes, messages, times_j, last_ms, issues`;
  // Each session with its conversations, in the session order: one walk of the index, each
  // session's ties and conversations looked up by their keys (the ties come in conversation order).
  const joined = db.prepare(
    `SELECT ${COLS.replace(/(\w+)/g, 's.$1')}, t.conv AS t_conv, c.conversation_id AS conversationId,
            c.key AS c_key, c.messages AS c_messages, c.summaries, c.last_message_at AS lastMessageAt,
            c.created_at AS createdAt
       FROM session s LEFT JOIN tie t ON t.session = s.id LEFT JOIN conv c ON c.id = t.conv
      ORDER BY s.o_null, s.o_neg, s.sk_key, s.id, t.conv`,
  );
  const session = (r: SessionRow, conversations: ConversationStat[]): WorkingSession => {
    const dir = dirs[r.folder]!;
    const [updated, created, lastLine] = JSON.parse(r.times_j) as (string | null)[];
    let seahorseLast: string | null = null;
    for (const x of conversations)
      if (x.lastMessageAt && (seahorseLast === null || x.lastMessageAt > seahorseLast)) seahorseLast = x.lastMessageAt;
    return {
      agent: perAgent[r.agent]!.agent,
      dir,
      base: r.base,
      key: r.key_j === null ? null : (JSON.parse(r.key_j) as string),
      aliases: r.aliases === null ? [] : (JSON.parse(r.aliases) as string[]),
      jsonlBytes: r.jsonl_bytes,
      metaBytes: r.meta_bytes,
      messages: r.messages,
      lastActivityMs: r.last_ms,
      times: {
        meta_updated_at: updated!,
        meta_created_at: created!,
        jsonl_last_line: lastLine!,
        seahorse_last_message: seahorseLast,
      },
      issues: r.issues === null ? [] : (JSON.parse(r.issues) as Issue[]),
      conversations,
      id: `${dir}/${r.base}`,
      metaPath: join(dir, `${r.base}${META_SUFFIX}`),
    };
  };
  // The index orders a run of one last activity by the keys' sort keys, which are `collate`'s order;
  // what it cannot order is put in order here, run by run: sessions with the same key (by id), and
  // every run that holds a key or id without a sort key (by both).
  const mixedRuns = new Set(
    (db.prepare('SELECT DISTINCT o_null, o_neg FROM session WHERE o_js = 1').raw().all() as [number, number][]).map(
      ([n, t]) => `${n}:${t}`,
    ),
  );
  /**
   * Items in the index's order, each run the index cannot order put in order by compareKeys.
   * What it holds is one run (sessions of one last activity and key), whatever the home's size.
   */
  function* ordered<T extends Ordered>(items: Iterable<readonly [OrderCols, T]>): Generator<T> {
    let run: T[] = [];
    let runAt: string | null = null;
    for (const [r, item] of items) {
      const time = `${r.o_null}:${r.o_neg}`;
      const at = mixedRuns.has(time) ? time : `${time}:${r.sk_key.toString('latin1')}`;
      if (at !== runAt) {
        if (run.length > 1) run.sort(compareKeys);
        yield* run;
        run = [];
        runAt = at;
      }
      run.push(item);
    }
    if (run.length > 1) run.sort(compareKeys);
    yield* run;
  }
  type JoinedRow = SessionRow & {
    t_conv: number | null;
    conversationId: number;
    c_key: string;
    c_messages: number;
    summaries: number;
    lastMessageAt: string | null;
    createdAt: string | null;
  };
  /** No other query runs while it is read (one cursor on the connection). */
  function* sessionsJoined(): Generator<readonly [OrderCols, WorkingSession]> {
    let cur: SessionRow | null = null;
    let convs: ConversationStat[] = [];
    for (const r of joined.iterate() as Iterable<JoinedRow>) {
      if (cur === null || r.id !== cur.id) {
        if (cur !== null) yield [cur, session(cur, convs)];
        cur = r;
        convs = [];
      }
      if (r.t_conv !== null)
        convs.push({
          conversationId: r.conversationId,
          key: r.c_key,
          messages: r.c_messages,
          summaries: r.summaries,
          lastMessageAt: r.lastMessageAt,
          createdAt: r.createdAt,
        });
    }
    if (cur !== null) yield [cur, session(cur, convs)];
  }
  function byActivity(): Iterable<WorkingSession> {
    return ordered(sessionsJoined());
  }
  // No other query runs while it is read: one walk of the index.
  const keyedOrdered = db.prepare(
    `SELECT ${KEYED_COLS}, o_null, o_neg, sk_key, folder, base FROM session ORDER BY o_null, o_neg, sk_key, id`,
  );
  function* keyedInOrder(): Generator<readonly [OrderCols, Keyed & Ordered]> {
    type R = KeyedRow & OrderCols & { folder: number; base: string };
    for (const r of keyedOrdered.iterate() as Iterable<R>) {
      const k = keyedOf(r) as Keyed & Ordered;
      k.id = `${dirs[r.folder]!}/${r.base}`;
      yield [r, k];
    }
  }
  function byActivityKeyed(): Iterable<Keyed & Ordered> {
    return ordered(keyedInOrder());
  }
  const issuesPage = db.prepare(
    `SELECT ${COLS} FROM session WHERE issues IS NOT NULL AND (folder, name16) > (?, ?)
      ORDER BY folder, name16 LIMIT ${PAGE}`,
  );
  function* withIssues(): Generator<WorkingSession> {
    for (const page of paged(
      () => issuesPage.all(-1, EMPTY) as SessionRow[],
      (l) => issuesPage.all(l.folder, l.name16) as SessionRow[],
    )) {
      const convs = pageConversations(page);
      for (const r of page) yield session(r, convs.get(r.id) ?? []);
    }
  }
  const keyOf = db.prepare('SELECT folder, base, key_j FROM session WHERE agent = ?');
  /** The sessions of some agents and keys, in the scan's order: one walk of each agent's rows. */
  const named = (which: readonly { agent: string; key: string }[]) => {
    const out: { agent: string; key: string; folder: number; name16: Buffer }[] = [];
    const byAgent = new Map<string, Set<string>>();
    for (const w of which) {
      if (!agentNumber.has(w.agent)) continue;
      let keys = byAgent.get(w.agent);
      if (!keys) byAgent.set(w.agent, (keys = new Set()));
      keys.add(JSON.stringify(w.key));
    }
    for (const [agent, keys] of byAgent)
      for (const r of keyOf.iterate(agentNumber.get(agent)) as Iterable<{
        folder: number;
        base: string;
        key_j: string | null;
      }>)
        if (r.key_j !== null && keys.has(r.key_j))
          out.push({
            agent,
            key: JSON.parse(r.key_j) as string,
            folder: r.folder,
            name16: utf16(r.base + META_SUFFIX),
          });
    out.sort((a, b) => a.folder - b.folder || Buffer.compare(a.name16, b.name16));
    return out.map(({ agent, key }) => ({ agent, key }));
  };
  const orphanPage = db.prepare(
    `SELECT folder, base, name16 FROM orphan WHERE (folder, name16) > (?, ?) ORDER BY folder, name16 LIMIT ${PAGE}`,
  );
  function* orphanJsonl(): Generator<{ agent: string; file: FileFacts }> {
    type O = { folder: number; base: string; name16: Buffer };
    for (const page of paged(
      () => orphanPage.all(-1, EMPTY) as O[],
      (l) => orphanPage.all(l.folder, l.name16) as O[],
    ))
      for (const o of page) {
        const file = orphanFacts(dirs[o.folder]!, o.base);
        if (file) yield { agent: home.sessionsDirs[o.folder]!.agents[0]!, file };
      }
  }
  const orphanConvs = db.prepare(
    `SELECT c.id, c.conversation_id AS conversationId, c.key, c.messages, c.summaries,
            c.last_message_at AS lastMessageAt, c.created_at AS createdAt, c.orphan_ms AS lastActivityMs
       FROM conv c WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM tie t WHERE t.conv = c.id)
       ORDER BY c.id LIMIT ${PAGE}`,
  );
  function* orphanConversations(): Generator<OrphanConversation> {
    type OrphanRow = OrphanConversation & { id: number };
    for (const page of paged(
      () => orphanConvs.all(0) as OrphanRow[],
      (l) => orphanConvs.all(l.id) as OrphanRow[],
    ))
      for (const { id: _id, ...o } of page) yield o;
  }
  const keyedAll = db.prepare(`SELECT ${KEYED_COLS} FROM session`);
  // A JSON string starts with the quote and, for plain ASCII, the prefix as it is.
  const keyedPrefix = db.prepare(`SELECT ${KEYED_COLS} FROM session WHERE substr(key_j, 1, ?) = ?`);
  function keyedOf(r: KeyedRow): Keyed {
    return {
      key: r.key_j === null ? null : (JSON.parse(r.key_j) as string),
      agent: perAgent[r.agent]!.agent,
      lastActivityMs: r.last_ms,
      jsonlBytes: r.jsonl_bytes,
      metaBytes: r.meta_bytes,
      messages: r.messages,
      conversationCount: r.n_conv,
      conversationMessages: r.conv_messages,
      hasIssues: r.has_issues === 1,
    };
  }
  function* keyed(): Generator<Keyed> {
    for (const r of keyedAll.iterate() as Iterable<KeyedRow>) yield keyedOf(r);
  }
  function* keyedStarting(prefix: string): Generator<Keyed> {
    if (!/^[\x20-\x7e]*$/.test(prefix) || /["\\]/.test(prefix)) throw new Error(`not a plain ASCII prefix: ${prefix}`);
    for (const r of keyedPrefix.iterate(prefix.length + 1, `"${prefix}`) as Iterable<KeyedRow>) yield keyedOf(r);
  }
  return {
    home,
    seahorse: made.seahorse,
    ignored: made.ignored,
    storeErrors: made.storeErrors,
    counts: made.counts,
    perAgent: perAgent.slice(0, home.agents.length),
    byActivity,
    withIssues,
    keyed,
    keyedStarting,
    byActivityKeyed,
    named,
    orphanJsonl,
    orphanConversations,
    path: work.path,
    close: () => work.close(),
  };
}
