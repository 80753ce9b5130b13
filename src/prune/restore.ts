import { randomBytes } from 'node:crypto';
import {
  closeSync,
  createWriteStream,
  fchmodSync,
  fchownSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { ARCHIVE_SUFFIX, LEGACY_SUFFIX } from './archive.js';
import { ArchiveInvalid, type ArchiveInfo } from './archive-fields.js';
import { inspectArchive, readArchiveFiles } from './archive-read.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * Putting archived sessions back into the sessions folder of the same agent in the
 * given home. Every archive is checked whole first (shape, SHA-256, size caps); for
 * each session key only the newest archive is restored (older ones are listed as
 * superseded); both files are written to temp files (a name PicoClaw ignores), checked,
 * then linked, the .jsonl first and the .meta.json last (PicoClaw lists a session by its
 * meta): both or neither, and never over an existing session. Seahorse rows are not
 * written back: PicoClaw's bootstrap re-indexes the sessions from their JSONL at its
 * next start (summaries are regenerated as it compacts).
 */
export interface RestoreEntry {
  archive: string;
  key: string | null;
  agent: string | null;
  archived_at: string | null;
  action: 'restored' | 'skipped' | 'superseded' | 'invalid' | 'listed' | 'rows_only';
  reason: string | null;
  files: string[];
}

export interface RestoreOptions {
  /** The home to restore into (and whose archives alone are used); null: list every archive. */
  home: PicoClawHome | null;
  key?: string;
  list: boolean;
}

export interface RestoreResult {
  entries: RestoreEntry[];
  /** Archives taken from other homes, left alone. */
  otherHomes: number;
}

const isArchiveName = (n: string) => !n.startsWith('.') && (n.endsWith(ARCHIVE_SUFFIX) || n.endsWith(LEGACY_SUFFIX));

function listArchives(path: string): { files: string[]; single: boolean } {
  const abs = resolve(path);
  let st;
  try {
    st = statSync(abs);
  } catch (err) {
    throw new GuardError(`cannot read ${path}: ${errnoCode(err) ?? errorMessage(err)}`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'give an archive file or the folder passed to prune --archive',
    });
  }
  if (!st.isDirectory()) return { files: [abs], single: true };
  return {
    files: readdirSync(abs)
      .filter(isArchiveName)
      .sort()
      .map((n) => join(abs, n)),
    single: false,
  };
}

/** A key as typed: the full key, a unique prefix, or the shortened form restore --list prints (head…tail). */
export function keyMatcher(typed: string): (key: string) => boolean {
  const cut = typed.indexOf('…');
  if (cut >= 0) {
    const head = typed.slice(0, cut);
    const tail = typed.slice(cut + 1);
    return (k) => k.length >= head.length + tail.length && k.startsWith(head) && k.endsWith(tail);
  }
  return (k) => k.startsWith(typed);
}

/** The one key `typed` names among `keys`: exact, else a unique prefix; exit 2 when none or several. */
export function resolveKey(typed: string, keys: Iterable<string>, where: string): string {
  const all = [...new Set(keys)];
  if (all.includes(typed)) return typed;
  const m = keyMatcher(typed);
  const hits = all.filter(m).sort();
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0)
    throw new GuardError(`no session key starts with ${JSON.stringify(typed)} in ${where}`, {
      exitCode: ExitCode.USAGE,
      path: where,
      hint: 'run restore --list to see the keys',
    });
  throw new GuardError(
    `${JSON.stringify(typed)} matches ${hits.length} keys: ${hits.slice(0, 8).join(', ')}` +
      `${hits.length > 8 ? ', ...' : ''}`,
    {
      exitCode: ExitCode.USAGE,
      path: where,
      hint: 'give more of the key',
    },
  );
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** Was this archive taken from the home? Version 2 records the home; version 1 only its sessions folder. */
function fromHome(info: ArchiveInfo, homeReal: string, sessionsReal: Set<string>): boolean {
  if (info.home !== null) return info.home === homeReal;
  return info.sessionsDir !== null && sessionsReal.has(realOrSelf(info.sessionsDir));
}

