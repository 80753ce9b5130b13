import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../errors.js';
import { readSmallFile } from '../io/smallfile.js';
import { readLastLine, type TailIssue } from './jsonl-tail.js';
import { parseGoTime, usable } from './time.js';

/**
 * PicoClaw's JSONL session store as it lies on disk (pkg/memory/jsonl.go,
 * docs/picoclaw.md#session-files): `<sanitized key>.jsonl` + `<sanitized key>.meta.json`.
 *
 * Only these two name shapes are ever sessions. `.tmp-*` (atomic-write temp files),
 * `session-*.tmp`, legacy `*.json` and `*.json.migrated`, folders and symlinks never
 * are, whatever their names. The real key is `meta.key`: sanitisation is not reversible.
 * Nothing here writes.
 */

export const META_SUFFIX = '.meta.json';
export const JSONL_SUFFIX = '.jsonl';

export interface FileFacts {
  path: string;
  bytes: number;
  mtimeMs: number;
  ino: number;
}

export interface MetaFacts {
  key: string;
  count: number | null;
  skip: number | null;
  createdAt: string | null;
  updatedAt: string | null;
  aliases: string[];
  agentIdInScope: string | null;
}

export type Issue =
  | 'meta_corrupt'
  | 'meta_empty'
  | 'meta_not_utf8'
  | 'meta_no_key'
  | 'meta_unreadable'
  | 'jsonl_missing'
  | 'jsonl_unreadable'
  | TailIssue
  | 'jsonl_not_regular_file';

export interface StoredSession {
  /** meta.key, or null when the meta could not be read. */
  key: string | null;
  /** The sanitized file base name (without .meta.json / .jsonl). */
  base: string;
  dir: string;
  meta: FileFacts | null;
  jsonl: FileFacts | null;
  parsedMeta: MetaFacts | null;
  /** created_at of the last complete JSONL line, as written and as epoch ms. */
  lastLineCreatedAt: string | null;
  issues: Issue[];
}

export interface IgnoredEntry {
  name: string;
  why: 'symlink' | 'directory' | 'temp_file' | 'legacy_json' | 'not_a_regular_file';
}

export interface StoreScan {
  dir: string;
  exists: boolean;
  /** Sessions: every `*.meta.json` (with or without its .jsonl). */
  sessions: StoredSession[];
  /** `.jsonl` files without a `.meta.json`: invisible to PicoClaw's ListSessions. */
  orphanJsonl: FileFacts[];
  ignored: IgnoredEntry[];
  error: string | null;
}

