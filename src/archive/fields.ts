import { constants, createReadStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { formatBytes, type ByteFormat } from '../io/bytes.js';
import { NotRegular, openRegular } from '../io/regular-file.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * What reading an archive is made of, whichever its format: the description it yields, the error
 * that names the archive and the field, the field checks (strings, safe names, dates, aliases), and
 * decompression with a cap on the output.
 */

export interface ArchivedFileInfo {
  role: 'jsonl' | 'meta';
  /** The name inside the archive. */
  name: string;
  bytes: number;
  sha256: string;
  /** Permission bits to restore (0644, PicoClaw's, when the archive does not say). */
  mode: number;
}

export interface ArchiveInfo {
  path: string;
  format: 'tar.gz' | 'json.gz';
  kind: 'session' | 'conversation';
  archivedAt: string;
  /** Real path of the home it was taken from (version 2 only). */
  home: string | null;
  sessionsDir: string | null;
  agent: string | null;
  base: string | null;
  key: string;
  aliases: string[];
  files: ArchivedFileInfo[];
  /** What the archive holds of the session's life, read as it is checked (./archive-read.ts). */
  life: LifeFacts;
}

/** How much of a session's life an archive holds. */
export interface LifeFacts {
  /** Non-empty lines of the archived .jsonl (0 without one). */
  messages: number;
  /** Bytes of the archived files. */
  bytes: number;
  /** The archived meta's count, created_at and updated_at, when it says. */
  metaCount: number | null;
  metaCreatedAt: string | null;
  metaUpdatedAt: string | null;
  /** The meta is JSON with the archive's key (else it cannot be restored: PicoClaw would not list it). */
  metaProblem: string | null;
  /**
   * The whole session: a .jsonl, or a meta that counts no message. An archive written after an
   * interrupted deletion (older releases) holds only the meta of a session that had messages.
   */
  complete: boolean;
  /** The archived meta's bytes (small); dropped by a reader that keeps many archives' facts. */
  meta: Buffer | null;
}

/** A crafted or damaged archive: names the archive and the field. */
export class ArchiveInvalid extends Error {
  constructor(
    readonly archive: string,
    readonly field: string,
    what: string,
  ) {
    super(`${archive}: ${field} ${what}`);
    this.name = 'ArchiveInvalid';
  }
}

/** Archive sizes read in MiB or GiB, one decimal ("0.0 MiB free"), beside limits of hundreds of MiB. */
export const ARCHIVE_BYTES: Readonly<ByteFormat> = Object.freeze({ smallest: 'MiB', largest: 'GiB', decimals: 1 });

export const HEX64 = /^[0-9a-f]{64}$/;
// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f]/;

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `name: 'agent'` is an agent id (strict: it names a folder); `name: 'base'` is a session's file
 * base, which is whatever PicoClaw's sanitizeKey leaves of the key (only `:`, `/` and `\` are
 * replaced), so control characters and a leading dot are legal there: refusing them would make a
 * deleted session impossible to restore. A path separator, NUL, `.`/`..` or an over-long name never is.
 */
export function str(
  path: string,
  o: Obj,
  field: string,
  opts: { nullable?: boolean; name?: 'agent' | 'base' } = {},
): string | null {
  const v = o[field.replace(/^.*\./, '')];
  if (v === null && opts.nullable) return null;
  if (typeof v !== 'string')
    throw new ArchiveInvalid(
      path,
      field,
      `must be a string, not ${v === undefined ? 'missing' : JSON.stringify(v)?.slice(0, 40)}`,
    );
  if (v.length === 0 || v.includes('\0')) throw new ArchiveInvalid(path, field, 'is empty or holds a NUL byte');
  const unsafe =
    opts.name === 'agent'
      ? v.includes('/') || v.includes('\\') || v.startsWith('.') || CONTROL.test(v) || Buffer.byteLength(v) > 245
      : opts.name === 'base'
        ? v.includes('/') || v === '.' || v === '..' || Buffer.byteLength(v) > 245
        : false;
  if (unsafe) {
    throw new ArchiveInvalid(
      path,
      field,
      `${JSON.stringify(v)} is not a safe file or folder name (a path separator, ` +
        `${opts.name === 'agent' ? 'a leading dot, a control character, ' : '"." or "..", '}` +
        `or too long)`,
    );
  }
  return v;
}

export function stamp(path: string, o: Obj, field: string): string {
  const v = str(path, o, field)!;
  if (!Number.isFinite(instantMs(v)))
    throw new ArchiveInvalid(path, field, `is not a date (${JSON.stringify(v).slice(0, 40)})`);
  return v;
}

export function aliasesOf(path: string, o: Obj): string[] {
  const v = o.aliases ?? [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw new ArchiveInvalid(path, 'aliases', 'must be a list of strings');
  return v;
}

/** The archive's bytes, decompressed as a stream that fails once more than `cap` bytes come out. */
export function gunzipCapped(path: string, cap: number, fd?: number): Readable {
  let n = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > cap)
        cb(
          new ArchiveInvalid(
            path,
            'the archive',
            `decompresses to more than ${formatBytes(cap, ARCHIVE_BYTES)}: too large (a damaged or hostile archive?); nothing was restored from ` +
              `it`,
          ),
        );
      else cb(null, chunk);
    },
  });
  // The caller's descriptor (restore opens each archive non-blocking and checks its type: ./archive-open.ts),
  // else opened here the same way: a stream's own open of a FIFO waits for a writer on libuv's thread pool,
  // and the command never ends.
  if (fd === undefined) {
    try {
      fd = openRegular(path, constants.O_RDONLY);
    } catch (err) {
      const why =
        err instanceof NotRegular ? `is ${err.type}, not a regular file` : `cannot be opened (${String(err)})`;
      queueMicrotask(() => counter.destroy(new ArchiveInvalid(path, 'the archive', why)));
      return counter;
    }
  }
  const src = createReadStream('', { fd, autoClose: true });
  const gz = createGunzip();
  pipeline(src, gz, counter).catch((err: unknown) =>
    counter.destroy(err instanceof Error ? err : new Error(String(err))),
  );
  return counter;
}

export async function collect(s: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}
