import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { formatBytes } from '../io/bytes.js';
import { ARCHIVE_FORMAT, LEGACY_SUFFIX, MANIFEST_NAME, ROWS_NAME, SESSION_PREFIX } from './archive.js';
import {
  aliasesOf,
  ARCHIVE_BYTES,
  ArchiveInvalid,
  collect,
  gunzipCapped,
  HEX64,
  isObj,
  stamp,
  str,
  type Obj,
  type ArchiveInfo,
} from './fields.js';
import { LegacyDocParser, StreamedData } from './legacy.js';
import { FileTap, lifeOf, noLife, SinkFailed, type FileSink } from './life.js';
import { openArchive } from './open.js';

export { fileKind, openArchive } from './open.js';
export type { FileSink } from './life.js';

/**
 * Reading archives, both formats, without trusting them: everything is decompressed
 * as a stream with a cap on the output (a gzip bomb stops at the cap, in bounded
 * memory), the shape is validated field by field before anything is used, and every
 * file is checked against its SHA-256.
 *   - `.tar.gz` (version 2): manifest.json first, then session/<base>.meta.json,
 *     session/<base>.jsonl and seahorse/rows.jsonl, each exactly as the manifest says.
 *   - `.session.json.gz` (version 1, earlier releases): one JSON object with the files
 *     base64-encoded, parsed as a stream (./archive-legacy.ts), the two files decoded piece by
 *     piece: memory is bounded by a chunk, not by what the archive expands to.
 * Nothing in an archive folder can block a read: an archive is opened non-blocking after a
 * stat, and must be a regular file by fstat of what was opened (a FIFO, a device, or a symlink
 * to one, named *.tar.gz, is refused with its type, never read).
 */
export const MANIFEST_MAX_BYTES = 1 << 20;
/** A version-1 archive is one JSON document: the earlier writer never made one this large. */
export const LEGACY_MAX_BYTES = 256 << 20;
/** What a version-2 archive may declare in all; its entries are streamed, so this bounds time, not memory. */
export const TAR_MAX_BYTES = 4 * 1024 ** 3;

