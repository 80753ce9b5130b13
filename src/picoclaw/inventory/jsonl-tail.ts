import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The last line of a PicoClaw JSONL transcript (pkg/memory/jsonl.go), read from the end of
 * the file: the `created_at` of its last complete line without reading the whole file, and
 * the forward and backward scanners that find a top-level key in a line of many megabytes
 * (a big tool result) without parsing it. Nothing here writes.
 */

/** pkg/memory/jsonl.go maxLineSize: PicoClaw refuses longer lines. */
export const MAX_LINE_BYTES = 10 * 1024 * 1024;

/** What can be wrong with a transcript's last line (a subset of the store's issues). */
export type TailIssue = 'jsonl_truncated_last_line' | 'jsonl_last_line_corrupt' | 'jsonl_last_line_too_long';

export interface LastLine {
  createdAt: string | null;
  issue: TailIssue | null;
}

/**
 * The `created_at` of the last complete line, read from the end of the file: never
 * the whole file. A final line without its newline is a torn append (a crash
 * mid-write) and is skipped; empty lines are skipped as PicoClaw's reader does.
 * Chunks are read backwards and only the last line is ever assembled.
 */
const FIRST_READ = Buffer.allocUnsafe(8 * 1024);

export function readLastLine(path: string, size: number, firstChunk = 8 * 1024): LastLine {
  if (size === 0) return { createdAt: null, issue: null };
  // Non-blocking and not following a symlink: the file may have been swapped for a FIFO since it was listed.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${path} is not a regular file`);
    return lastLineOf(fd, size, firstChunk);
  } finally {
    closeSync(fd);
  }
}

