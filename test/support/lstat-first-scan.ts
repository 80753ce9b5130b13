import { join } from 'node:path';
import { withSmallFile } from '../../src/io/smallfile.js';
import { readLastLine } from '../../src/picoclaw/inventory/jsonl-tail.js';
import {
  classifyEntry,
  facts,
  JSONL_SUFFIX,
  listStore,
  lstatOrNull,
  META_SUFFIX,
  parseMeta,
  sessionOf,
  tailOf,
  type FileFacts,
  type StoreScan,
  type StoredSession,
} from '../../src/picoclaw/inventory/sessions.js';

/**
 * The reference reading of a sessions folder, against which the scan (src/picoclaw/inventory/sessions.ts,
 * which opens each file once and looks at a name by lstat only when it must) is checked: every name
 * looked at by lstat first, in name order, each file then read by its path. It is the scan as it was
 * written before it stopped looking at every name, kept here as the plainest statement of what a
 * folder holds.
 */
export function lstatFirstScan(dir: string): StoreScan {
  const { scan, names } = listStore(dir);
  /** Transcripts by base, in name order, until their meta takes them: 'bad' when no regular file. */
  const waiting = new Map<string, FileFacts | 'bad'>();
  for (const name of names) {
    const kind = classifyEntry(name);
    if (kind === 'other') continue;
    if (kind === 'temp') {
      scan.ignored.push({ name, why: 'temp_file' });
      continue;
    }
    const path = join(dir, name);
    const st = lstatOrNull(path);
    if (st === null) continue;
    if (!st.isFile()) {
      scan.ignored.push({
        name,
        why: st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : 'not_a_regular_file',
      });
      if (kind === 'jsonl') waiting.set(name.slice(0, -JSONL_SUFFIX.length), 'bad');
      continue;
    }
    if (kind === 'legacy') {
      scan.ignored.push({ name, why: 'legacy_json' });
      continue;
    }
    if (kind === 'jsonl') {
      waiting.set(name.slice(0, -JSONL_SUFFIX.length), facts(path, st));
      continue;
    }
    const base = name.slice(0, -META_SUFFIX.length);
    const j = waiting.get(base);
    waiting.delete(base);
    scan.sessions.push(readByPath(dir, base, facts(path, st), j));
  }
  for (const j of waiting.values()) if (j !== 'bad') scan.orphanJsonl.push(j);
  return scan;
}

function readByPath(dir: string, base: string, meta: FileFacts, j: FileFacts | 'bad' | undefined): StoredSession {
  let parsed: ReturnType<typeof parseMeta> | null = null;
  try {
    parsed = withSmallFile(meta.path, 'meta', { noFollow: true }, parseMeta);
  } catch {
    // meta_unreadable
  }
  const s = sessionOf(dir, base, meta, parsed);
  if (j === 'bad') s.issues.push('jsonl_not_regular_file');
  else if (j) {
    s.jsonl = j;
    try {
      tailOf(s, readLastLine(j.path, j.bytes));
    } catch {
      s.issues.push('jsonl_unreadable');
    }
  } else s.issues.push('jsonl_missing');
  return s;
}
