import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ExitCode, GuardError, errnoCode } from '../errors.js';
import { writeFileAtomic } from '../io/atomic.js';
import type { Database } from '../io/sqlite.js';
import type { SessionRecord } from '../picoclaw/inventory.js';

/**
 * A way back: before a session is deleted, its .jsonl and .meta.json (bytes exact,
 * base64) and its seahorse rows are written to a gzip file in the archive folder
 * (never a sessions folder), fsynced, then read back and checked by SHA-256. If any
 * of that fails the session is kept. Node 20 has no zstd, hence gzip.
 */
export const ARCHIVE_FORMAT = 'picoclaw-guard-session-archive';
export const ARCHIVE_SUFFIX = '.session.json.gz';

export interface ArchivedFile {
  name: string;
  sha256: string;
  data_base64: string;
}

export interface SessionArchive {
  format: typeof ARCHIVE_FORMAT;
  version: 1;
  archived_at: string;
  agent: string;
  sessions_dir: string;
  base: string;
  key: string;
  aliases: string[];
  files: { jsonl: ArchivedFile | null; meta: ArchivedFile };
  seahorse: Record<string, unknown[]> | null;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function fileEntry(path: string): ArchivedFile {
  const data = readFileSync(path);
  return { name: basename(path), sha256: sha256(data), data_base64: data.toString('base64') };
}

/** Every seahorse row of the given conversations, table by table (docs/picoclaw.md#which-rows-belong-to-a-session). */
export function seahorseRows(db: Database, conversationIds: number[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = { conversations: [], messages: [], message_parts: [], summaries: [], summary_parents: [], summary_messages: [], context_items: [] };
  for (const C of conversationIds) {
    out.conversations!.push(...db.prepare(`SELECT * FROM conversations WHERE conversation_id = ?`).all(C));
    out.messages!.push(...db.prepare(`SELECT * FROM messages WHERE conversation_id = ? ORDER BY message_id`).all(C));
    out.message_parts!.push(...db.prepare(`SELECT * FROM message_parts WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?) ORDER BY part_id`).all(C));
    out.summaries!.push(...db.prepare(`SELECT * FROM summaries WHERE conversation_id = ?`).all(C));
    out.summary_parents!.push(...db.prepare(`SELECT * FROM summary_parents WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?) OR parent_summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).all(C, C));
    out.summary_messages!.push(...db.prepare(`SELECT * FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`).all(C));
    out.context_items!.push(...db.prepare(`SELECT * FROM context_items WHERE conversation_id = ? ORDER BY ordinal`).all(C));
  }
  return out;
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Write, sync and verify one session's archive. Throws GuardError on any failure
 * (no space, no permission, a read-back mismatch); the caller keeps the session.
 */
export function archiveSession(dir: string, s: SessionRecord, db: Database | null, conversationIds: number[], nowMs: number): string {
  if (!s.files.meta || s.key === null) throw new GuardError(`cannot archive ${s.id}: its meta is unreadable`);
  const archive: SessionArchive = {
    format: ARCHIVE_FORMAT,
    version: 1,
    archived_at: new Date(nowMs).toISOString(),
    agent: s.agent,
    sessions_dir: s.dir,
    base: s.base,
    key: s.key,
    aliases: s.aliases,
    files: { jsonl: s.files.jsonl ? fileEntry(s.files.jsonl.path) : null, meta: fileEntry(s.files.meta.path) },
    seahorse: db && conversationIds.length > 0 ? seahorseRows(db, conversationIds) : null,
  };
  const gz = gzipSync(Buffer.from(JSON.stringify(archive)));
  const name = `${stamp(nowMs)}_${s.agent}_${s.base}${ARCHIVE_SUFFIX}`;
  const target = join(dir, name);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(target, gz, { mode: 0o600 });
    // Read back what the disk holds and check every file's bytes.
    const back = readArchive(target);
    if (back.files.meta.sha256 !== archive.files.meta.sha256 || sha256(Buffer.from(back.files.meta.data_base64, 'base64')) !== archive.files.meta.sha256) throw new Error('meta checksum mismatch on read-back');
    if (archive.files.jsonl && (back.files.jsonl === null || sha256(Buffer.from(back.files.jsonl.data_base64, 'base64')) !== archive.files.jsonl.sha256)) throw new Error('jsonl checksum mismatch on read-back');
    if (JSON.stringify(back.seahorse) !== JSON.stringify(archive.seahorse)) throw new Error('seahorse rows differ on read-back');
  } catch (err) {
    throw new GuardError(`archiving ${s.key} to ${dir} failed: ${errnoCode(err) ?? (err instanceof Error ? err.message : String(err))}`, {
      exitCode: ExitCode.PARTIAL,
      path: dir,
      hint: 'the session was kept; make room or fix the permissions of the archive folder',
    });
  }
  return target;
}

export function readArchive(path: string): SessionArchive {
  const a = JSON.parse(gunzipSync(readFileSync(path)).toString('utf8')) as SessionArchive;
  if (a.format !== ARCHIVE_FORMAT || a.version !== 1) throw new Error(`${path} is not a picoclaw-guard session archive`);
  return a;
}

/** Archive files at a path: the file itself, or every archive in a folder (oldest first). */
export function listArchives(path: string): string[] {
  const abs = resolve(path);
  if (statSync(abs).isDirectory()) {
    return readdirSync(abs).filter((n) => n.endsWith(ARCHIVE_SUFFIX) && !n.startsWith('.')).sort().map((n) => join(abs, n));
  }
  return [abs];
}