/** readLastLine on a regular file open at `fd` whose size is `size` (the caller closes it). */
export function lastLineOf(fd: number, size: number, firstChunk = 8 * 1024): LastLine {
  if (size === 0) return { createdAt: null, issue: null };
  // chunks[i] holds bytes [starts[i], starts[i] + chunks[i].length); chunks[0] is the newest read (lowest offset).
  const chunks: Buffer[] = [];
  const starts: number[] = [];
  let pos = size;
  let chunk = firstChunk;
  const readBack = (): boolean => {
    if (pos === 0) return false;
    const len = Math.min(chunk, pos);
    if (chunk < 1024 * 1024) chunk *= 2;
    pos -= len;
    // The first read of every file goes into one shared buffer: nothing read here outlives
    // the call (the result is a string), and a fresh 8 KiB per session is garbage that piles
    // up faster than it is collected on a 20,000-session home.
    const b = chunks.length === 0 && len <= FIRST_READ.length ? FIRST_READ : Buffer.allocUnsafe(len);
    let off = 0;
    while (off < len) {
      const n = readSync(fd, b, off, len - off, pos + off);
      if (n === 0) break;
      off += n;
    }
    chunks.unshift(b.subarray(0, off));
    starts.unshift(pos);
    return true;
  };
  /** The last '\n' strictly before absolute position `before`, reading further back as needed; -1 at file start. */
  const newlineBefore = (before: number, limitBack: number): number | 'too_long' => {
    for (;;) {
      for (let i = chunks.length - 1; i >= 0; i--) {
        const s0 = starts[i]!;
        if (s0 >= before) continue;
        const from = Math.min(before - s0 - 1, chunks[i]!.length - 1);
        const k = from >= 0 ? chunks[i]!.lastIndexOf(0x0a, from) : -1;
        if (k >= 0) return s0 + k;
      }
      if (before - pos > limitBack) return 'too_long';
      if (!readBack()) return -1;
    }
  };
  const slice = (from: number, to: number): Buffer => {
    const parts: Buffer[] = [];
    for (let i = 0; i < chunks.length; i++) {
      const s0 = starts[i]!;
      const e0 = s0 + chunks[i]!.length;
      if (e0 <= from || s0 >= to) continue;
      parts.push(chunks[i]!.subarray(Math.max(from, s0) - s0, Math.min(to, e0) - s0));
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  };
  readBack();
  const last = chunks[chunks.length - 1]!;
  const truncated = last[last.length - 1] !== 0x0a;
  const lastNl = newlineBefore(size, Infinity);
  let term: number = lastNl === 'too_long' ? -1 : lastNl;
  if (term < 0) return { createdAt: null, issue: truncated ? 'jsonl_truncated_last_line' : null };
  for (;;) {
    // Is the whole line already in memory? Then parse it (exactly, when small).
    const inMemory = newlineBefore(term, term - pos);
    if (inMemory !== 'too_long') {
      const prev = inMemory;
      const line = slice(prev + 1, term);
      if (isBlank(line)) {
        if (prev < 0) return { createdAt: null, issue: truncated ? 'jsonl_truncated_last_line' : null };
        term = prev; // an empty line: PicoClaw's reader skips it, so do we
        continue;
      }
      return decodeLine(line, truncated);
    }
    // A line longer than what was read (a big tool result): walk it backwards from its end,
    // jumping over strings, to the top-level "created_at" (Go writes it right after the
    // content, so the big content itself is never read).
    const found = backwardTopLevelString(
      (abs) => {
        for (let i = chunks.length - 1; i >= 0; i--) {
          const s0 = starts[i]!;
          if (abs >= s0 && abs < s0 + chunks[i]!.length) return chunks[i]![abs - s0]!;
        }
        return -1;
      },
      (abs, byte) => {
        for (let i = chunks.length - 1; i >= 0; i--) {
          const s0 = starts[i]!;
          if (abs < s0) continue;
          const k = chunks[i]!.lastIndexOf(byte, Math.min(abs - s0, chunks[i]!.length - 1));
          if (k >= 0) return s0 + k;
        }
        return -1;
      },
      () => (term - pos > MAX_LINE_BYTES + 1 ? false : readBack()),
      () => pos,
      term,
      'created_at',
      slice,
    );
    if (found === TOO_LONG) return { createdAt: null, issue: 'jsonl_last_line_too_long' };
    if (found === undefined) return { createdAt: null, issue: 'jsonl_last_line_corrupt' };
    return { createdAt: found, issue: truncated ? 'jsonl_truncated_last_line' : null };
  }
}

function isBlank(line: Buffer): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/** Lines up to this size are parsed whole; longer ones are scanned for the top-level key. */
const FULL_PARSE_BYTES = 64 * 1024;

function decodeLine(line: Buffer, truncated: boolean): LastLine {
  const torn = truncated ? ('jsonl_truncated_last_line' as const) : null;
  if (line.length > MAX_LINE_BYTES) return { createdAt: null, issue: 'jsonl_last_line_too_long' };
  if (line.length > FULL_PARSE_BYTES) {
    const v = topLevelString(line, 'created_at');
    if (v === undefined) return { createdAt: null, issue: 'jsonl_last_line_corrupt' };
    return { createdAt: v, issue: torn };
  }
  let obj: unknown;
  try {
    obj = JSON.parse(line.toString('utf8'));
  } catch {
    return { createdAt: null, issue: 'jsonl_last_line_corrupt' };
  }
  const created = typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>).created_at : undefined;
  return { createdAt: typeof created === 'string' ? created : null, issue: torn };
}

const KEY_CACHE = new Map<string, Buffer>();

/**
 * The string value of a top-level key of a JSON object, found by walking its
 * structure and jumping over strings with indexOf (a multi-MB tool result costs a
 * few native searches, not a parse). undefined: not a well-formed object; null: no such key.
 */
