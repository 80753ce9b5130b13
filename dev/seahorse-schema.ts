/**
 * seahorse.db's schema as PicoClaw's pkg/seahorse/schema.go creates it
 * (docs/picoclaw.md#schema): used by the sample-home builder and by tests, so that
 * every test runs against the real tables, indexes, FTS5 trigram tables and triggers.
 *
 * `legacy` builds the older schema (commit 72afb3d): no `model_name` and
 * `reasoning_content` columns and a summaries delete trigger that uses FTS5's
 * 'delete' command on an ordinary table, which fails on every DELETE FROM summaries.
 */
export function seahorseSchemaSql(variant: 'current' | 'legacy' = 'current'): string {
  const tables = `
CREATE TABLE IF NOT EXISTS conversations (
  conversation_id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_key     TEXT NOT NULL UNIQUE,
  created_at      TEXT NOT NULL DEFAULT (datetime('now')),
  updated_at      TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS messages (
  message_id      INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id),
  role            TEXT NOT NULL,
  content         TEXT NOT NULL DEFAULT '',
  token_count     INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS message_parts (
  part_id      INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id   INTEGER NOT NULL REFERENCES messages(message_id),
  type         TEXT NOT NULL,
  text         TEXT,
  name         TEXT,
  arguments    TEXT,
  tool_call_id TEXT,
  media_uri    TEXT,
  mime_type    TEXT,
  ordinal      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS summaries (
  summary_id                 TEXT PRIMARY KEY,
  conversation_id            INTEGER NOT NULL REFERENCES conversations(conversation_id),
  kind                       TEXT NOT NULL,
  depth                      INTEGER NOT NULL DEFAULT 0,
  content                    TEXT NOT NULL,
  token_count                INTEGER NOT NULL DEFAULT 0,
  earliest_at                TEXT,
  latest_at                  TEXT,
  descendant_count           INTEGER NOT NULL DEFAULT 0,
  descendant_token_count     INTEGER NOT NULL DEFAULT 0,
  source_message_token_count INTEGER NOT NULL DEFAULT 0,
  model                      TEXT,
  created_at                 TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS summary_parents (
  summary_id        TEXT NOT NULL,
  parent_summary_id TEXT NOT NULL,
  PRIMARY KEY (summary_id, parent_summary_id)
);
CREATE TABLE IF NOT EXISTS summary_messages (
  summary_id TEXT NOT NULL,
  message_id INTEGER NOT NULL,
  ordinal    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (summary_id, message_id)
);
CREATE TABLE IF NOT EXISTS context_items (
  conversation_id INTEGER NOT NULL,
  ordinal         INTEGER NOT NULL,
  item_type       TEXT NOT NULL,
  summary_id      TEXT,
  message_id      INTEGER,
  token_count     INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (conversation_id, ordinal)
);
CREATE VIRTUAL TABLE IF NOT EXISTS summaries_fts USING fts5(summary_id, content, tokenize="trigram");
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(message_id, content, tokenize="trigram");
CREATE INDEX IF NOT EXISTS idx_messages_conversation ON messages(conversation_id);
CREATE INDEX IF NOT EXISTS idx_messages_created ON messages(conversation_id, created_at);
CREATE INDEX IF NOT EXISTS idx_summaries_conversation ON summaries(conversation_id);
CREATE INDEX IF NOT EXISTS idx_summaries_kind_depth ON summaries(conversation_id, kind, depth);
CREATE INDEX IF NOT EXISTS idx_summary_parents_parent ON summary_parents(parent_summary_id);
CREATE INDEX IF NOT EXISTS idx_summary_messages_message ON summary_messages(message_id);
CREATE INDEX IF NOT EXISTS idx_context_items_conv ON context_items(conversation_id, ordinal);
`;
  const summariesDelete =
    variant === 'legacy'
      ? `INSERT INTO summaries_fts (summaries_fts, summary_id, content) VALUES ('delete', old.summary_id, old.content);`
      : `DELETE FROM summaries_fts WHERE summary_id = old.summary_id;`;
  const triggers = `
DROP TRIGGER IF EXISTS summaries_ai;
DROP TRIGGER IF EXISTS summaries_ad;
DROP TRIGGER IF EXISTS summaries_au;
DROP TRIGGER IF EXISTS messages_ai;
DROP TRIGGER IF EXISTS messages_ad;
DROP TRIGGER IF EXISTS messages_au;
CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
  INSERT INTO summaries_fts (summary_id, content) VALUES (new.summary_id, new.content);
END;
CREATE TRIGGER summaries_ad AFTER DELETE ON summaries BEGIN
  ${summariesDelete}
END;
CREATE TRIGGER summaries_au AFTER UPDATE ON summaries BEGIN
  ${summariesDelete}
  INSERT INTO summaries_fts (summary_id, content) VALUES (new.summary_id, new.content);
END;
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (message_id, content) VALUES (new.message_id, new.content);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
  DELETE FROM messages_fts WHERE message_id = old.message_id;
END;
CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN
  DELETE FROM messages_fts WHERE message_id = old.message_id;
  INSERT INTO messages_fts (message_id, content) VALUES (new.message_id, new.content);
END;
`;
  const columns =
    variant === 'legacy'
      ? ''
      : `ALTER TABLE messages ADD COLUMN reasoning_content TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN model_name TEXT NOT NULL DEFAULT '';
`;
  return tables + triggers + columns;
}
