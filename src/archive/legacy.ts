import { StringDecoder } from 'node:string_decoder';

/**
 * The version-1 archive (`*.session.json.gz`, earlier releases) is one JSON document whose two files
 * are base64 strings (`files.jsonl.data_base64`, `files.meta.data_base64`). JSON.parse of it holds the
 * whole text, then the decoded bytes, several times over (BENCHMARKS.md, "Restore: a version-1 archive"). This
 * push parser reads the document as it is decompressed and hands those two strings, decoded, to a
 * sink piece by piece; every other value is built as JSON.parse would build it, with a cap on its
 * size (the fields of a real document are short), so memory is bounded by one decompressed chunk
 * whatever the archive expands to. Strict JSON (RFC 8259): anything else is an error naming the byte.
 */

/** A streamed data_base64 string, as it stands in the built document: its decoded size. */
export class StreamedData {
  constructor(readonly bytes: number) {}
}

export interface DataWriter {
  write(b: Buffer): void;
}

/** Called when files.<role>.data_base64 starts; returns where its decoded bytes go. */
export type DataSink = (role: 'jsonl' | 'meta') => DataWriter;

/** The cap on all the values that are not streamed (a real document's are a few hundred bytes). */
const PLAIN_MAX_CHARS = 16 << 20;
const MAX_DEPTH = 64;

export class LegacyJsonError extends Error {}

type Frame =
  | { kind: 'obj'; value: Record<string, unknown>; key: string | null; want: 'key' | 'colon' | 'value' | 'comma' }
  | { kind: 'arr'; value: unknown[]; want: 'value' | 'comma' };

const WS = new Set([' ', '\t', '\n', '\r']);
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Base64 decoded four characters at a time across pieces (Buffer.from(s, 'base64') on the whole, in pieces). */
class Base64Stream {
  private carry = '';
  bytes = 0;
  constructor(private readonly out: DataWriter) {}
  write(s: string): void {
    const all = this.carry + s;
    const n = all.length - (all.length % 4);
    this.carry = all.slice(n);
    if (n > 0) this.emit(Buffer.from(all.slice(0, n), 'base64'));
  }
  end(): void {
    if (this.carry) this.emit(Buffer.from(this.carry, 'base64'));
    this.carry = '';
  }
  private emit(b: Buffer): void {
    if (b.length === 0) return;
    this.bytes += b.length;
    this.out.write(b);
  }
}

export class LegacyDocParser {
  private readonly text = new StringDecoder('utf8');
  private readonly stack: Frame[] = [];
  private root: unknown = undefined;
  private done = false;
  /** Inside a string: its pieces (a plain one) or its decoder (a streamed one). */
  private str: { parts: string[]; b64: Base64Stream | null; isKey: boolean } | null = null;
  /** After a backslash: '' (the escape letter is next) or the \u digits so far ('u', 'u0', ...). */
  private esc: string | null = null;
  /** A number or literal being read. */
  private lit = '';
  private plainChars = 0;
  private pos = 0;
  private readonly streamed = new Set<string>();

  constructor(private readonly sink: DataSink) {}

  private fail(what: string): never {
    throw new LegacyJsonError(`${what} at character ${this.pos}`);
  }

  write(chunk: Buffer): void {
    this.feed(this.text.write(chunk));
  }

  /** The document, once all of it has been written. */
  end(): unknown {
    this.feed(this.text.end());
    if (this.str) this.fail('unterminated string');
    if (this.lit) this.literal();
    if (!this.done) this.fail('unexpected end of the document');
    return this.root;
  }

  private count(n: number): void {
    this.plainChars += n;
    if (this.plainChars > PLAIN_MAX_CHARS) this.fail('a field too large for an archive of this format');
  }

