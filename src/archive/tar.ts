import { createHash } from 'node:crypto';
import { readSync, writeSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { paxPathRecord, ustarHeader } from './tar-header.js';

/**
 * The archive writer's byte level: a tar stream gzip-compressed block by block (so a reader can
 * stream it and memory stays at one block, whatever the session's size), and SHA-256 of files read
 * in small pieces.
 */

export const GZ_BLOCK = 1 << 20;
export const IO_BUF = 1 << 16;
export const sha256 = () => createHash('sha256');

/**
 * One gzip block and one read buffer are kept between archives and lent to one user at a time
 * (a user that throws simply does not give its buffer back). A pass archives thousands of small
 * sessions: a fresh 1 MiB block and 64 KiB buffers for each would wait as garbage for V8 to notice
 * them, each leaving the pages it touched resident.
 */
const spares: { block: Buffer | null; io: Buffer | null } = { block: null, io: null };

function borrow(kind: 'block' | 'io'): Buffer {
  const b = spares[kind];
  spares[kind] = null;
  return b ?? Buffer.allocUnsafe(kind === 'block' ? GZ_BLOCK : IO_BUF);
}

/** A pass's archives are written: let the kept buffers go (the report comes next, in the room they held). */
export function releaseArchiveBuffers(): void {
  spares.block = null;
  spares.io = null;
}

/** The bytes of the buffers kept for the next archive. */
export function archiveBuffersHeld(): number {
  return (spares.block?.length ?? 0) + (spares.io?.length ?? 0);
}

export function writeAll(fd: number, b: Buffer): void {
  let off = 0;
  while (off < b.length) off += writeSync(fd, b, off, b.length - off);
}

/** A tar stream compressed block by block into independent gzip members. */
export class GzipTarWriter {
  private buf = borrow('block');
  private len = 0;
  private offset = 0;
  /** SHA-256 of the compressed bytes, to compare with what the disk gives back. */
  readonly gzHash = sha256();
  constructor(private readonly fd: number) {}

  get bytesWritten(): number {
    return this.offset;
  }

  write(data: Buffer): void {
    let off = 0;
    while (off < data.length) {
      const n = Math.min(GZ_BLOCK - this.len, data.length - off);
      data.copy(this.buf, this.len, off, off + n);
      this.len += n;
      off += n;
      if (this.len === GZ_BLOCK) this.flush();
    }
  }

  private flush(): void {
    if (this.len === 0) return;
    const gz = gzipSync(this.buf.subarray(0, this.len));
    writeAll(this.fd, gz);
    this.gzHash.update(gz);
    this.offset += gz.length;
    this.len = 0;
  }

  header(name: string, size: number, mtime: Date, mode = 0o600): void {
    const h = { name, size, mode, mtime, type: 'file' as const };
    const plain = ustarHeader(h);
    if (plain) return this.write(plain);
    // A name ustar cannot hold (long, or not ASCII): a pax record carries it.
    const pax = paxPathRecord(name);
    this.write(ustarHeader({ ...h, name: 'PaxHeader', size: pax.length, type: 'pax-header' })!);
    this.write(pax);
    this.pad(pax.length);
    this.write(ustarHeader({ ...h, name: name.replace(/[^\x20-\x7e]/g, '_').slice(-99) })!);
  }

  pad(size: number): void {
    const rest = size % 512;
    if (rest) this.write(Buffer.alloc(512 - rest));
  }

  end(): void {
    this.write(Buffer.alloc(1024));
    this.flush();
    // end() is a writer's last call: its block goes back for the next archive.
    spares.block = this.buf;
  }
}

/** SHA-256 of the first `size` bytes of an open file, read in small pieces. */
export function hashFd(fd: number, size: number, onChunk?: (b: Buffer) => void): string {
  const h = sha256();
  const b = borrow('io');
  let pos = 0;
  while (pos < size) {
    const n = readSync(fd, b, 0, Math.min(IO_BUF, size - pos), pos);
    if (n === 0) throw new Error('the file shrank while it was being archived');
    const chunk = b.subarray(0, n);
    h.update(chunk);
    onChunk?.(chunk);
    pos += n;
  }
  spares.io = b;
  return h.digest('hex');
}