function facts(path: string, st: Stats): FileFacts {
  return { path, bytes: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseMeta(buf: Buffer): { meta: MetaFacts | null; issue: Issue | null } {
  if (buf.length === 0 || buf.toString('latin1').trim() === '') return { meta: null, issue: 'meta_empty' };
  let text: string;
  try {
    text = utf8.decode(buf);
  } catch {
    return { meta: null, issue: 'meta_not_utf8' };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { meta: null, issue: 'meta_corrupt' };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { meta: null, issue: 'meta_corrupt' };
  const o = raw as Record<string, unknown>;
  if (typeof o.key !== 'string' || o.key === '') return { meta: null, issue: 'meta_no_key' };
  const scope = typeof o.scope === 'object' && o.scope !== null ? (o.scope as Record<string, unknown>) : null;
  return {
    meta: {
      key: o.key,
      count: typeof o.count === 'number' ? o.count : null,
      skip: typeof o.skip === 'number' ? o.skip : null,
      createdAt: typeof o.created_at === 'string' ? o.created_at : null,
      updatedAt: typeof o.updated_at === 'string' ? o.updated_at : null,
      aliases: Array.isArray(o.aliases) ? o.aliases.filter((a): a is string => typeof a === 'string') : [],
      agentIdInScope: scope && typeof scope.agent_id === 'string' ? scope.agent_id : null,
    },
    issue: null,
  };
}

export type EntryKind = 'meta' | 'jsonl' | 'temp' | 'legacy' | 'other';

/**
 * What a directory entry's name makes it: the only place that tells session files from
 * the rest (the inventory and health's session count both ask here).
 */
export function classifyEntry(name: string): EntryKind {
  if (name.startsWith('.tmp-') || (name.startsWith('session-') && name.endsWith('.tmp'))) return 'temp';
  if (name.endsWith(META_SUFFIX) && name.length > META_SUFFIX.length) return 'meta';
  if (name.endsWith(JSONL_SUFFIX) && name.length > JSONL_SUFFIX.length) return 'jsonl';
  if (name.endsWith('.json') || name.endsWith('.json.migrated')) return 'legacy';
  return 'other';
}

/**
 * Scan one sessions folder. Never fatal: problems are reported per file. With `onSession`,
 * each session goes there as soon as it is read and `sessions` stays empty: the caller keeps
 * what it needs and the rest is garbage while still young (cheap to collect, never promoted).
 */
export function scanStore(dir: string, onSession?: (s: StoredSession) => void): StoreScan {
  const scan: StoreScan = { dir, exists: false, sessions: [], orphanJsonl: [], ignored: [], error: null };
  let names: string[];
  try {
    names = readdirSync(dir);
    scan.exists = true;
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') scan.error = `cannot list ${dir}: ${errnoCode(err) ?? String(err)}`;
    return scan;
  }
  names.sort();
  const metas = new Map<string, FileFacts>();
  const jsonls = new Map<string, FileFacts | 'bad'>();
  for (const name of names) {
    const kind = classifyEntry(name);
    if (kind === 'other') continue;
    if (kind === 'temp') {
      scan.ignored.push({ name, why: 'temp_file' });
      continue;
    }
    const path = join(dir, name);
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch {
      continue; // vanished between readdir and lstat
    }
    if (st.isSymbolicLink()) {
      scan.ignored.push({ name, why: 'symlink' });
      if (kind === 'jsonl') jsonls.set(name.slice(0, -JSONL_SUFFIX.length), 'bad');
      continue;
    }
    if (st.isDirectory()) {
      scan.ignored.push({ name, why: 'directory' });
      if (kind === 'jsonl') jsonls.set(name.slice(0, -JSONL_SUFFIX.length), 'bad');
      continue;
    }
    if (!st.isFile()) {
      scan.ignored.push({ name, why: 'not_a_regular_file' });
      continue;
    }
    if (kind === 'legacy') {
      scan.ignored.push({ name, why: 'legacy_json' });
      continue;
    }
    if (kind === 'meta') metas.set(name.slice(0, -META_SUFFIX.length), facts(path, st));
    else jsonls.set(name.slice(0, -JSONL_SUFFIX.length), facts(path, st));
  }
  for (const [base, meta] of metas) {
    const s: StoredSession = {
      key: null,
      base,
      dir,
      meta,
      jsonl: null,
      parsedMeta: null,
      lastLineCreatedAt: null,
      issues: [],
    };
    try {
      const { meta: m, issue } = parseMeta(readSmallFile(meta.path, 'meta', { noFollow: true }));
      if (issue) s.issues.push(issue);
      s.parsedMeta = m;
      s.key = m?.key ?? null;
    } catch {
      s.issues.push('meta_unreadable');
    }
    const j = jsonls.get(base);
    jsonls.delete(base);
    if (j === 'bad') s.issues.push('jsonl_not_regular_file');
    else if (j) {
      s.jsonl = j;
      try {
        const last = readLastLine(j.path, j.bytes);
        s.lastLineCreatedAt = last.createdAt;
        if (last.issue) s.issues.push(last.issue);
      } catch {
        s.issues.push('jsonl_unreadable');
      }
    } else s.issues.push('jsonl_missing');
    if (onSession) onSession(s);
    else scan.sessions.push(s);
  }
  for (const j of jsonls.values()) if (j !== 'bad') scan.orphanJsonl.push(j);
  return scan;
}

/** The newest usable time among the JSONL store's own signals, in epoch ms. */
export function storeTimes(s: StoredSession): {
  updatedAt: number | null;
  createdAt: number | null;
  lastLine: number | null;
} {
  return {
    updatedAt: usable(parseGoTime(s.parsedMeta?.updatedAt)),
    createdAt: usable(parseGoTime(s.parsedMeta?.createdAt)),
    lastLine: usable(parseGoTime(s.lastLineCreatedAt)),
  };
}
