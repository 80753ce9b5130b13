import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { errnoCode } from '../../errors.js';

/**
 * The kept parts of a PicoClaw log (docs/logs.md): when the guard cuts the oldest lines off
 * `gateway.log` or `gateway_panic.log`, it keeps them beside the file as `<name>.<seq>.gz`,
 * one gzip member each, `seq` growing by one per cut (1 is the oldest ever kept). Read in
 * `seq` order and followed by the file itself, the parts give back every line the gateway
 * wrote, each once, in order (the cut pads one line's tail with spaces: a blank line).
 *
 * Only names of exactly this shape are ever read or deleted; nothing else in PicoClaw's logs
 * folder is touched.
 */
export interface LogPart {
  path: string;
  seq: number;
}

const PART = /^(.+)\.([1-9][0-9]{0,14})\.gz$/;

/** The part of `logPath` numbered `seq`. */
export function partPath(logPath: string, seq: number): string {
  return join(dirname(logPath), `${basename(logPath)}.${seq}.gz`);
}

/** The kept parts of `logPath`, oldest first; none when the folder cannot be listed. */
export function keptParts(logPath: string): LogPart[] {
  const dir = dirname(logPath);
  const name = basename(logPath);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
  const out: LogPart[] = [];
  for (const e of entries) {
    const m = PART.exec(e);
    if (m && m[1] === name) out.push({ path: join(dir, e), seq: Number(m[2]) });
  }
  return out.sort((a, b) => a.seq - b.seq);
}
