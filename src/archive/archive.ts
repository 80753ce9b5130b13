import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  realpathSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import type { Database } from '../io/sqlite.js';
import type { SessionRecord } from '../picoclaw/inventory/inventory.js';
import { parseMeta, type FileFacts } from '../picoclaw/inventory/sessions.js';
import { writeRows } from './rows.js';
import { GzipTarWriter, hashFd } from './tar.js';

/**
 * A way back: just before a session is deleted, its .jsonl and .meta.json (verbatim)
 * and its seahorse rows (JSON lines) go into one `.tar.gz` in the archive folder
 * (never a sessions folder), with a manifest first that names the home, the agent,
 * the key and the SHA-256 of every file. An operator can restore by hand:
 *   tar -xzf A.tar.gz -C <sessions dir> --strip-components=1 session/
 *
 * Memory stays bounded by a few buffers whatever the session's size: the files are
 * read through 64 KiB reads, the rows are streamed to a temp file first (a tar entry
 * needs its size up front), and the tar is compressed in independent gzip members of
 * 1 MiB input each (as BGZF does; any gunzip or tar reads them as one stream). The
 * writer is synchronous because it runs inside the deletion loop, between two
 * SQLite transactions. Each file is hashed before it is copied and again as it is
 * copied (a file that changes meanwhile fails the archive); the archive is synced,
 * read back and compared with the bytes written (not decompressed again: that would
 * cost a buffer per block); only then does it get its name, by link(), which never
 * replaces an existing archive.
 */
export const ARCHIVE_FORMAT = 'picoclaw-guard-session-archive';
export const ARCHIVE_SUFFIX = '.tar.gz';
/** The single-JSON format of earlier versions: still read by restore. */
export const LEGACY_SUFFIX = '.session.json.gz';
export const MANIFEST_NAME = 'manifest.json';
export const ROWS_NAME = 'seahorse/rows.jsonl';
export const SESSION_PREFIX = 'session/';

export interface ManifestFile {
  role: 'jsonl' | 'meta';
  name: string;
  bytes: number;
  sha256: string;
  /** Permission bits of the original file (PicoClaw writes 0644). */
  mode: number;
}

export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  version: 2;
  kind: 'session' | 'conversation';
  archived_at: string;
  /** Real path of the PicoClaw home the session was taken from. */
  home: string;
  agent: string | null;
  sessions_dir: string | null;
  base: string | null;
  key: string;
  aliases: string[];
  files: ManifestFile[];
  seahorse: {
    name: string;
    bytes: number;
    sha256: string;
    conversations: number[];
    rows: Record<string, number>;
  } | null;
}

export interface ArchiveContext {
  dir: string;
  /** Real path of the home: recorded in the manifest, hashed into the name. */
  homeReal: string;
  db: Database | null;
  nowMs: number;
}

interface OpenFile {
  fd: number;
  name: string;
  role: ManifestFile['role'];
  bytes: number;
  sha256: string;
  mtime: Date;
  mode: number;
}

/** Open a session file without following links; it must still be the file the plan saw. */
/** Open a file the plan named, as the plan saw it; `copy` receives its bytes as they are hashed. */
function openPlanned(f: FileFacts, role: ManifestFile['role'], name: string, copy?: Buffer[]): OpenFile {
  const fd = openSync(f.path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.ino !== f.ino || st.size !== f.bytes || st.mtimeMs !== f.mtimeMs)
      throw new Error(`${f.path} changed since planning`);
    const sha = hashFd(fd, st.size, copy && ((b) => copy.push(Buffer.from(b))));
    return { fd, name, role, bytes: st.size, sha256: sha, mtime: st.mtime, mode: st.mode & 0o777 };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '');
}

/** 8 hex digits of the home's real path: two homes sharing one archive folder never share a name. */
export function homeTag(homeReal: string): string {
  return createHash('sha256').update(homeReal).digest('hex').slice(0, 8);
}

function fileSafe(s: string): string {
  return s.replace(/[^A-Za-z0-9._:@+=-]/g, '_').slice(0, 120);
}

