import { lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../io/atomic.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { JSONL_SUFFIX, META_SUFFIX } from '../picoclaw/sessions.js';
import { listArchives, readArchive, type SessionArchive } from './archive.js';

/**
 * Putting archived sessions back: the .jsonl, then the .meta.json (PicoClaw lists a
 * session by its meta, so the meta goes last), into the sessions folder of the same
 * agent in the current home. An existing session is never overwritten. Seahorse rows
 * are not written back: PicoClaw's bootstrap re-indexes the default agent's sessions
 * from their JSONL at its next start (summaries are regenerated as it compacts).
 */
export interface RestoreEntry {
  archive: string;
  key: string;
  agent: string;
  action: 'restored' | 'skipped' | 'listed';
  reason: string | null;
  files: string[];
}

/** Write a new session file through a `.tmp-` file (a name PicoClaw ignores); never over an existing one. */
function writeNew(dir: string, name: string, data: Buffer): string {
  const target = join(dir, name);
  try {
    writeFileAtomic(target, data, { tmpName: `.tmp-picoclaw-guard-${process.pid}-${Date.now()}`, noOverwrite: true });
  } catch (err) {
    if (errnoCode(err) === 'EEXIST') throw new GuardError(`${target} appeared while restoring; left as it is`, { exitCode: ExitCode.PARTIAL, path: target });
    throw err;
  }
  return target;
}

function safeName(a: SessionArchive, file: { name: string } | null, suffix: string): string {
  const name = file?.name ?? `${a.base}${suffix}`;
  if (name.includes('/') || name.includes('\\') || name.startsWith('.') || !name.endsWith(suffix) || name !== `${a.base}${suffix}`) {
    throw new GuardError(`archive entry for ${a.key} has an unsafe file name ${JSON.stringify(name)}`, { exitCode: ExitCode.DATA });
  }
  return name;
}

export function restoreArchives(home: PicoClawHome, path: string, opts: { key?: string; list?: boolean }): RestoreEntry[] {
  let files: string[];
  try {
    files = listArchives(path);
  } catch (err) {
    throw new GuardError(`cannot read ${path}: ${errnoCode(err) ?? errorMessage(err)}`, { exitCode: ExitCode.USAGE, path, hint: 'give an archive file or the folder passed to prune --archive' });
  }
  const out: RestoreEntry[] = [];
  for (const f of files) {
    let a: SessionArchive;
    try {
      a = readArchive(f);
    } catch (err) {
      throw new GuardError(`${f} is not a readable picoclaw-guard archive (${errorMessage(err)})`, { exitCode: ExitCode.DATA, path: f });
    }
    if (opts.key && a.key !== opts.key) continue;
    const entry: RestoreEntry = { archive: f, key: a.key, agent: a.agent, action: 'listed', reason: null, files: [] };
    out.push(entry);
    if (opts.list) continue;
    const agent = home.agents.find((x) => x.id === a.agent);
    if (!agent) {
      entry.action = 'skipped';
      entry.reason = `agent "${a.agent}" is not in this PicoClaw's config`;
      continue;
    }
    const dir = agent.sessionsDir;
    const metaName = safeName(a, a.files.meta, META_SUFFIX);
    const jsonlName = safeName(a, a.files.jsonl, JSONL_SUFFIX);
    const exists = [metaName, jsonlName].filter((n) => {
      try {
        lstatSync(join(dir, n));
        return true;
      } catch {
        return false;
      }
    });
    if (exists.length > 0) {
      entry.action = 'skipped';
      entry.reason = `a session already exists there (${exists.join(', ')}); not overwritten`;
      continue;
    }
    mkdirSync(dir, { recursive: true });
    if (a.files.jsonl) entry.files.push(writeNew(dir, jsonlName, Buffer.from(a.files.jsonl.data_base64, 'base64')));
    entry.files.push(writeNew(dir, metaName, Buffer.from(a.files.meta.data_base64, 'base64')));
    fsyncDir(dir);
    entry.action = 'restored';
  }
  if (opts.key && out.length === 0) {
    throw new GuardError(`no session with key ${opts.key} in ${path}`, { exitCode: ExitCode.USAGE, path, hint: 'run restore --list to see what the archive holds' });
  }
  return out;
}
