import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqlite, type Database } from '../../src/io/sqlite.js';
import { seahorseSchemaSql } from '../../dev/seahorse-schema.js';

/** A hand-made PicoClaw home: config, sessions and seahorse rows exactly as a test needs them. */
export interface HandSession {
  key: string;
  /** meta.updated_at / created_at (Go RFC3339) and the last line's created_at; null omits it. */
  updated?: string | null;
  created?: string | null;
  lastLine?: string | null;
  aliases?: string[];
  lines?: number;
  /** Seahorse message times (YYYY-MM-DD HH:MM:SS); omitted: no conversation. */
  seahorse?: string[];
  agentDir?: string;
}

export function sanitize(key: string): string {
  return key.replace(/[:/\\]/g, '_');
}

export function writeSession(dir: string, s: HandSession): void {
  mkdirSync(dir, { recursive: true });
  const base = sanitize(s.key);
  const n = s.lines ?? 2;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const o: Record<string, unknown> = { role: i % 2 ? 'assistant' : 'user', content: `message ${i} of ${s.key}` };
    const t = i === n - 1 ? (s.lastLine === undefined ? s.updated : s.lastLine) : s.created;
    if (t) o.created_at = t;
    lines.push(JSON.stringify(o));
  }
  writeFileSync(join(dir, `${base}.jsonl`), lines.join('\n') + '\n');
  const meta: Record<string, unknown> = { key: s.key, summary: '', skip: 0, count: n };
  meta.created_at = s.created === undefined ? s.updated : s.created;
  meta.updated_at = s.updated;
  if (meta.created_at === null || meta.created_at === undefined) meta.created_at = '0001-01-01T00:00:00Z';
  if (meta.updated_at === null || meta.updated_at === undefined) meta.updated_at = '0001-01-01T00:00:00Z';
  if (s.aliases) meta.aliases = s.aliases;
  writeFileSync(join(dir, `${base}.meta.json`), JSON.stringify(meta, null, 2));
}

export function createSeahorse(path: string, variant: 'current' | 'legacy' = 'current'): Database {
  mkdirSync(join(path, '..'), { recursive: true });
  const db = new (sqlite())(path);
  db.pragma('journal_mode = WAL');
  db.exec(seahorseSchemaSql(variant));
  return db;
}

/** Insert one conversation with messages (each with a part, FTS row by trigger), a summary and context items. */
export function addConversation(
  db: Database,
  key: string,
  times: string[],
  opts: { withModel?: boolean; contentBytes?: number } = {},
): number {
  const conv = Number(db.prepare(`INSERT INTO conversations (session_key) VALUES (?)`).run(key).lastInsertRowid);
  const withModel = opts.withModel ?? true;
  const pad = opts.contentBytes ? ' ' + 'x'.repeat(opts.contentBytes) : '';
  const ids: number[] = [];
  times.forEach((t, i) => {
    const sql = withModel
      ? `INSERT INTO messages (conversation_id, role, content, token_count, created_at,` +
        ` model_name) VALUES (?, 'user', ?, 3, ?, 'llama3')`
      : `INSERT INTO messages (conversation_id, role, content, token_count, created_at) VALUES (?, 'user', ?, 3, ?)`;
    const id = Number(db.prepare(sql).run(conv, `text ${i} of ${key} 你好${pad}`, t).lastInsertRowid);
    ids.push(id);
    db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', ?, 0)`).run(
      id,
      `text ${i}`,
    );
    db.prepare(
      `INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (?, ?, 'message', ?)`,
    ).run(conv, i * 100 + 100, id);
  });
  if (ids.length >= 2) {
    const sid = `sum_${key.replace(/\W/g, '')}_${conv}`;
    db.prepare(`INSERT INTO summaries (summary_id, conversation_id, kind, content) VALUES (?, ?, 'leaf', ?)`).run(
      sid,
      conv,
      `summary of ${key}`,
    );
    db.prepare(`INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, 0)`).run(sid, ids[0]);
    const cid = `${sid}_c`;
    db.prepare(
      `INSERT INTO summaries (summary_id, conversation_id, kind, depth, content) VALUES (?, ?, 'condensed', 1, ?)`,
    ).run(cid, conv, `condensed ${key}`);
    db.prepare(`INSERT INTO summary_parents (summary_id, parent_summary_id) VALUES (?, ?)`).run(cid, sid);
    db.prepare(
      `INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id) VALUES (?, 0, 'summary', ?)`,
    ).run(conv, cid);
  }
  return conv;
}