/** The folder, home and time of a pass's archives: all a name depends on besides what is archived. */
export type ArchivePlace = Pick<ArchiveContext, 'dir' | 'homeReal' | 'nowMs'>;

/**
 * The path of the i-th name of an archive called visibleName in this pass: the first is the default, the
 * next ones (`-2`, ...) are tried when it is taken. The one place a name is made, so that what computes
 * an archive's path again (a pass's outcomes) can never disagree with where it was written.
 */
export function archivePath(ctx: ArchivePlace, visibleName: string, i = 1): string {
  // One flat string: a report of an archiving pass holds one path a deletion, and a path made by
  // join() is a chain of pieces several times its length.
  return [placePrefix(ctx), visibleName, i === 1 ? '' : `-${i}`, ARCHIVE_SUFFIX].join('');
}

/** The folder, the pass's stamp and the home's tag: made once for the place a pass archives to (the tag is a hash). */
let lastPrefix: { dir: string; homeReal: string; nowMs: number; prefix: string } | null = null;
function placePrefix(ctx: ArchivePlace): string {
  const l = lastPrefix;
  if (l && l.dir === ctx.dir && l.homeReal === ctx.homeReal && l.nowMs === ctx.nowMs) return l.prefix;
  const prefix = join(ctx.dir, `${stamp(ctx.nowMs)}_${homeTag(ctx.homeReal)}_`);
  lastPrefix = { dir: ctx.dir, homeReal: ctx.homeReal, nowMs: ctx.nowMs, prefix };
  return prefix;
}

/** A session's archive name within its folder, before the pass's stamp and home tag. */
function sessionName(s: Pick<SessionRecord, 'agent' | 'base'>): string {
  return fileSafe(`${s.agent}_${s.base}`);
}

/** Where session s's archive goes in this pass unless another archive already holds that name. */
export function defaultSessionArchivePath(ctx: ArchivePlace, s: Pick<SessionRecord, 'agent' | 'base'>): string {
  return archivePath(ctx, sessionName(s));
}

function unlinkQuiet(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    // already gone
  }
}

