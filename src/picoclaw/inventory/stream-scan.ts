import { opendirSync, type Dirent, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../../errors.js';
import {
  classifyEntry,
  facts,
  JSONL_SUFFIX,
  lstatOrNull,
  META_SUFFIX,
  readSessionAt,
  type FileFacts,
  type IgnoredEntry,
  type StoredSession,
} from './sessions.js';

/**
 * One sessions folder read as a stream of its entries, in the folder's own order: what it holds
 * at any time is one entry, whatever the folder's size (scanStore lists and sorts every name
 * first). Each session is read at its `.meta.json`, its transcript looked up beside it; every
 * transcript is also handed over by name, and the caller tells the orphans (those no session
 * took) and asks `orphanFacts` for them when it reports them. It tells the same sessions,
 * orphans and ignored entries as scanStore.
 */

export interface FolderSink {
  session(s: StoredSession): void;
  /**
   * A `.jsonl` that is a regular file, by base: an orphan unless a session of the same base came
   * (or comes) to `session`, in either order.
   */
  jsonl(base: string): void;
  ignored(e: IgnoredEntry): void;
}

type Kind = 'file' | 'symlink' | 'directory' | 'other';

function kindOfStats(st: Stats): Kind {
  return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'other';
}

/** The entry's type as the folder gives it, or from a lstat when it does not (null: gone). */
function kindOf(d: Dirent, path: string): Kind | null {
  if (d.isSymbolicLink()) return 'symlink';
  if (d.isDirectory()) return 'directory';
  if (d.isFile()) return 'file';
  if (d.isFIFO() || d.isSocket() || d.isBlockDevice() || d.isCharacterDevice()) return 'other';
  const st = lstatOrNull(path);
  return st === null ? null : kindOfStats(st);
}

/** Stream `dir` into `sink`; `exists` false when there is no such folder, `error` when it cannot be read. */
export function streamStore(dir: string, sink: FolderSink): { exists: boolean; error: string | null } {
  let d;
  try {
    d = opendirSync(dir);
  } catch (err) {
    const code = errnoCode(err);
    return { exists: false, error: code === 'ENOENT' ? null : `cannot list ${dir}: ${code ?? String(err)}` };
  }
  const prefix = join(dir, '_').slice(0, -1);
  let error: string | null = null;
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) {
      const name = e.name;
      const kind = classifyEntry(name);
      if (kind === 'other') continue;
      if (kind === 'temp') {
        sink.ignored({ name, why: 'temp_file' });
        continue;
      }
      const path = prefix + name;
      const k = kindOf(e, path);
      if (k === null) continue;
      if (kind === 'meta' && k === 'file') {
        // Read by name: the open descriptor says what the name is now (readSessionAt).
        const base = name.slice(0, -META_SUFFIX.length);
        const r = readSessionAt(dir, base, path, prefix + base + JSONL_SUFFIX);
        if (typeof r === 'string') sink.ignored({ name, why: r });
        else if (r !== null) sink.session(r);
        continue;
      }
      if (k !== 'file') sink.ignored({ name, why: k === 'other' ? 'not_a_regular_file' : k });
      else if (kind === 'legacy') sink.ignored({ name, why: 'legacy_json' });
      // Its meta takes it, when there is one (the caller knows): else it is an orphan.
      else sink.jsonl(name.slice(0, -JSONL_SUFFIX.length));
    }
  } catch (err) {
    error = `cannot list ${dir}: ${errnoCode(err) ?? String(err)}`;
  } finally {
    try {
      d.closeSync();
    } catch {
      // closed already
    }
  }
  return { exists: true, error };
}

/** The facts of a `.jsonl` no meta took, looked at now (null: gone, or no longer a regular file). */
export function orphanFacts(dir: string, base: string): FileFacts | null {
  const path = join(dir, '_').slice(0, -1) + base + JSONL_SUFFIX;
  const st = lstatOrNull(path);
  return st !== null && st.isFile() ? facts(path, st) : null;
}
