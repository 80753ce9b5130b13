import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { ExitCode, GuardError, errnoCode } from '../errors.js';
import { MAX_LINE_BYTES } from './inventory/jsonl-tail.js';

/**
 * A session's .jsonl read forwards, one line at a time, never whole: a chat under seahorse is
 * never truncated, so a file can be hundreds of MB. Each line is held once, up to PicoClaw's own
 * line limit (pkg/memory/jsonl.go maxLineSize, 10 MB); a longer one is reported by its number and
 * skipped without being held. Opened without following a symlink and refused unless it is a
 * regular file (a FIFO would block, a symlink would read a file outside the sessions folder).
 */
export type JsonlLine = { n: number; text: string } | { n: number; tooLong: number };

const CHUNK = 64 * 1024;

export function* jsonlLines(path: string, maxLine = MAX_LINE_BYTES): Generator<JsonlLine> {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = errnoCode(err);
    throw new GuardError(
      `cannot read ${path}: ${code === 'ELOOP' ? 'it is a symlink (never followed)' : (code ?? String(err))}`,
      { exitCode: ExitCode.DATA, path },
    );
  }
  try {
    if (!fstatSync(fd).isFile())
      throw new GuardError(`${path} is not a regular file`, { exitCode: ExitCode.DATA, path });
    const buf = Buffer.alloc(CHUNK);
    let parts: Buffer[] = [];
    let held = 0;
    /** Bytes of the current line past the limit (not held), or 0. */
    let over = 0;
    let n = 0;
    let pos = 0;
    const finish = function* (): Generator<JsonlLine> {
      n++;
      if (over > 0) yield { n, tooLong: over };
      else {
        const text = (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8');
        yield { n, text: text.endsWith('\r') ? text.slice(0, -1) : text };
      }
      parts = [];
      held = 0;
      over = 0;
    };
    for (;;) {
      const got = readSync(fd, buf, 0, CHUNK, pos);
      if (got === 0) break;
      pos += got;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(10, start);
        const end = nl < 0 || nl >= got ? got : nl;
        const piece = end - start;
        if (over > 0 || held + piece > maxLine) {
          // Past the limit: what was held of this line goes, the rest is only counted.
          over += held + piece;
          held = 0;
          parts = [];
        } else if (piece > 0) {
          parts.push(Buffer.from(buf.subarray(start, end)));
          held += piece;
        }
        if (nl < 0 || nl >= got) break;
        yield* finish();
        start = nl + 1;
      }
    }
    if (held > 0 || over > 0) yield* finish();
  } finally {
    closeSync(fd);
  }
}