/** Validate a version-2 manifest. */
export function validateManifest(path: string, m: unknown): ArchiveInfo {
  if (!isObj(m)) throw new ArchiveInvalid(path, MANIFEST_NAME, 'is not a JSON object');
  if (m.format !== ARCHIVE_FORMAT) throw new ArchiveInvalid(path, 'format', `is not "${ARCHIVE_FORMAT}"`);
  if (m.version !== 2)
    throw new ArchiveInvalid(
      path,
      'version',
      `${JSON.stringify(m.version)} is not a version this release reads (1 or 2)`,
    );
  if (m.kind !== 'session' && m.kind !== 'conversation')
    throw new ArchiveInvalid(path, 'kind', 'must be "session" or "conversation"');
  const home = str(path, m, 'home')!;
  if (!isAbsolute(home)) throw new ArchiveInvalid(path, 'home', 'must be an absolute path');
  const session = m.kind === 'session';
  const info: ArchiveInfo = {
    path,
    format: 'tar.gz',
    kind: m.kind,
    archivedAt: stamp(path, m, 'archived_at'),
    home,
    sessionsDir: str(path, m, 'sessions_dir', { nullable: !session }),
    agent: str(path, m, 'agent', { nullable: !session, name: 'agent' }),
    base: str(path, m, 'base', { nullable: !session, name: 'base' }),
    key: str(path, m, 'key')!,
    aliases: aliasesOf(path, m),
    files: [],
    life: noLife(),
  };
  if (!Array.isArray(m.files)) throw new ArchiveInvalid(path, 'files', 'must be a list');
  m.files.forEach((f, i) => {
    const field = `files[${i}]`;
    if (!isObj(f)) throw new ArchiveInvalid(path, field, 'must be an object');
    if (f.role !== 'jsonl' && f.role !== 'meta')
      throw new ArchiveInvalid(path, `${field}.role`, 'must be "jsonl" or "meta"');
    const want = `${SESSION_PREFIX}${info.base}${f.role === 'jsonl' ? '.jsonl' : '.meta.json'}`;
    if (f.name !== want) throw new ArchiveInvalid(path, `${field}.name`, `must be ${JSON.stringify(want)}`);
    if (!Number.isSafeInteger(f.bytes) || (f.bytes as number) < 0)
      throw new ArchiveInvalid(path, `${field}.bytes`, 'must be a whole number');
    if (typeof f.sha256 !== 'string' || !HEX64.test(f.sha256))
      throw new ArchiveInvalid(path, `${field}.sha256`, 'must be 64 hex digits');
    if (info.files.some((x) => x.role === f.role))
      throw new ArchiveInvalid(path, `${field}.role`, `"${f.role}" is listed twice`);
    if (f.mode !== undefined && (!Number.isInteger(f.mode) || (f.mode as number) < 0 || (f.mode as number) > 0o777))
      throw new ArchiveInvalid(path, `${field}.mode`, 'must be permission bits (0 to 0777)');
    // Never more than read-write for the owner and read for others, whatever the archive says.
    const mode = f.mode === undefined ? 0o644 : ((f.mode as number) & 0o644) | 0o600;
    info.files.push({ role: f.role, name: want, bytes: f.bytes as number, sha256: f.sha256, mode });
  });
  if (session && !info.files.some((f) => f.role === 'meta'))
    throw new ArchiveInvalid(path, 'files', 'has no meta file');
  if (!session && info.files.length > 0) throw new ArchiveInvalid(path, 'files', 'must be empty for a conversation');
  if (m.seahorse !== null && m.seahorse !== undefined) {
    const s = m.seahorse;
    if (
      !isObj(s) ||
      s.name !== ROWS_NAME ||
      !Number.isSafeInteger(s.bytes) ||
      typeof s.sha256 !== 'string' ||
      !HEX64.test(s.sha256)
    ) {
      throw new ArchiveInvalid(path, 'seahorse', `must name ${ROWS_NAME} with its bytes and sha256`);
    }
  }
  const total = info.files.reduce((n, f) => n + f.bytes, 0) + (isObj(m.seahorse) ? (m.seahorse.bytes as number) : 0);
  if (total > TAR_MAX_BYTES)
    throw new ArchiveInvalid(
      path,
      'files',
      `declare ${formatBytes(total, ARCHIVE_BYTES)}: too large to restore (limit ` +
        `${formatBytes(TAR_MAX_BYTES, ARCHIVE_BYTES)})`,
    );
  return info;
}

/** Validate a version-1 document (the files' data already streamed out and hashed). */
function validateLegacy(path: string, a: unknown, hashes: Map<'jsonl' | 'meta', string>): ArchiveInfo {
  if (!isObj(a)) throw new ArchiveInvalid(path, 'the document', 'is not a JSON object');
  if (a.format !== ARCHIVE_FORMAT) throw new ArchiveInvalid(path, 'format', `is not "${ARCHIVE_FORMAT}"`);
  if (a.version !== 1) throw new ArchiveInvalid(path, 'version', `${JSON.stringify(a.version)} is not 1`);
  const base = str(path, a, 'base', { name: 'base' })!;
  const info: ArchiveInfo = {
    path,
    format: 'json.gz',
    kind: 'session',
    archivedAt: stamp(path, a, 'archived_at'),
    home: null,
    sessionsDir: str(path, a, 'sessions_dir')!,
    agent: str(path, a, 'agent', { name: 'agent' }),
    base,
    key: str(path, a, 'key')!,
    aliases: aliasesOf(path, a),
    files: [],
    life: noLife(),
  };
  if (!isObj(a.files)) throw new ArchiveInvalid(path, 'files', 'must be an object');
  for (const role of ['meta', 'jsonl'] as const) {
    const f = a.files[role];
    const field = `files.${role}`;
    if (f === null && role === 'jsonl') continue;
    if (!isObj(f)) throw new ArchiveInvalid(path, field, 'must be an object');
    const suffix = role === 'jsonl' ? '.jsonl' : '.meta.json';
    if (f.name !== `${base}${suffix}`)
      throw new ArchiveInvalid(path, `${field}.name`, `must be ${JSON.stringify(base + suffix)}`);
    if (typeof f.sha256 !== 'string' || !HEX64.test(f.sha256))
      throw new ArchiveInvalid(path, `${field}.sha256`, 'must be 64 hex digits');
    const data = f.data_base64;
    // A short string value (one that was not where the data goes) is still data: JSON.parse's reader took it.
    const bytes = data instanceof StreamedData ? data.bytes : typeof data === 'string' ? -1 : null;
    if (bytes === null) throw new ArchiveInvalid(path, `${field}.data_base64`, 'must be a string');
    if (hashes.get(role) !== f.sha256)
      throw new ArchiveInvalid(
        path,
        `${field}.sha256`,
        'does not match the data (the archive is damaged or was altered)',
      );
    info.files.push({ role, name: `${SESSION_PREFIX}${base}${suffix}`, bytes, sha256: f.sha256, mode: 0o644 });
  }
  return info;
}

