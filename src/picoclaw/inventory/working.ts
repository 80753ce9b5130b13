import { join } from 'node:path';
import { rootSortKey } from '../../io/collate.js';
import { openWorkingDb, type WorkingDb } from '../../io/working-db.js';
import type { Database } from '../../io/sqlite.js';
import type { PicoClawHome } from '../home.js';
import { dbFileBytes, eachConversation, openSeahorseRead, type ConversationStat } from '../seahorse.js';
import { parseSqliteTime, usable } from '../time.js';
import type { OrphanConversation, SeahorseSummary, SessionTimes } from './inventory.js';
import { groupKeys } from './key-claims.js';
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
 * what seahorse.db holds for it, as rows, not objects. A session is tied to the seahorse
 * conversations its key or aliases name by one join; the reports read it back in pages, in the
 * order they print. What this holds in memory is a page, whatever the home's size. It reads the
 * home; it never writes there.
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
  name16: Buffer;
  o_null: number;
  o_neg: number;
  sk_key: Buffer;
  sk_id: Buffer;
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

/** Rows a page of the session order holds. */
const PAGE = 256;

const SCHEMA = `
  CREATE TABLE session(
    id INTEGER PRIMARY KEY, folder INTEGER NOT NULL, agent INTEGER NOT NULL, base TEXT NOT NULL,
    name16 BLOB NOT NULL, key_j TEXT, aliases TEXT, jsonl_bytes INTEGER, meta_bytes INTEGER,
    messages INTEGER, times_j TEXT NOT NULL, last_ms REAL,
    issues TEXT, o_null INTEGER NOT NULL, o_neg REAL NOT NULL, sk_key BLOB NOT NULL,
    sk_id BLOB NOT NULL, o_js INTEGER NOT NULL);
  CREATE INDEX session_order ON session(o_null, o_neg, sk_key, sk_id, id);
  CREATE INDEX session_name ON session(folder, name16);
  CREATE INDEX session_agent_key ON session(agent, key_j);
  CREATE TABLE claim(key TEXT NOT NULL, session INTEGER NOT NULL);
  CREATE INDEX claim_key ON claim(key);
  CREATE TABLE conv(id INTEGER PRIMARY KEY, conversation_id, key, messages, summaries,
    last_message_at, created_at, last_ms REAL, orphan_ms REAL);
  CREATE TABLE tie(session INTEGER NOT NULL, conv INTEGER NOT NULL, PRIMARY KEY(session, conv)) WITHOUT ROWID;
  CREATE TABLE jsonl_seen(folder INTEGER NOT NULL, base TEXT NOT NULL, name16 BLOB NOT NULL);
  CREATE INDEX jsonl_seen_name ON jsonl_seen(folder, name16);
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

export interface Keyed {
  key: string | null;
  agent: string;
  lastActivityMs: number | null;
  jsonlBytes: number;
  metaBytes: number;
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
  /** Every session's key and size figures, in no order (what cronJobsOf reads). */
  keyed(): Iterable<Keyed>;
  /** Whether this agent has a session with this key. */
  has(agent: string, key: string): boolean;
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
  compareKeys: (a: WorkingSession, b: WorkingSession) => number;
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
  const agentIds = home.agents.map((a) => a.id);
  const ignored: WorkingInventory['ignored'] = [];
  const storeErrors: WorkingInventory['storeErrors'] = [];
  const insSession = db.prepare(
    `INSERT INTO session(folder, agent, base, name16, key_j, aliases, jsonl_bytes, meta_bytes, messages,
       times_j, last_ms, issues, o_null, o_neg, sk_key, sk_id, o_js)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  /** Agent ids by their number in the rows. */
  const agentNames: string[] = [];
  const agentNumber = new Map<string, number>();
  const agentOfRow = (a: string): number => {
    let n = agentNumber.get(a);
    if (n === undefined) {
      agentNumber.set(a, (n = agentNames.length));
      agentNames.push(a);
    }
    return n;
  };
  for (const a of agentIds) agentOfRow(a);
  const insClaim = db.prepare('INSERT INTO claim(key, session) VALUES (?, ?)');
  const insSeen = db.prepare('INSERT INTO jsonl_seen(folder, base, name16) VALUES (?, ?, ?)');
  const folderAgents: string[][] = [];
  db.exec('BEGIN');
  home.sessionsDirs.forEach(({ dir, agents }, folder) => {
    folderAgents.push(agents);
    const here: IgnoredEntry[] = [];
    const r = streamStore(dir, {
      session(s) {
        const t = storeTimes(s);
        const last = newest(t.updatedAt, t.createdAt, t.lastLine);
        const key = s.key;
        const id = `${dir}/${s.base}`;
        const skKey = rootSortKey(key ?? '');
        const skId = rootSortKey(id);
        const aliases = s.parsedMeta?.aliases ?? [];
        const row = insSession.run(
          folder,
          agentOfRow(agentOf(s, agents)),
          s.base,
          utf16(s.base + META_SUFFIX),
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
          skId ?? EMPTY,
          skKey === null || skId === null ? 1 : 0,
        );
        // A key with a lone surrogate names no conversation (SQLite's text never holds one), and
        // SQLite's UTF-8 would make it another key.
        for (const k of groupKeys(key, aliases, agentIds))
          if (!LONE_SURROGATE.test(k)) insClaim.run(k, row.lastInsertRowid);
      },
      jsonl(base) {
        insSeen.run(folder, base, utf16(base + '.jsonl'));
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
  db.exec('COMMIT');

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
  return reader(work, home, seahorse, ignored, storeErrors, folderAgents, agentNames, opts.compareKeys);
}

/** Every seahorse conversation as a row, then tied to the sessions that name it, by one join. */
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
  // A key that is not text (not PicoClaw's) is no session's: SQLite would compare a number to a
  // claim's text as text.
  db.exec(`
    INSERT OR IGNORE INTO tie(session, conv)
      SELECT cl.session, c.id FROM conv c JOIN claim cl ON cl.key = c.key WHERE typeof(c.key) = 'text';
    UPDATE session SET
      last_ms = (SELECT MAX(x) FROM (SELECT session.last_ms AS x UNION ALL
                   SELECT c.last_ms FROM tie t JOIN conv c ON c.id = t.conv WHERE t.session = session.id)),
      o_null = 0
      WHERE id IN (SELECT session FROM tie t JOIN conv c ON c.id = t.conv WHERE c.last_ms IS NOT NULL);
    UPDATE session SET o_neg = -last_ms WHERE o_null = 0 AND o_neg <> -last_ms;
  `);
  db.exec('COMMIT');
}

function reader(
  work: WorkingDb,
  home: PicoClawHome,
  seahorse: SeahorseSummary,
  ignored: WorkingInventory['ignored'],
  storeErrors: WorkingInventory['storeErrors'],
  folderAgents: string[][],
  agentNames: string[],
  compareKeys: (a: WorkingSession, b: WorkingSession) => number,
): WorkingInventory {
  const db = work.db;
  const convsOf = db.prepare(
    `SELECT c.conversation_id AS conversationId, c.key, c.messages, c.summaries,
            c.last_message_at AS lastMessageAt, c.created_at AS createdAt
       FROM tie t JOIN conv c ON c.id = t.conv WHERE t.session = ? ORDER BY c.id`,
  );
  const COLS = `id, folder, name16, o_null, o_neg, sk_key, sk_id, agent, base, key_j, aliases,
    jsonl_bytes, meta_bytes, messages, times_j, last_ms, issues`;
  const firstPage = db.prepare(`SELECT ${COLS} FROM session ORDER BY o_null, o_neg, sk_key, sk_id, id LIMIT ${PAGE}`);
  const nextPage = db.prepare(
    `SELECT ${COLS} FROM session WHERE (o_null, o_neg, sk_key, sk_id, id) > (?, ?, ?, ?, ?)
      ORDER BY o_null, o_neg, sk_key, sk_id, id LIMIT ${PAGE}`,
  );
  const dirs = home.sessionsDirs.map((d) => d.dir);
  const session = (r: SessionRow): WorkingSession => {
    const dir = dirs[r.folder]!;
    const [updated, created, lastLine] = JSON.parse(r.times_j) as (string | null)[];
    const conversations = convsOf.all(r.id) as ConversationStat[];
    let seahorseLast: string | null = null;
    for (const x of conversations)
      if (x.lastMessageAt && (seahorseLast === null || x.lastMessageAt > seahorseLast)) seahorseLast = x.lastMessageAt;
    return {
      agent: agentNames[r.agent]!,
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
  // The runs of one last activity that hold a key or id without a sort key: sorted here, run by run.
  const mixedRuns = new Set(
    (db.prepare('SELECT DISTINCT o_null, o_neg FROM session WHERE o_js = 1').raw().all() as [number, number][]).map(
      ([n, t]) => `${n}:${t}`,
    ),
  );
  function* pages(): Generator<SessionRow> {
    let page = firstPage.all() as SessionRow[];
    while (page.length > 0) {
      yield* page;
      if (page.length < PAGE) return;
      const l = page[page.length - 1]!;
      page = nextPage.all(l.o_null, l.o_neg, l.sk_key, l.sk_id, l.id) as SessionRow[];
    }
  }
  function* byActivity(): Generator<WorkingSession> {
    let run: WorkingSession[] = [];
    let runAt: string | null = null;
    const flush = function* () {
      run.sort(compareKeys);
      yield* run;
      run = [];
    };
    for (const r of pages()) {
      const at = `${r.o_null}:${r.o_neg}`;
      if (at !== runAt) {
        yield* flush();
        runAt = at;
      }
      if (mixedRuns.has(at)) run.push(session(r));
      else yield session(r);
    }
    yield* flush();
  }
  const scanOrder = db.prepare(
    `SELECT ${COLS} FROM session WHERE (folder, name16) > (?, ?) AND issues IS NOT NULL
      ORDER BY folder, name16 LIMIT ${PAGE}`,
  );
  function* withIssues(): Generator<WorkingSession> {
    let after: [number, Buffer] = [-1, EMPTY];
    for (;;) {
      const page = scanOrder.all(...after) as SessionRow[];
      for (const r of page) yield session(r);
      if (page.length < PAGE) return;
      const l = page[page.length - 1]!;
      after = [l.folder, l.name16];
    }
  }
  const totals = db
    .prepare(
      `SELECT COUNT(*) AS sessions, COALESCE(SUM(last_ms IS NULL), 0) AS undated,
              COALESCE(SUM(issues IS NOT NULL), 0) AS withIssues FROM session`,
    )
    .get() as WorkingInventory['counts'];
  const byAgent = new Map(
    (
      db
        .prepare(
          `SELECT agent, COUNT(*) AS sessions, SUM(jsonl_bytes) AS jsonl_bytes, SUM(meta_bytes) AS meta_bytes,
                  SUM(COALESCE(messages, 0)) AS messages FROM session GROUP BY agent`,
        )
        .all() as WorkingInventory['perAgent']
    ).map((a) => [
      agentNames[a.agent as unknown as number]!,
      { ...a, agent: agentNames[a.agent as unknown as number]! },
    ]),
  );
  const perAgent = home.agents.map(
    (a) => byAgent.get(a.id) ?? { agent: a.id, sessions: 0, jsonl_bytes: 0, meta_bytes: 0, messages: 0 },
  );
  const agentNumber = (a: string): number | undefined => {
    const i = agentNames.indexOf(a);
    return i < 0 ? undefined : i;
  };
  const hasKey = db.prepare('SELECT 1 FROM session WHERE agent = ? AND key_j = ? LIMIT 1').pluck();
  const namedRows = db.prepare('SELECT folder, name16 FROM session WHERE agent = ? AND key_j = ?');
  const named = (which: readonly { agent: string; key: string }[]) => {
    const out: { agent: string; key: string; folder: number; name16: Buffer }[] = [];
    const seen = new Set<string>();
    for (const w of which) {
      const n = agentNumber(w.agent);
      const id = `${w.agent}\0${w.key}`;
      if (n === undefined || seen.has(id)) continue;
      seen.add(id);
      for (const r of namedRows.all(n, JSON.stringify(w.key)) as { folder: number; name16: Buffer }[])
        out.push({ agent: w.agent, key: w.key, ...r });
    }
    out.sort((a, b) => a.folder - b.folder || Buffer.compare(a.name16, b.name16));
    return out.map(({ agent, key }) => ({ agent, key }));
  };
  const orphanSeen = db.prepare(
    `SELECT j.folder, j.base, j.name16 FROM jsonl_seen j
      WHERE (j.folder, j.name16) > (?, ?)
        AND NOT EXISTS (SELECT 1 FROM session s WHERE s.folder = j.folder AND s.base = j.base)
      ORDER BY j.folder, j.name16 LIMIT ${PAGE}`,
  );
  function* orphanJsonl(): Generator<{ agent: string; file: FileFacts }> {
    let after: [number, Buffer] = [-1, EMPTY];
    for (;;) {
      const page = orphanSeen.all(...after) as { folder: number; base: string; name16: Buffer }[];
      for (const o of page) {
        const file = orphanFacts(dirs[o.folder]!, o.base);
        if (file) yield { agent: folderAgents[o.folder]![0]!, file };
      }
      if (page.length < PAGE) return;
      const l = page[page.length - 1]!;
      after = [l.folder, l.name16];
    }
  }
  const orphanConvs = db.prepare(
    `SELECT c.id, c.conversation_id AS conversationId, c.key, c.messages, c.summaries,
            c.last_message_at AS lastMessageAt, c.created_at AS createdAt, c.orphan_ms AS lastActivityMs
       FROM conv c WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM tie t WHERE t.conv = c.id)
       ORDER BY c.id LIMIT ${PAGE}`,
  );
  function* orphanConversations(): Generator<OrphanConversation> {
    let after = 0;
    for (;;) {
      const page = orphanConvs.all(after) as (OrphanConversation & { id: number })[];
      for (const { id: _id, ...o } of page) yield o;
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }
  const keyedAll = db.prepare(`SELECT key_j, agent, last_ms, jsonl_bytes, meta_bytes FROM session`);
  function* keyed(): Generator<Keyed> {
    for (const r of keyedAll.iterate() as Iterable<
      Pick<SessionRow, 'key_j' | 'agent' | 'last_ms' | 'jsonl_bytes' | 'meta_bytes'>
    >)
      yield {
        key: r.key_j === null ? null : (JSON.parse(r.key_j) as string),
        agent: agentNames[r.agent]!,
        lastActivityMs: r.last_ms,
        jsonlBytes: r.jsonl_bytes,
        metaBytes: r.meta_bytes,
      };
  }
  return {
    home,
    seahorse,
    ignored,
    storeErrors,
    counts: totals,
    perAgent,
    byActivity,
    withIssues,
    keyed,
    named,
    has: (agent, key) => {
      const n = agentNumber(agent);
      return n !== undefined && hasKey.get(n, JSON.stringify(key)) !== undefined;
    },
    orphanJsonl,
    orphanConversations,
    path: work.path,
    close: () => work.close(),
  };
}