  private feed(s: string): void {
    let i = 0;
    while (i < s.length) {
      if (this.str) {
        i = this.inString(s, i);
        continue;
      }
      const c = s[i]!;
      if (this.lit) {
        if (/[0-9a-zA-Z.+-]/.test(c)) {
          this.lit += c;
          if (this.lit.length > 64) this.fail('a number or literal too long');
          i++;
          this.pos++;
          continue;
        }
        this.literal();
      }
      i++;
      this.pos++;
      if (WS.has(c)) continue;
      if (this.done) this.fail(`${JSON.stringify(c)} after the end of the document`);
      const top = this.stack[this.stack.length - 1];
      if (top?.kind === 'obj' && top.want !== 'value') {
        if (top.want === 'key') {
          if (c === '"') this.str = { parts: [], b64: null, isKey: true };
          else if (c === '}' && top.key === null && Object.keys(top.value).length === 0) this.close();
          else this.fail(`expected a key, found ${JSON.stringify(c)}`);
        } else if (top.want === 'colon') {
          if (c !== ':') this.fail(`expected ":", found ${JSON.stringify(c)}`);
          top.want = 'value';
        } else if (c === ',') {
          top.want = 'key';
          top.key = null;
        } else if (c === '}') this.close();
        else this.fail(`expected "," or "}", found ${JSON.stringify(c)}`);
        continue;
      }
      if (top?.kind === 'arr' && top.want === 'comma') {
        if (c === ',') top.want = 'value';
        else if (c === ']') this.close();
        else this.fail(`expected "," or "]", found ${JSON.stringify(c)}`);
        continue;
      }
      // A value.
      if (c === '{' || c === '[') {
        if (this.stack.length >= MAX_DEPTH) this.fail('nested too deep');
        this.stack.push(
          c === '{' ? { kind: 'obj', value: {}, key: null, want: 'key' } : { kind: 'arr', value: [], want: 'value' },
        );
      } else if (c === ']' && top?.kind === 'arr' && top.value.length === 0) this.close();
      else if (c === '"') this.str = { parts: [], b64: this.dataRole(), isKey: false };
      else if (/[-0-9tfn]/.test(c)) this.lit = c;
      else this.fail(`unexpected ${JSON.stringify(c)}`);
    }
  }

  /** A string starting at files.<role>.data_base64 is streamed to the sink. */
  private dataRole(): Base64Stream | null {
    const [a, b, c] = this.stack;
    if (this.stack.length !== 3 || a?.kind !== 'obj' || b?.kind !== 'obj' || c?.kind !== 'obj') return null;
    if (a.key !== 'files' || (b.key !== 'jsonl' && b.key !== 'meta') || c.key !== 'data_base64') return null;
    if (this.streamed.has(b.key)) this.fail(`files.${b.key}.data_base64 appears twice`);
    this.streamed.add(b.key);
    return new Base64Stream(this.sink(b.key));
  }

  private inString(s: string, i: number): number {
    const st = this.str!;
    const put = (piece: string) => {
      if (piece.length === 0) return;
      if (st.b64) st.b64.write(piece);
      else {
        this.count(piece.length);
        st.parts.push(piece);
      }
    };
    if (this.esc !== null) {
      const c = s[i]!;
      this.pos++;
      if (this.esc === '') {
        if (c === 'u') this.esc = 'u';
        else if (ESCAPES[c] !== undefined) {
          put(ESCAPES[c]);
          this.esc = null;
        } else this.fail(`bad escape \\${c}`);
      } else {
        if (!/[0-9a-fA-F]/.test(c)) this.fail('bad \\u escape');
        this.esc += c;
        if (this.esc.length === 5) {
          put(String.fromCharCode(parseInt(this.esc.slice(1), 16)));
          this.esc = null;
        }
      }
      return i + 1;
    }
    const q = s.indexOf('"', i);
    const bs = s.indexOf('\\', i);
    const stop = q < 0 ? bs : bs < 0 ? q : Math.min(q, bs);
    const end = stop < 0 ? s.length : stop;
    const piece = s.slice(i, end);
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f]/.test(piece)) this.fail('a control character in a string');
    put(piece);
    this.pos += end - i;
    if (stop < 0) return s.length;
    this.pos++;
    if (stop === bs) {
      this.esc = '';
      return stop + 1;
    }
    // The closing quote.
    this.str = null;
    if (st.b64) {
      st.b64.end();
      this.value(new StreamedData(st.b64.bytes));
    } else if (st.isKey) {
      const top = this.stack[this.stack.length - 1] as Extract<Frame, { kind: 'obj' }>;
      top.key = st.parts.join('');
      top.want = 'colon';
    } else this.value(st.parts.join(''));
    return stop + 1;
  }

  private literal(): void {
    const t = this.lit;
    this.lit = '';
    let v: unknown;
    if (t === 'true') v = true;
    else if (t === 'false') v = false;
    else if (t === 'null') v = null;
    else if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(t)) v = Number(t);
    else this.fail(`not a JSON value: ${JSON.stringify(t)}`);
    this.value(v);
  }

  private value(v: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (!top) {
      this.root = v;
      this.done = true;
    } else if (top.kind === 'obj') {
      // As JSON.parse: the last of a repeated key wins.
      Object.defineProperty(top.value, top.key!, { value: v, enumerable: true, writable: true, configurable: true });
      top.want = 'comma';
    } else {
      top.value.push(v);
      top.want = 'comma';
    }
  }

  private close(): void {
    const f = this.stack.pop()!;
    this.value(f.value);
  }
}
