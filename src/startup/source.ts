import { constants, createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { errnoCode } from '../errors.js';
import { openRegular } from '../io/regular-file.js';
import { keptParts } from '../picoclaw/gatewaylog/parts.js';
import type { LogSource } from './types.js';

/**
 * The byte sources of the startup analysis: a file read by position (so a copy-and-truncate
 * rotation under the reader is seen), a descriptor read in order (standard input), or a
 * stream of chunks. Each yields chunks into reused buffers: a chunk is valid only until the
 * next one is asked for.
 *
 * A file is read after its kept parts (`gateway.log.<n>.gz`, written when the guard cuts the
 * log: src/logs/cut.ts), oldest first, so a restart whose lines were cut off the file is still
 * in the report. Each part ends at a line end.
 */

/** Reads between two size checks of the file being read (copy-and-truncate detection). */
const STAT_EVERY = 8;

/** What the reader saw of its source: bytes read, and a truncation or rewrite under it. */
export interface ReadState {
  bytesRead: number;
  /** The kept parts read before the file (bytes once uncompressed), and why one could not be read to its end. */
  parts: { path: string; bytes: number; error: string | null }[];
  truncated: { at_byte: number; size_after: number } | null;
  replaced: boolean;
}

export function newReadState(): ReadState {
  return { bytesRead: 0, parts: [], truncated: null, replaced: false };
}

/** The chunks of any source; what the reader saw goes to `rs`. */
export function chunksOf(source: LogSource, chunkBytes: number, rs: ReadState): AsyncGenerator<Buffer> {
  if ('path' in source) return partsThenFile(source.path, source.parts !== false, chunkBytes, rs);
  if ('fd' in source) return fdChunks(source.fd, chunkBytes, rs);
  return streamChunks(source.stream, rs);
}

async function* partsThenFile(path: string, parts: boolean, chunkBytes: number, rs: ReadState): AsyncGenerator<Buffer> {
  if (parts) {
    for (const p of keptParts(path)) {
      const entry = { path: p.path, bytes: 0, error: null as string | null };
      rs.parts.push(entry);
      try {
        // Opened non-blocking and checked to be a regular file: a FIFO named like a part never blocks the report.
        const fd = openRegular(p.path, constants.O_RDONLY);
        const src = createReadStream('', { fd, autoClose: true });
        for await (const chunk of src.pipe(createGunzip()) as AsyncIterable<Buffer>) {
          entry.bytes += chunk.length;
          rs.bytesRead += chunk.length;
          yield chunk;
        }
      } catch (err) {
        entry.error = errnoCode(err) ?? (err instanceof Error ? err.message : String(err));
        // A part cut short: its last line ends here, so the next part's first line stays whole.
        if (entry.bytes > 0) yield Buffer.from('\n');
      }
    }
  }
  const base = rs.bytesRead;
  try {
    yield* fileChunks(path, chunkBytes, rs, base);
  } catch (err) {
    // The log itself is gone (the gateway has not started since): the parts are the report.
    if (base > 0 && errnoCode(err) === 'ENOENT') return;
    throw err;
  }
}

async function* fileChunks(path: string, chunkBytes: number, rs: ReadState, base: number): AsyncGenerator<Buffer> {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (a pipe is read with --log -).
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let next: Promise<{ bytesRead: number }> | null = null;
  try {
    const kind = await fh.stat();
    if (!kind.isFile()) {
      const what = kind.isDirectory() ? 'a directory' : kind.isFIFO() ? 'a FIFO' : 'a device or socket';
      throw new Error(`${what}, not a regular file`);
    }
    // Two buffers: the next read runs while the caller works on the current chunk.
    const bufs = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
    const head = Buffer.alloc(64);
    let headLen = 0;
    let which = 0;
    let offset = 0;
    let reads = 0;
    // pread at our own offset: after a truncation it returns 0 instead of new bytes mid-line.
    const readAt = (buf: Buffer, at: number) => fh.read(buf, 0, chunkBytes, at);
    next = readAt(bufs[which]!, offset);
    for (;;) {
      const { bytesRead }: { bytesRead: number } = await next;
      next = null;
      if (bytesRead === 0) break;
      const buf = bufs[which]!;
      if (offset === 0) headLen = buf.copy(head, 0, 0, Math.min(64, bytesRead));
      offset += bytesRead;
      rs.bytesRead = base + offset;
      // Checked every few chunks: after a truncation the reads at our offset return 0 anyway,
      // and the checks after the last read (size, first bytes) catch what happened in between.
      const st = ++reads % STAT_EVERY === 0 ? await fh.stat() : null;
      if (st !== null && st.size < offset) {
        // The file shrank under us: copy-and-truncate rotation. What we read is the old content.
        rs.truncated = { at_byte: offset, size_after: st.size };
        yield buf.subarray(0, bytesRead);
        return;
      }
      which ^= 1;
      next = readAt(bufs[which]!, offset);
      yield buf.subarray(0, bytesRead);
    }
    const st = await fh.stat();
    if (st.size < offset) {
      rs.truncated = { at_byte: offset, size_after: st.size };
    } else if (headLen > 0) {
      // Truncated and written again past our position between two checks: the first bytes differ.
      const again = Buffer.alloc(headLen);
      const { bytesRead } = await fh.read(again, 0, headLen, 0);
      if (bytesRead < headLen || !again.equals(head.subarray(0, headLen))) rs.replaced = true;
    }
  } finally {
    // A read still in flight (the caller stopped early) must settle before the file is closed.
    if (next !== null) await next.catch(() => undefined);
    await fh.close();
  }
}

/**
 * A descriptor read in order (no positions: it may be a pipe) into two reused buffers, so
 * standard input costs no allocation per chunk. A non-blocking pipe that has nothing yet
 * (EAGAIN) is polled again shortly.
 */
async function* fdChunks(fd: number, chunkBytes: number, rs: ReadState): AsyncGenerator<Buffer> {
  const { read } = await import('node:fs');
  const bufs = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
  let which = 0;
  const readOnce = (buf: Buffer) =>
    new Promise<number>((resolve, reject) => {
      const attempt = () =>
        read(fd, buf, 0, chunkBytes, null, (err, n) => {
          if (err && err.code === 'EAGAIN') setTimeout(attempt, 5);
          else if (err) reject(err);
          else resolve(n);
        });
      attempt();
    });
  for (;;) {
    const buf = bufs[which]!;
    const n = await readOnce(buf);
    if (n === 0) return;
    rs.bytesRead += n;
    which ^= 1;
    yield buf.subarray(0, n);
  }
}

async function* streamChunks(stream: AsyncIterable<Buffer | string>, rs: ReadState): AsyncGenerator<Buffer> {
  for await (const chunk of stream) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    rs.bytesRead += b.length;
    yield b;
  }
}