/**
 * Walk a version-2 archive: validate the manifest (first entry), check every entry
 * against it (name, size, SHA-256). Each session file is tapped (facts) and, with a
 * sink, handed to it piece by piece.
 */
async function walkTar(path: string, fd: number, sink: FileSink | null): Promise<ArchiveInfo> {
  let info: ArchiveInfo | null = null;
  let rows: { bytes: number; sha256: string } | null = null;
  let meta: Buffer | null = null;
  let lines = 0;
  const seen = new Set<string>();
  // The first failure of an entry is the one to tell (tearing the extractor down may make it fail on
  // its own, with a less telling "premature close").
  let failure: unknown = null;
  const ex = extract();
  ex.on('entry', (header, stream, next) => {
    const handle = async () => {
      const name = header.name;
      if (info === null) {
        if (name !== MANIFEST_NAME)
          throw new ArchiveInvalid(
            path,
            MANIFEST_NAME,
            `must be the first entry (found ${JSON.stringify(name).slice(0, 60)})`,
          );
        if ((header.size ?? 0) > MANIFEST_MAX_BYTES)
          throw new ArchiveInvalid(path, MANIFEST_NAME, 'is larger than 1 MiB');
        let m: unknown;
        try {
          m = JSON.parse((await collect(stream)).toString('utf8'));
        } catch (err) {
          if (err instanceof ArchiveInvalid) throw err;
          throw new ArchiveInvalid(path, MANIFEST_NAME, 'is not valid JSON');
        }
        info = validateManifest(path, m);
        const s = (m as Obj).seahorse;
        rows = isObj(s) ? { bytes: s.bytes as number, sha256: s.sha256 as string } : null;
        return;
      }
      if (header.type !== 'file')
        throw new ArchiveInvalid(path, JSON.stringify(name), `is a ${header.type}, not a file`);
      if (seen.has(name)) throw new ArchiveInvalid(path, JSON.stringify(name), 'appears twice');
      seen.add(name);
      const file = info.files.find((f) => f.name === name);
      const want = file ?? (name === ROWS_NAME && rows ? { role: null, name, ...rows } : null);
      if (!want) throw new ArchiveInvalid(path, JSON.stringify(name), 'is not listed in the manifest');
      if (header.size !== want.bytes)
        throw new ArchiveInvalid(
          path,
          JSON.stringify(name),
          `holds ${header.size} bytes, the manifest says ${want.bytes}`,
        );
      const tap = file ? new FileTap(path, file.role, sink ? openSink(sink, file.role) : null) : null;
      const h = tap ? null : createHash('sha256');
      // Each piece is consumed synchronously (hashed, written): the entry streams no faster than it is written.
      await new Promise<void>((res, rej) => {
        stream.on('data', (c: Buffer) => {
          try {
            if (tap) tap.write(c);
            else h!.update(c);
          } catch (err) {
            // Told first, before the extractor is torn down with it.
            failure ??= err;
            stream.removeAllListeners('data');
            rej(err instanceof Error ? err : new Error(String(err)));
          }
        });
        stream.once('end', res).once('error', rej);
      });
      const got = tap ? tap.finish() : { sha256: h!.digest('hex'), meta: null, lines: 0 };
      if (got.sha256 !== want.sha256)
        throw new ArchiveInvalid(
          path,
          JSON.stringify(name),
          'does not match its SHA-256 in the manifest (the archive is damaged or was altered)',
        );
      if (file?.role === 'meta') meta = got.meta;
      if (file?.role === 'jsonl') lines = got.lines;
    };
    handle().then(
      () => next(),
      (err: unknown) => {
        failure ??= err;
        stream.resume();
        ex.destroy(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
  try {
    await pipeline(gunzipCapped(path, TAR_MAX_BYTES + (64 << 20), fd), ex);
  } catch (caught) {
    const err = failure ?? caught;
    if (err instanceof ArchiveInvalid) throw err;
    if (err instanceof SinkFailed) throw err.cause;
    throw new ArchiveInvalid(
      path,
      'the archive',
      `is not a readable .tar.gz (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (!info) throw new ArchiveInvalid(path, MANIFEST_NAME, 'is missing');
  const done: ArchiveInfo = info;
  for (const f of done.files)
    if (!seen.has(f.name))
      throw new ArchiveInvalid(path, JSON.stringify(f.name), 'is listed in the manifest but missing');
  if (rows && !seen.has(ROWS_NAME))
    throw new ArchiveInvalid(path, JSON.stringify(ROWS_NAME), 'is listed in the manifest but missing');
  done.life = lifeOf(done, meta, lines);
  return done;
}

/** The sink's writer for a file; its failure (no room for a temp file...) is not the archive's fault. */
function openSink(sink: FileSink, role: 'jsonl' | 'meta') {
  try {
    return sink(role);
  } catch (err) {
    throw new SinkFailed(err);
  }
}

/** Read a version-1 archive as a stream: the document parsed piece by piece, its two files tapped as they decode. */
async function walkLegacy(path: string, fd: number, sink: FileSink | null): Promise<ArchiveInfo> {
  const taps = new Map<'jsonl' | 'meta', FileTap>();
  const parser = new LegacyDocParser((role) => {
    const tap = new FileTap(path, role, sink ? openSink(sink, role) : null);
    taps.set(role, tap);
    return tap;
  });
  let doc: unknown;
  try {
    for await (const c of gunzipCapped(path, LEGACY_MAX_BYTES, fd)) parser.write(c as Buffer);
    doc = parser.end();
  } catch (err) {
    if (err instanceof ArchiveInvalid) throw err;
    if (err instanceof SinkFailed) throw err.cause;
    throw new ArchiveInvalid(
      path,
      'the archive',
      `is not a readable gzip JSON archive (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const got = new Map([...taps].map(([role, t]) => [role, t.finish()]));
  const info = validateLegacy(path, doc, new Map([...got].map(([role, g]) => [role, g.sha256])));
  // A data_base64 too short to be streamed cannot occur (every one is); sizes come from the taps.
  for (const f of info.files) f.bytes = got.get(f.role)?.bytes ?? 0;
  info.life = lifeOf(info, got.get('meta')?.meta ?? null, got.get('jsonl')?.lines ?? 0);
  return info;
}

/**
 * Read an archive and check it whole (shape and every SHA-256), handing each session file to
 * the sink as it streams (none: only checked). The sink's files are complete and correct only
 * once this resolves: a caller links nothing before.
 */
export async function readArchiveFiles(path: string, sink: FileSink | null = null): Promise<ArchiveInfo> {
  const fd = openArchive(path);
  // The read stream closes fd when it ends or fails.
  if (path.endsWith(LEGACY_SUFFIX)) return walkLegacy(path, fd, sink);
  return walkTar(path, fd, sink);
}

/** Read and check a whole archive; restores nothing. */
export async function inspectArchive(path: string): Promise<ArchiveInfo> {
  return readArchiveFiles(path, null);
}