/** Build a home: <home>/workspace/sessions for main, plus the given sessions and seahorse rows. */
export function handHome(
  home: string,
  sessions: HandSession[],
  opts: { seahorse?: boolean; variant?: 'current' | 'legacy'; config?: Record<string, unknown> } = {},
): { sessionsDir: string; dbPath: string } {
  const sessionsDir = join(home, 'workspace', 'sessions');
  mkdirSync(sessionsDir, { recursive: true });
  writeFileSync(
    join(home, 'config.json'),
    JSON.stringify(opts.config ?? { agents: { defaults: { context_manager: 'seahorse' } } }),
  );
  const dbPath = join(sessionsDir, 'seahorse.db');
  const db = opts.seahorse === false ? null : createSeahorse(dbPath, opts.variant ?? 'current');
  for (const s of sessions) {
    writeSession(s.agentDir ?? sessionsDir, s);
    if (db && s.seahorse)
      addConversation(db, s.key, s.seahorse, { withModel: (opts.variant ?? 'current') === 'current' });
  }
  if (db) {
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  return { sessionsDir, dbPath };
}

/**
 * 24 sessions, one a day before `now` (`sk_v1_day00` the oldest), each with ~120 KB of text in
 * seahorse: a few MB of database with its FTS index, for the size guard's tests. `undated` adds
 * a session with no usable timestamp.
 */
export function dailyHome(home: string, now: Date, opts: { undated?: boolean } = {}): { home: string; dbPath: string } {
  const dayKey = (d: number) => `sk_v1_day${String(d).padStart(2, '0')}`;
  const at = (d: number) => new Date(now.getTime() - (24 - d) * 86_400_000).toISOString();
  const sessions: HandSession[] = [];
  for (let d = 0; d < 24; d++) sessions.push({ key: dayKey(d), updated: at(d) });
  if (opts.undated) sessions.push({ key: 'sk_v1_undated', updated: null, created: null, lastLine: null });
  const { dbPath } = handHome(home, sessions);
  const db = new (sqlite())(dbPath);
  db.transaction(() => {
    for (let d = 0; d < 24; d++)
      addConversation(db, dayKey(d), Array(6).fill(at(d).slice(0, 19).replace('T', ' ')), { contentBytes: 20_000 });
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { home, dbPath };
}

/** Every regular file under a folder, with its bytes: for byte-identical checks. */
export function snapshot(dir: string, skip: (path: string) => boolean = () => false): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (skip(p)) continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(p, readFileSync(p).toString('base64'));
      else if (e.isSymbolicLink()) out.set(p, 'symlink');
    }
  };
  walk(dir);
  return out;
}

/** Rows of every seahorse table, FTS included, keyed by table: for row-identical checks. */
export function dumpSeahorse(path: string): Record<string, unknown[]> {
  const db = new (sqlite())(path, { readonly: true });
  try {
    const out: Record<string, unknown[]> = {};
    for (const t of [
      'conversations',
      'messages',
      'message_parts',
      'summaries',
      'summary_parents',
      'summary_messages',
      'context_items',
    ]) {
      out[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all();
    }
    out.messages_fts = db
      .prepare(`SELECT message_id, content FROM messages_fts ORDER BY CAST(message_id AS INTEGER)`)
      .all();
    out.summaries_fts = db.prepare(`SELECT summary_id, content FROM summaries_fts ORDER BY summary_id`).all();
    return out;
  } finally {
    db.close();
  }
}

export function integrity(path: string): { ok: string; ftsMessagesMatch: boolean; ftsSummariesMatch: boolean } {
  const db = new (sqlite())(path, { readonly: true });
  try {
    const ok = db.pragma('integrity_check', { simple: true }) as string;
    const m1 = db.prepare(`SELECT COUNT(*) AS n FROM messages`).get() as { n: number };
    const f1 = db.prepare(`SELECT COUNT(*) AS n FROM messages_fts`).get() as { n: number };
    const j1 = db
      .prepare(
        `SELECT COUNT(*) AS n FROM messages m JOIN messages_fts f ON CAST(f.message_id ` +
          `AS INTEGER) = m.message_id AND f.content = m.content`,
      )
      .get() as { n: number };
    const m2 = db.prepare(`SELECT COUNT(*) AS n FROM summaries`).get() as { n: number };
    const f2 = db.prepare(`SELECT COUNT(*) AS n FROM summaries_fts`).get() as { n: number };
    const j2 = db
      .prepare(
        `SELECT COUNT(*) AS n FROM summaries s JOIN summaries_fts f ON f.summary_id ` +
          `= s.summary_id AND f.content = s.content`,
      )
      .get() as { n: number };
    return { ok, ftsMessagesMatch: m1.n === f1.n && f1.n === j1.n, ftsSummariesMatch: m2.n === f2.n && f2.n === j2.n };
  } finally {
    db.close();
  }
}

export function mtime(path: string): number {
  return statSync(path).mtimeMs;
}

/** Whether this machine lets us mount a tmpfs (root in a sandbox that allows it). */
export function canMount(): boolean {
  const d = join('/tmp', `pcg-mount-probe-${process.pid}`);
  try {
    mkdirSync(d, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', d], { stdio: 'ignore' });
    execFileSync('umount', [d], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}

/**
 * A home whose agents "ops" and "ops_agent" have workspaces of their own (ws-ops, ws-ops-agent): a
 * session `agent:cron-1` of ops (file base agent_cron-1) and a session `cron-1` of ops_agent both
 * spell ops_agent_cron-1 as agent_base. Returns their sessions folders and the config for handHome.
 */
export function collidingAgents(home: string): {
  opsDir: string;
  opsAgentDir: string;
  config: Record<string, unknown>;
} {
  const opsDir = join(home, 'ws-ops', 'sessions');
  const opsAgentDir = join(home, 'ws-ops-agent', 'sessions');
  mkdirSync(opsDir, { recursive: true });
  mkdirSync(opsAgentDir, { recursive: true });
  const config = {
    agents: {
      defaults: { context_manager: 'seahorse' },
      list: [
        { id: 'main', default: true },
        { id: 'ops', workspace: join(home, 'ws-ops') },
        { id: 'ops_agent', workspace: join(home, 'ws-ops-agent') },
      ],
    },
  };
  return { opsDir, opsAgentDir, config };
}

/** A home of `n` sessions, each with one seahorse conversation of one message at its own time (heap tests). */
export function oneConversationEach(
  home: string,
  n: number,
  session: (i: number) => { key: string; at: string },
): void {
  const { sessionsDir, dbPath } = handHome(home, []);
  const db = new (sqlite())(dbPath);
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const { key, at } = session(i);
      writeSession(sessionsDir, { key, updated: at });
      addConversation(db, key, [at.slice(0, 19).replace('T', ' ')]);
    }
  })();
  db.close();
}