const exists = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** Read a small file whole (the restored meta, to check it before it is linked). */
function readSmall(path: string, max: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(max + 1);
    let off = 0;
    for (;;) {
      const n = readSync(fd, b, off, b.length - off, off);
      if (n === 0 || off + n > max) return b.subarray(0, off + n);
      off += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** Write both files of one archive into dir: temp files, checks, then links (both or neither). */
async function restoreOne(info: ArchiveInfo, dir: string): Promise<string[]> {
  const tmps = new Map<string, string>();
  const owner = process.getuid?.() === 0 ? statSync(dir) : null;
  try {
    await readArchiveFiles(info.path, async (f, stream) => {
      const tmp = join(dir, `.tmp-picoclaw-guard-restore-${process.pid}-${randomBytes(4).toString('hex')}`);
      tmps.set(f.role, tmp);
      await pipeline(stream, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      const fd = openSync(tmp, 'r');
      try {
        fchmodSync(fd, f.mode);
        // Root restoring for the gateway's user: the files belong to the folder's owner.
        if (owner) fchownSync(fd, owner.uid, owner.gid);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    });
    const metaTmp = tmps.get('meta');
    if (!metaTmp) throw new ArchiveInvalid(info.path, 'files', 'has no meta file');
    let meta: unknown;
    try {
      meta = JSON.parse(readSmall(metaTmp, 16 << 20).toString('utf8'));
    } catch {
      throw new ArchiveInvalid(info.path, 'the meta file', 'is not valid JSON: PicoClaw would not list the session');
    }
    if (typeof meta !== 'object' || meta === null || (meta as { key?: unknown }).key !== info.key)
      throw new ArchiveInvalid(info.path, 'the meta file', `does not hold the key ${JSON.stringify(info.key)}`);
    const linked: string[] = [];
    try {
      for (const role of ['jsonl', 'meta'] as const) {
        const tmp = tmps.get(role);
        if (!tmp) continue;
        const target = join(dir, `${info.base}${role === 'jsonl' ? '.jsonl' : '.meta.json'}`);
        linkSync(tmp, target);
        linked.push(target);
      }
    } catch (err) {
      // Neither: take back what this restore linked (the same inode as its temp file).
      for (const t of linked) {
        const tmp = tmps.get(t.endsWith('.jsonl') ? 'jsonl' : 'meta')!;
        if (statSync(t).ino === statSync(tmp).ino) unlinkSync(t);
      }
      throw err;
    }
    return linked;
  } finally {
    for (const t of tmps.values()) {
      try {
        unlinkSync(t);
      } catch {
        // not written
      }
    }
    fsyncDir(dir);
  }
}

export async function restoreArchives(path: string, o: RestoreOptions): Promise<RestoreResult> {
  const { files, single } = listArchives(path);
  const entries: RestoreEntry[] = [];
  const valid: ArchiveInfo[] = [];
  for (const f of files) {
    try {
      valid.push(await inspectArchive(f));
    } catch (err) {
      const msg = err instanceof ArchiveInvalid ? err.message : `${f}: ${errnoCode(err) ?? errorMessage(err)}`;
      if (single)
        throw new GuardError(msg, {
          exitCode: ExitCode.DATA,
          path: f,
          hint: 'nothing was restored from it; it is not an archive this tool wrote, or it is damaged',
        });
      entries.push({
        archive: f,
        key: null,
        agent: null,
        archived_at: null,
        action: 'invalid',
        reason: msg.startsWith(f) ? msg.slice(f.length + 2) : msg,
        files: [],
      });
    }
  }

  let otherHomes = 0;
  let mine = valid;
  const home = o.home;
  if (home) {
    const homeReal = realOrSelf(home.home);
    const sessionsReal = new Set(home.sessionsDirs.map((s) => realOrSelf(s.dir)));
    mine = valid.filter((i) => fromHome(i, homeReal, sessionsReal));
    otherHomes = valid.length - mine.length;
    if (single && mine.length === 0 && valid.length === 1) {
      const i = valid[0]!;
      throw new GuardError(`${i.path} was taken from ${i.home ?? i.sessionsDir}, not from ${home.home}`, {
        exitCode: ExitCode.USAGE,
        path: i.path,
        hint: 'pass the --home it was taken from',
      });
    }
  }
  if (o.key !== undefined) {
    const key = resolveKey(
      o.key,
      mine.map((i) => i.key),
      path,
    );
    mine = mine.filter((i) => i.key === key);
  }

  // The newest archive of each session; the older ones are superseded.
  const newest = new Map<string, ArchiveInfo>();
  // With a home, every archive left is from it (old ones name only its sessions folder).
  const ident = (i: ArchiveInfo) => `${home ? '' : (i.home ?? i.sessionsDir)}\0${i.kind}\0${i.agent}\0${i.key}`;
  const later = (a: ArchiveInfo, b: ArchiveInfo) =>
    instantMs(a.archivedAt) - instantMs(b.archivedAt) || (basename(a.path) < basename(b.path) ? -1 : 1);
  for (const i of mine) {
    const cur = newest.get(ident(i));
    if (!cur || later(i, cur) > 0) newest.set(ident(i), i);
  }
  const work: { info: ArchiveInfo; entry: RestoreEntry }[] = [];
  for (const i of mine) {
    const entry: RestoreEntry = {
      archive: i.path,
      key: i.key,
      agent: i.agent,
      archived_at: i.archivedAt,
      action: 'listed',
      reason: null,
      files: [],
    };
    entries.push(entry);
    const top = newest.get(ident(i))!;
    if (top !== i) {
      entry.action = 'superseded';
      entry.reason = `older than ${basename(top.path)} (archived ${top.archivedAt})`;
    } else if (i.kind === 'conversation') {
      entry.action = o.list ? 'listed' : 'rows_only';
      entry.reason = 'seahorse rows only (a conversation no session kept): seahorse/rows.jsonl in the archive';
    } else if (!o.list) work.push({ info: i, entry });
  }

  for (const { info, entry } of work) {
    const agent = home!.agents.find((x) => x.id === info.agent);
    if (!agent) {
      entry.action = 'skipped';
      entry.reason = `agent "${info.agent}" is not in this PicoClaw's config`;
      continue;
    }
    const dir = agent.sessionsDir;
    const names = info.files.map((f) => `${info.base}${f.role === 'jsonl' ? '.jsonl' : '.meta.json'}`);
    const there = [`${info.base}.jsonl`, `${info.base}.meta.json`].filter((n) => exists(join(dir, n)));
    if (there.length > 0) {
      entry.action = 'skipped';
      entry.reason = `a session already exists there (${there.join(', ')}); not overwritten`;
      continue;
    }
    try {
      mkdirSync(dir, { recursive: true });
      entry.files = await restoreOne(info, dir);
      entry.action = 'restored';
    } catch (err) {
      if (err instanceof ArchiveInvalid) {
        entry.action = 'invalid';
        entry.reason = err.message.slice(info.path.length + 2);
      } else {
        entry.action = 'skipped';
        entry.reason =
          errnoCode(err) === 'EEXIST'
            ? `${names.join(' or ')} appeared while restoring; left as it is`
            : `${errnoCode(err) ?? errorMessage(err)}: nothing of it was restored`;
      }
    }
  }
  return { entries, otherHomes };
}