export function topLevelString(buf: Buffer, key: string): string | null | undefined {
  let want = KEY_CACHE.get(key);
  if (!want) KEY_CACHE.set(key, (want = Buffer.from(key)));
  const ws = (i: number) => {
    while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x0d || buf[i] === 0x0a)) i++;
    return i;
  };
  /** Index of the quote closing the string that opens at `open`, or -1. */
  const close = (open: number): number => {
    let from = open + 1;
    for (;;) {
      const q = buf.indexOf(0x22, from);
      if (q < 0) return -1;
      let k = q - 1;
      while (buf[k] === 0x5c) k--;
      if ((q - 1 - k) % 2 === 0) return q;
      from = q + 1;
    }
  };
  let i = ws(0);
  if (buf[i] !== 0x7b) return undefined;
  let depth = 0;
  while (i < buf.length) {
    const c = buf[i]!;
    if (c === 0x22) {
      const q = close(i);
      if (q < 0) return undefined;
      if (depth === 1) {
        const j = ws(q + 1);
        if (buf[j] === 0x3a && q - i - 1 === want.length && buf.compare(want, 0, want.length, i + 1, q) === 0) {
          const v = ws(j + 1);
          if (buf[v] !== 0x22) return null;
          const e = close(v);
          if (e < 0) return undefined;
          try {
            return JSON.parse(buf.toString('utf8', v, e + 1)) as string;
          } catch {
            return undefined;
          }
        }
      }
      i = q + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return null;
    }
    i++;
  }
  return undefined;
}

/** backwardTopLevelString's answer for a line past 10 MB. */
const TOO_LONG: unique symbol = Symbol('too_long');

/**
 * The top-level string value of `key` in the JSON object that ends just before `end`,
 * scanned backwards from its closing brace. A quote is a string delimiter exactly when
 * an even number of backslashes precede it, in either direction, so strings are jumped
 * over with lastIndexOf. Reads further back (more) only as far as the key lies.
 * undefined: not a well-formed object; null: no such key; TOO_LONG: past 10 MB (a symbol, not a
 * string: the key's value may be any string, `"too_long"` included).
 */
export function backwardTopLevelString(
  at: (abs: number) => number,
  lastIndexOf: (abs: number, byte: number) => number,
  more: () => boolean,
  lowest: () => number,
  end: number,
  key: string,
  slice: (from: number, to: number) => Buffer,
): string | null | undefined | typeof TOO_LONG {
  const byteAt = (abs: number): number => {
    while (abs < lowest()) if (!more()) return -1;
    return at(abs);
  };
  const isWs = (c: number) => c === 0x20 || c === 0x09 || c === 0x0d;
  /** The opening quote of the string whose closing quote is at `q`. */
  const openOf = (q: number): number | 'too_long' => {
    let from = q - 1;
    for (;;) {
      let k = from >= lowest() ? lastIndexOf(from, 0x22) : -1;
      while (k < 0) {
        if (end - lowest() > MAX_LINE_BYTES + 1) return 'too_long';
        if (!more()) return -1;
        k = lastIndexOf(from, 0x22);
      }
      let b = k - 1;
      while (byteAt(b) === 0x5c) b--;
      if ((k - 1 - b) % 2 === 0) return k;
      from = k - 1;
    }
  };
  let i = end - 1;
  while (isWs(byteAt(i))) i--;
  if (byteAt(i) !== 0x7d) return undefined;
  let depth = 0;
  const want = Buffer.from(key);
  while (i >= 0) {
    const c = byteAt(i);
    if (c === -1 || c === 0x0a) return depth === 0 ? null : undefined;
    if (c === 0x22) {
      const o = openOf(i);
      if (o === 'too_long') return TOO_LONG;
      if (o < 0) return undefined;
      if (depth === 1 && i - o - 1 === want.length && slice(o + 1, i).equals(want)) {
        let j = i + 1;
        while (isWs(byteAt(j))) j++;
        if (byteAt(j) === 0x3a) {
          let v = j + 1;
          while (isWs(byteAt(v))) v++;
          if (byteAt(v) !== 0x22) return null;
          // The value string: find its closing quote forwards.
          let e = v + 1;
          for (;;) {
            while (e < end && byteAt(e) !== 0x22) e++;
            if (e >= end) return undefined;
            let b = e - 1;
            while (byteAt(b) === 0x5c) b--;
            if ((e - 1 - b) % 2 === 0) break;
            e++;
          }
          try {
            return JSON.parse(slice(v, e + 1).toString('utf8')) as string;
          } catch {
            return undefined;
          }
        }
      }
      i = o - 1;
      continue;
    }
    if (c === 0x7d || c === 0x5d) depth++;
    else if (c === 0x7b || c === 0x5b) {
      depth--;
      if (depth === 0) return null;
    }
    i--;
  }
  return depth === 0 ? null : undefined;
}
