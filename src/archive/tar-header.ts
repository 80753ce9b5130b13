/**
 * The 512-byte ustar header of one archive entry, and the pax record that carries a name ustar cannot hold
 * (POSIX.1-2001 pax, `ustar` format). Written here rather than borrowed from tar-stream's internal
 * headers.js (no public API of tar-stream 2 encodes a header without its stream); the bytes are the same as
 * that encoder's, field for field, so archives written before and after read and compare alike
 * (test/archive/tar-header.test.ts checks both, and that tar-stream's public extract() reads them back).
 */

const BLOCK = 512;
const NAME_BYTES = 100;
const PREFIX_BYTES = 155;

/** The entry types the archive writes: a regular file, and the pax extended header before one. */
export type TarEntryType = 'file' | 'pax-header';
const TYPEFLAG: Record<TarEntryType, string> = { file: '0', 'pax-header': 'x' };

export interface TarHeaderFields {
  name: string;
  size: number;
  mode: number;
  mtime: Date;
  type: TarEntryType;
}

/**
 * An octal field of `digits` digits and its space terminator; all sevens when the value does not fit
 * (what tar-stream writes; the archive keeps sizes far below the 8 GiB that 11 digits hold).
 */
function octal(value: number, digits: number): string {
  const s = value.toString(8);
  return s.length > digits ? '7'.repeat(digits) + ' ' : s.padStart(digits, '0') + ' ';
}

/**
 * The ustar header, or null when the name cannot be put in one: a character outside ASCII, or a name that no
 * split at a `/` fits in the prefix (155 bytes) and name (100 bytes) fields. The split moves leading folders to
 * the prefix one by one until the rest fits.
 */
export function ustarHeader(h: TarHeaderFields): Buffer | null {
  let name = h.name;
  let prefix = '';
  if (Buffer.byteLength(name) !== name.length) return null;
  while (name.length > NAME_BYTES) {
    const slash = name.indexOf('/');
    if (slash === -1) return null;
    prefix += prefix ? '/' + name.slice(0, slash) : name.slice(0, slash);
    name = name.slice(slash + 1);
  }
  if (prefix.length > PREFIX_BYTES) return null;
  const b = Buffer.alloc(BLOCK);
  b.write(name, 0, 'latin1');
  b.write(octal(h.mode & 0o7777, 6), 100, 'latin1');
  b.write(octal(0, 6), 108, 'latin1'); // uid
  b.write(octal(0, 6), 116, 'latin1'); // gid
  b.write(octal(h.size, 11), 124, 'latin1');
  b.write(octal((h.mtime.getTime() / 1000) | 0, 11), 136, 'latin1');
  b.write(TYPEFLAG[h.type], 156, 'latin1');
  b.write('ustar\x0000', 257, 'latin1'); // magic and version
  b.write(octal(0, 6), 329, 'latin1'); // devmajor
  b.write(octal(0, 6), 337, 'latin1'); // devminor
  if (prefix) b.write(prefix, 345, 'latin1');
  // The checksum counts its own 8 bytes as spaces.
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += b[i]!;
  b.write(octal(sum, 6), 148, 'latin1');
  return b;
}

/** One pax record, `<length> path=<name>\n`, whose decimal length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bytes = Buffer.byteLength(body);
  let digits = String(bytes).length;
  if (bytes + digits >= 10 ** digits) digits++;
  return `${bytes + digits}${body}`;
}

/** The pax extended header's data for a name ustar cannot hold (UTF-8, any length). */
export function paxPathRecord(name: string): Buffer {
  return Buffer.from(paxRecord('path', name));
}
