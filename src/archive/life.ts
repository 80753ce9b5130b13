import { createHash, type Hash } from 'node:crypto';
import { ArchiveInvalid, isObj, type ArchiveInfo, type LifeFacts } from './fields.js';
import type { DataWriter } from './legacy.js';

/**
 * What an archive holds of a session's life, learned as its files stream past (./archive-read.ts):
 * each file's SHA-256 and size, the .jsonl's messages (non-empty lines), the meta's few facts.
 */
export const noLife = (): LifeFacts => ({
  messages: 0,
  bytes: 0,
  metaCount: null,
  metaCreatedAt: null,
  metaUpdatedAt: null,
  metaProblem: null,
  complete: false,
  meta: null,
});

/** Writing a file out failed (no room, no permission): not the archive's fault. */
export class SinkFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('writing a restored file failed');
  }
}

/** Where each session file of an archive goes as it is read: called when the file starts. */
export type FileSink = (role: 'jsonl' | 'meta') => DataWriter;

/** The meta is read whole to learn the life's facts; a meta beyond this is not one PicoClaw wrote. */
export const META_MAX_BYTES = 16 << 20;

/**
 * Each file of an archive as it streams: its SHA-256, its size, the .jsonl's lines, the meta's
 * bytes (small); and the caller's sink, which receives the same bytes.
 */
export class FileTap {
  readonly h: Hash = createHash('sha256');
  bytes = 0;
  lines = 0;
  private lineLen = 0;
  private meta: Buffer[] | null;
  constructor(
    readonly path: string,
    readonly role: 'jsonl' | 'meta',
    private readonly out: DataWriter | null,
  ) {
    this.meta = role === 'meta' ? [] : null;
  }
  write(b: Buffer): void {
    this.h.update(b);
    this.bytes += b.length;
    if (this.meta) {
      if (this.bytes > META_MAX_BYTES)
        throw new ArchiveInvalid(this.path, 'the meta file', 'is larger than 16 MiB: not one PicoClaw wrote');
      this.meta.push(Buffer.from(b));
    } else {
      let at = 0;
      for (;;) {
        const nl = b.indexOf(10, at);
        if (nl < 0) break;
        if (this.lineLen + (nl - at) > 0) this.lines++;
        this.lineLen = 0;
        at = nl + 1;
      }
      this.lineLen += b.length - at;
    }
    if (this.out) {
      try {
        this.out.write(b);
      } catch (err) {
        throw new SinkFailed(err);
      }
    }
  }
  finish(): { sha256: string; bytes: number; lines: number; meta: Buffer | null } {
    if (this.lineLen > 0) this.lines++;
    this.lineLen = 0;
    return {
      sha256: this.h.digest('hex'),
      bytes: this.bytes,
      lines: this.lines,
      meta: this.meta && Buffer.concat(this.meta),
    };
  }
}

/** The facts of a life from its files as read (the meta parsed here, never trusted further). */
export function lifeOf(info: ArchiveInfo, meta: Buffer | null, lines: number): LifeFacts {
  const life = noLife();
  life.bytes = info.files.reduce((n, f) => n + f.bytes, 0);
  life.messages = lines;
  life.meta = meta;
  let m: unknown = undefined;
  if (meta) {
    try {
      m = JSON.parse(meta.toString('utf8'));
    } catch {
      life.metaProblem = 'is not valid JSON: PicoClaw would not list the session';
    }
  }
  if (!life.metaProblem && (!isObj(m) || m.key !== info.key))
    life.metaProblem = `does not hold the key ${JSON.stringify(info.key)}`;
  if (isObj(m)) {
    if (Number.isSafeInteger(m.count)) life.metaCount = m.count as number;
    if (typeof m.created_at === 'string') life.metaCreatedAt = m.created_at;
    if (typeof m.updated_at === 'string') life.metaUpdatedAt = m.updated_at;
  }
  const hasJsonl = info.files.some((f) => f.role === 'jsonl');
  life.complete =
    info.kind === 'session' &&
    (hasJsonl || (life.metaCount ?? 0) - (isObj(m) && Number.isSafeInteger(m.skip) ? (m.skip as number) : 0) <= 0);
  return life;
}
