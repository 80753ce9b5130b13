/**
 * JSON written as it is produced, byte for byte what `JSON.stringify(value, null, 2)`
 * gives: a 20,000-session report is never one string in memory. Plain objects and arrays
 * are walked here; every element of an array, and anything that is not a plain object
 * (a Date, a class instance), is one `JSON.stringify` of its own (as fast as one call on the
 * whole), indented to its depth
 * (JSON strings cannot hold a raw newline, so every newline in that text is structure).
 * A `LazyList` is an array whose items are made one at a time while they are written.
 */
import { LazyList } from '../io/lazy-list.js';

export { LazyList };

const GAP = '  ';
/** Small chunks, for the reason LayoutWriter's are (format.ts): text held across collections is promoted. */
const FLUSH_AT = 8 * 1024;

function walkable(v: unknown): v is Record<string, unknown> | unknown[] {
  if (typeof v !== 'object' || v === null) return false;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
  if (Array.isArray(v)) return true;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

export function writeJson(value: unknown, write: (s: string) => void): void {
  let buf: string[] = [];
  let size = 0;
  const out = (s: string) => {
    buf.push(s);
    size += s.length;
    if (size >= FLUSH_AT) {
      write(buf.join(''));
      buf = [];
      size = 0;
    }
  };
  /** One array element: a single JSON.stringify (much faster than walking it), unless it holds a LazyList. */
  const item = (v: unknown, indent: string): boolean => {
    if (v instanceof LazyList || (walkable(v) && Object.values(v).some((x) => x instanceof LazyList)))
      return emit(v, indent);
    const s = JSON.stringify(v, null, 2) as string | undefined;
    if (s === undefined) return false;
    out(s.includes('\n') ? s.replace(/\n/g, `\n${indent}`) : s);
    return true;
  };
  /** Writes v at this indent; false (nothing written) when JSON.stringify would leave it out. */
  const emit = (v: unknown, indent: string): boolean => {
    if (v instanceof LazyList) {
      let first = true;
      const inner = indent + GAP;
      for (const x of v.items) {
        out(first ? `[\n${inner}` : `,\n${inner}`);
        first = false;
        if (!item(x, inner)) out('null');
      }
      out(first ? '[]' : `\n${indent}]`);
      return true;
    }
    if (!walkable(v)) {
      const s = JSON.stringify(v, null, 2) as string | undefined;
      if (s === undefined) return false;
      out(indent && s.includes('\n') ? s.replace(/\n/g, `\n${indent}`) : s);
      return true;
    }
    const inner = indent + GAP;
    if (Array.isArray(v)) {
      if (v.length === 0) {
        out('[]');
        return true;
      }
      for (let i = 0; i < v.length; i++) {
        out(i === 0 ? `[\n${inner}` : `,\n${inner}`);
        if (!item(v[i], inner)) out('null');
      }
      out(`\n${indent}]`);
      return true;
    }
    let first = true;
    for (const k of Object.keys(v)) {
      const x = v[k];
      let text: string | undefined;
      if (!walkable(x) && !(x instanceof LazyList)) {
        // Left out exactly when JSON.stringify leaves it out (undefined, a function, a toJSON giving undefined).
        text = JSON.stringify(x, null, 2);
        if (text === undefined) continue;
      }
      out(`${first ? '{' : ','}\n${inner}${JSON.stringify(k)}: `);
      first = false;
      if (text === undefined) emit(x, inner);
      else out(text.includes('\n') ? text.replace(/\n/g, `\n${inner}`) : text);
    }
    out(first ? '{}' : `\n${indent}}`);
    return true;
  };
  if (!emit(value, '')) return;
  out('\n');
  if (buf.length > 0) write(buf.join(''));
}

/** writeJson to standard output (a pipe or a file is written synchronously on Linux, chunk by chunk). */
export function printJsonStream(value: unknown): void {
  writeJson(value, (s) => process.stdout.write(s));
}

/** JSON.stringify(value, null, 2) and a newline on standard output, written as it is made: every `--json` report. */
export function printJson(value: unknown): void {
  printJsonStream(value);
}