/** Write one archive: manifest, files, rows; sync; read back; link under a name no other archive has. */
function writeArchive(
  ctx: ArchiveContext,
  visibleName: string,
  manifest: Omit<ArchiveManifest, 'files' | 'seahorse'>,
  files: OpenFile[],
  conversationIds: number[],
): string {
  mkdirSync(ctx.dir, { recursive: true, mode: 0o700 });
  const nonce = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const rowsTmp = join(ctx.dir, `.rows-${nonce}.tmp`);
  const tarTmp = join(ctx.dir, `.archive-${nonce}.tmp`);
  let rows: ReturnType<typeof writeRows> | null = null;
  let fd: number | null = null;
  try {
    if (ctx.db && conversationIds.length > 0) rows = writeRows(ctx.db, conversationIds, rowsTmp);
    const full: ArchiveManifest = {
      ...manifest,
      files: files.map((f) => ({ role: f.role, name: f.name, bytes: f.bytes, sha256: f.sha256, mode: f.mode })),
      seahorse: rows
        ? { name: ROWS_NAME, bytes: rows.bytes, sha256: rows.sha256, conversations: conversationIds, rows: rows.rows }
        : null,
    };
    const mtime = new Date(ctx.nowMs);
    fd = openSync(tarTmp, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
    const w = new GzipTarWriter(fd);
    const mbuf = Buffer.from(JSON.stringify(full, null, 2) + '\n');
    w.header(MANIFEST_NAME, mbuf.length, mtime);
    w.write(mbuf);
    w.pad(mbuf.length);
    for (const f of files) {
      w.header(f.name, f.bytes, f.mtime, f.mode);
      if (hashFd(f.fd, f.bytes, (c) => w.write(c)) !== f.sha256)
        throw new Error(`${f.name} changed while it was being archived`);
      w.pad(f.bytes);
    }
    if (rows) {
      w.header(ROWS_NAME, rows.bytes, mtime);
      if (hashFd(rows.fd, rows.bytes, (c) => w.write(c)) !== rows.sha256)
        throw new Error('the seahorse rows changed on the way into the archive');
      w.pad(rows.bytes);
    }
    w.end();
    fsyncSync(fd);
    // Read back what the disk holds and compare it with the bytes that were written.
    if (hashFd(fd, w.bytesWritten) !== w.gzHash.digest('hex'))
      throw new Error('the archive read back differs from what was written');
    closeSync(fd);
    fd = null;
    for (let i = 1; ; i++) {
      const target = archivePath(ctx, visibleName, i);
      try {
        linkSync(tarTmp, target);
        fsyncDir(ctx.dir);
        return target;
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST' || i >= 1000) throw err;
      }
    }
  } finally {
    if (fd !== null) closeSync(fd);
    if (rows) closeSync(rows.fd);
    unlinkQuiet(rowsTmp);
    unlinkQuiet(tarTmp);
  }
}

function failed(what: string, dir: string, err: unknown): GuardError {
  return new GuardError(`archiving ${what} to ${dir} failed: ${errnoCode(err) ?? errorMessage(err)}`, {
    exitCode: ExitCode.PARTIAL,
    path: dir,
    hint: 'nothing of it was deleted; make room or fix the permissions of the archive folder',
    // The cause tells a full disk (which ends the pass with its own exit code) from the rest.
    cause: err,
  });
}

/** Archive one session; throws GuardError (the caller keeps the session). */
export function archiveSession(ctx: ArchiveContext, s: SessionRecord, conversationIds: number[]): string {
  if (!s.files.meta || s.key === null)
    throw new GuardError(`cannot archive ${s.id}: its meta is unreadable`, { exitCode: ExitCode.PARTIAL });
  const files: OpenFile[] = [];
  try {
    // The aliases as the archived meta lists them: read from it here, so that a pass need not keep
    // every session's aliases until its archives are written.
    const metaBytes: Buffer[] = [];
    files.push(openPlanned(s.files.meta, 'meta', `${SESSION_PREFIX}${s.base}.meta.json`, metaBytes));
    const { meta } = parseMeta(Buffer.concat(metaBytes));
    if (!meta) throw new Error(`${s.files.meta.path} is no longer a readable meta`);
    if (s.files.jsonl) files.push(openPlanned(s.files.jsonl, 'jsonl', `${SESSION_PREFIX}${s.base}.jsonl`));
    const manifest = {
      format: ARCHIVE_FORMAT,
      version: 2,
      kind: 'session',
      archived_at: new Date(ctx.nowMs).toISOString(),
      home: ctx.homeReal,
      agent: s.agent,
      sessions_dir: realpathSync(s.dir),
      base: s.base,
      key: s.key,
      aliases: meta.aliases,
    } as const;
    return writeArchive(ctx, sessionName(s), manifest, files, conversationIds);
  } catch (err) {
    throw failed(s.key, ctx.dir, err);
  } finally {
    for (const f of files) closeSync(f.fd);
  }
}

/** Archive the rows of a seahorse conversation deleted on its own (an orphan, or shared by deleted sessions). */
export function archiveOrphan(ctx: ArchiveContext, c: { conversationId: number; key: string }): string {
  if (!ctx.db)
    throw new GuardError(`cannot archive conversation ${c.conversationId}: seahorse.db is not open`, {
      exitCode: ExitCode.PARTIAL,
    });
  const manifest = {
    format: ARCHIVE_FORMAT,
    version: 2,
    kind: 'conversation',
    archived_at: new Date(ctx.nowMs).toISOString(),
    home: ctx.homeReal,
    agent: null,
    sessions_dir: null,
    base: null,
    key: c.key,
    aliases: [] as string[],
  } as const;
  try {
    return writeArchive(ctx, `conversation-${c.conversationId}`, manifest, [], [c.conversationId]);
  } catch (err) {
    throw failed(`seahorse conversation ${c.key}`, ctx.dir, err);
  }
}

/** Remove an archive of something that was kept after all (it would only be a stale copy). */
export function removeArchive(path: string): void {
  unlinkQuiet(path);
}
