import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../../errors.js';
import { SmallFileError, withSmallFile } from '../../io/smallfile.js';
import { lastLineOf, type LastLine, type TailIssue } from './jsonl-tail.js';
import { goDecodeMeta } from './go-meta.js';
import { parseGoTime, usable } from '../time.js';

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
  | 'meta_wrong_type'
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

export function facts(path: string, st: Stats): FileFacts {
  return { path, bytes: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Whether the bytes, read as Latin-1, are all white space to String.prototype.trim: tab, LF, VT,
 * FF, CR, space and no-break space (0xA0). Checked in place: a copy of every meta as a string
 * only to ask this was a fifth of what the scan allocated.
 */
function isBlank(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (!((c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0xa0)) return false;
  }
  return true;
}

export function parseMeta(buf: Buffer): { meta: MetaFacts | null; issue: Issue | null } {
  if (isBlank(buf)) return { meta: null, issue: 'meta_empty' };
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
  // Go's decoder decides (PicoClaw's ListSessions skips a meta json.Unmarshal rejects): ./go-meta.ts.
  const go = goDecodeMeta(raw, text);
  if ('wrong' in go) return { meta: null, issue: 'meta_wrong_type' };
  const o = go.meta;
  if (o.key === '') return { meta: null, issue: 'meta_no_key' };
  const present = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const scope = typeof o.scope === 'object' && o.scope !== null ? (o.scope as Record<string, unknown>) : null;
  return {
    meta: {
      key: o.key,
      count: typeof present.count === 'number' ? o.count : null,
      skip: typeof present.skip === 'number' ? o.skip : null,
      createdAt: o.createdAt,
      updatedAt: o.updatedAt,
      aliases: o.aliases,
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

/** A lstat without the exception a vanished file would cost; null when it is gone. */
export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/**
 * A scan's start: the folder's names in order (none when it cannot be listed, which the scan says, or is
 * absent) and the scan they fill, still empty.
 */
export function listStore(dir: string): { scan: StoreScan; names: string[] } {
  const scan: StoreScan = { dir, exists: false, sessions: [], orphanJsonl: [], ignored: [], error: null };
  try {
    const names = readdirSync(dir);
    scan.exists = true;
    return { scan, names: names.sort() };
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') scan.error = `cannot list ${dir}: ${errnoCode(err) ?? String(err)}`;
    return { scan, names: [] };
  }
}

/**
 * Scan one sessions folder. Never fatal: problems are reported per file. With `onSession`,
 * each session goes there as soon as it is read and `sessions` stays empty: the caller keeps
 * what it needs and the rest is garbage while still young (cheap to collect, never promoted).
 *
 * The folder is walked once, in name order. A session is read and handed over at its
 * `.meta.json` (readSessionAt: each file opened once, its facts from the open descriptor), whose
 * `.jsonl` always sorts before it (`x.jsonl` < `x.meta.json`) and waits for it by name, unlooked
 * at. A transcript is looked at by lstat only when no meta took it as a regular file: an orphan,
 * or what stands at its name is reported. What the scan holds is the list of names and the
 * transcripts still waiting for their meta (normally one; at the end, the orphans), not a record
 * per file of the folder.
 */
export function scanStore(dir: string, onSession?: (s: StoredSession) => void): StoreScan {
  const { scan, names } = listStore(dir);
  // join(dir, name) for a name read from the folder (never '.', '..' or with a '/'), made once.
  const prefix = join(dir, '_').slice(0, -1);
  /** Transcripts by base, in name order, until their meta takes them. */
  const waiting = new Set<string>();
  /** What stands at a transcript's name that is no regular file, as the lstat-first walk reported it. */
  const lookAtTranscript = (base: string, orphan: boolean): void => {
    const path = prefix + base + JSONL_SUFFIX;
    const st = lstatOrNull(path);
    if (st === null) return;
    if (!st.isFile()) scan.ignored.push({ name: base + JSONL_SUFFIX, why: notRegular(st) });
    else if (orphan) scan.orphanJsonl.push(facts(path, st));
  };
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    // Let each name go once read: the list of a large folder's names (about 100 bytes each) would
    // otherwise live through the whole scan beside the records it becomes.
    names[i] = '';
    const kind = classifyEntry(name);
    if (kind === 'other') continue;
    if (kind === 'temp') {
      scan.ignored.push({ name, why: 'temp_file' });
      continue;
    }
    if (kind === 'jsonl') {
      waiting.add(name.slice(0, -JSONL_SUFFIX.length));
      continue;
    }
    const path = prefix + name;
    if (kind === 'legacy') {
      const st = lstatOrNull(path);
      if (st !== null) scan.ignored.push(st.isFile() ? { name, why: 'legacy_json' } : { name, why: notRegular(st) });
      continue;
    }
    const base = name.slice(0, -META_SUFFIX.length);
    const s = readSessionAt(dir, base, path, prefix + base + JSONL_SUFFIX);
    if (s === null) continue; // vanished between readdir and open
    if (typeof s === 'string') {
      scan.ignored.push({ name, why: s });
      continue;
    }
    if (waiting.delete(base) && s.jsonl === null) lookAtTranscript(base, false);
    if (onSession) onSession(s);
    else scan.sessions.push(s);
  }
  for (const base of waiting) lookAtTranscript(base, true);
  // In name order, as a walk that looked at each name as it came reports them (a transcript's is known later).
  scan.ignored.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return scan;
}

/** A session as its meta's parse (null: the meta could not be read) makes it, before its transcript is read. */
export function sessionOf(
  dir: string,
  base: string,
  meta: FileFacts,
  parsed: ReturnType<typeof parseMeta> | null,
): StoredSession {
  const s: StoredSession = {
    key: parsed?.meta?.key ?? null,
    base,
    dir,
    meta,
    jsonl: null,
    parsedMeta: parsed?.meta ?? null,
    lastLineCreatedAt: null,
    issues: [],
  };
  if (parsed === null) s.issues.push('meta_unreadable');
  else if (parsed.issue) s.issues.push(parsed.issue);
  return s;
}

/** What the transcript's last line adds to a session. */
export function tailOf(s: StoredSession, last: LastLine): void {
  s.lastLineCreatedAt = last.createdAt;
  if (last.issue) s.issues.push(last.issue);
}

/** What stands at a name that is not a regular file, as the scan reports it. */
export type NotRegular = 'symlink' | 'directory' | 'not_a_regular_file';

function notRegular(st: Stats): NotRegular {
  return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : 'not_a_regular_file';
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;

/**
 * A session read at its meta's name, as a reading that looks at each file by lstat first reads it
 * (test/support/lstat-first-scan.ts), with each file's facts from the fstat of its open descriptor instead (no lstat: a
 * third of what a large folder's scan cost). Null when the meta is gone; what stands at its
 * name when that is not a regular file. A name that cannot be opened is looked at by lstat, as
 * before.
 */
export function readSessionAt(
  dir: string,
  base: string,
  metaPath: string,
  jsonlPath: string,
): StoredSession | null | NotRegular {
  let st: Stats | null = null;
  let parsed: ReturnType<typeof parseMeta> | null = null;
  try {
    parsed = withSmallFile(metaPath, 'meta', { noFollow: true, stat: (x) => (st = x) }, parseMeta);
  } catch (err) {
    const problem = err instanceof SmallFileError ? err.problem : null;
    if (problem === 'absent') return null;
    if (problem === 'symlink') return 'symlink';
    if (st === null) {
      // Not opened (EACCES, ...): what the name is, by lstat.
      st = lstatOrNull(metaPath);
      if (st === null) return null;
    }
    if (!st.isFile()) return notRegular(st);
  }
  const s = sessionOf(dir, base, facts(metaPath, st!), parsed);
  let fd: number;
  try {
    fd = openSync(jsonlPath, OPEN_FLAGS);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') s.issues.push('jsonl_missing');
    else if (code === 'ELOOP') s.issues.push('jsonl_not_regular_file');
    else {
      const j = lstatOrNull(jsonlPath);
      if (j === null) s.issues.push('jsonl_missing');
      else if (!j.isFile()) s.issues.push('jsonl_not_regular_file');
      else {
        s.jsonl = facts(jsonlPath, j);
        s.issues.push('jsonl_unreadable');
      }
    }
    return s;
  }
  try {
    let j: Stats;
    try {
      j = fstatSync(fd);
    } catch {
      s.issues.push('jsonl_unreadable');
      return s;
    }
    if (!j.isFile()) s.issues.push('jsonl_not_regular_file');
    else {
      s.jsonl = facts(jsonlPath, j);
      try {
        tailOf(s, lastLineOf(fd, j.size));
      } catch {
        s.issues.push('jsonl_unreadable');
      }
    }
  } finally {
    closeSync(fd);
  }
  return s;
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
