import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import type { Readable } from 'node:stream';
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
  type ArchivedFileInfo,
  type Obj,
  type ArchiveInfo,
} from './archive-fields.js';

/**
 * Reading archives, both formats, without trusting them: everything is decompressed
 * as a stream with a cap on the output (a gzip bomb stops at the cap, in bounded
 * memory), the shape is validated field by field before anything is used, and every
 * file is checked against its SHA-256.
 *   - `.tar.gz` (version 2): manifest.json first, then session/<base>.meta.json,
 *     session/<base>.jsonl and seahorse/rows.jsonl, each exactly as the manifest says.
 *   - `.session.json.gz` (version 1, earlier releases): one JSON object with the files
 *     base64-encoded; read whole, so it has a smaller cap.
 */
export const MANIFEST_MAX_BYTES = 1 << 20;
/** A version-1 archive is one JSON document, parsed whole: the earlier writer never made one this large. */
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

/** Validate a version-1 document; returns its info and the decoded files. */
function validateLegacy(path: string, a: unknown): { info: ArchiveInfo; data: Map<'jsonl' | 'meta', Buffer> } {
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
  };
  if (!isObj(a.files)) throw new ArchiveInvalid(path, 'files', 'must be an object');
  const data = new Map<'jsonl' | 'meta', Buffer>();
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
    if (typeof f.data_base64 !== 'string') throw new ArchiveInvalid(path, `${field}.data_base64`, 'must be a string');
    const b = Buffer.from(f.data_base64, 'base64');
    if (createHash('sha256').update(b).digest('hex') !== f.sha256)
      throw new ArchiveInvalid(
        path,
        `${field}.sha256`,
        'does not match the data (the archive is damaged or was altered)',
      );
    data.set(role, b);
    info.files.push({
      role,
      name: `${SESSION_PREFIX}${base}${suffix}`,
      bytes: b.length,
      sha256: f.sha256,
      mode: 0o644,
    });
  }
  return { info, data };
}

/** Writing a file out failed (no room, no permission): not the archive's fault. */
class SinkFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('writing a restored file failed');
  }
}

export type FileSink = (f: ArchivedFileInfo, data: Readable) => Promise<void>;

/**
 * Walk a version-2 archive: validate the manifest (first entry), check every entry
 * against it (name, size, SHA-256). With a sink, each session file is also handed
 * to it as a stream (the sink must consume it).
 */
async function walkTar(path: string, sink: FileSink | null): Promise<ArchiveInfo> {
  let info: ArchiveInfo | null = null;
  let rows: { bytes: number; sha256: string } | null = null;
  const seen = new Set<string>();
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
      const h = createHash('sha256');
      // Listen for the end before anyone reads: tar-stream's entry streams have no readableEnded.
      const ended = new Promise<void>((res, rej) => stream.once('end', res).once('error', rej));
      stream.on('data', (c: Buffer) => h.update(c));
      if (file && sink) {
        try {
          await sink(file, stream);
        } catch (err) {
          throw new SinkFailed(err);
        }
      } else stream.resume();
      await ended;
      if (h.digest('hex') !== want.sha256)
        throw new ArchiveInvalid(
          path,
          JSON.stringify(name),
          'does not match its SHA-256 in the manifest (the archive is damaged or was altered)',
        );
    };
    handle().then(
      () => next(),
      (err: unknown) => {
        stream.resume();
        ex.destroy(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
  try {
    await pipeline(gunzipCapped(path, TAR_MAX_BYTES + (64 << 20)), ex);
  } catch (err) {
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
  return done;
}

async function readLegacy(path: string) {
  let doc: unknown;
  try {
    doc = JSON.parse((await collect(gunzipCapped(path, LEGACY_MAX_BYTES))).toString('utf8'));
  } catch (err) {
    if (err instanceof ArchiveInvalid) throw err;
    throw new ArchiveInvalid(
      path,
      'the archive',
      `is not a readable gzip JSON archive (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  return validateLegacy(path, doc);
}

/** Read and check a whole archive (shape and every SHA-256); restores nothing. */
export async function inspectArchive(path: string): Promise<ArchiveInfo> {
  if (path.endsWith(LEGACY_SUFFIX)) return (await readLegacy(path)).info;
  return walkTar(path, null);
}

/** Read an archive again, handing each session file to the sink; every check runs again. */
export async function readArchiveFiles(path: string, sink: FileSink): Promise<ArchiveInfo> {
  if (!path.endsWith(LEGACY_SUFFIX)) return walkTar(path, sink);
  const { info, data } = await readLegacy(path);
  const { Readable } = await import('node:stream');
  for (const f of info.files) await sink(f, Readable.from([data.get(f.role)!]));
  return info;
}
