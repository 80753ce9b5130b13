/**
 * Text rendering shared by the commands: every human-readable report goes through
 * `layout` (control characters made visible, lines fitted to the terminal) and its
 * tables through `fitTable` (columns shortened, abbreviated or dropped to fit).
 */
import { keepQuotedWhole } from './wrap-quoted.js';

export { formatBytes } from '../io/bytes.js';

export function formatAge(ms: number | null): string {
  if (ms === null) return '-';
  const neg = ms < 0;
  const s = Math.abs(ms) / 1000;
  let out: string;
  if (s < 90) out = `${Math.round(s)}s`;
  else if (s < 90 * 60) out = `${Math.round(s / 60)}m`;
  else if (s < 36 * 3600) out = `${Math.round(s / 3600)}h`;
  else out = `${Math.round(s / 86400)}d`;
  return neg ? `in ${out}` : out;
}

export function isoOrDash(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The width reports are fitted to when no --wide is given and stdout is not a terminal. */
export const DEFAULT_WIDTH = 80;

/**
 * The width to fit: unlimited with --wide, the terminal's width when stdout is one, else 80
 * (a pipe, a file, a cron mail).
 */
export function outputWidth(
  opts: Record<string, unknown>,
  stdout: { isTTY?: boolean; columns?: number } = process.stdout,
): number {
  if (opts.wide === true) return Infinity;
  if (stdout.isTTY && typeof stdout.columns === 'number' && stdout.columns > 0) return stdout.columns;
  return DEFAULT_WIDTH;
}

/**
 * Control characters made visible: session keys, agent names, paths and log excerpts come
 * from files anyone with write access to the home can shape, and an ESC or a newline in
 * them would clear the screen or forge a report row. C0, DEL, C1 and the Unicode line
 * separators and bidirectional overrides are written as escapes (`\x1b`, `\n`, `\u202e`).
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function escapeControl(s: string): string {
  return s.replace(
    CONTROL,
    (c) =>
      NAMED[c] ??
      (c.charCodeAt(0) <= 0xff
        ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** Columns a string takes on a terminal: East Asian wide characters and emoji take two. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch.codePointAt(0)!);
  return w;
}

function charWidth(c: number): number {
  if ((c >= 0x300 && c <= 0x36f) || (c >= 0x200b && c <= 0x200f) || c === 0xfe0f) return 0;
  if (
    (c >= 0x1100 && c <= 0x115f) ||
    (c >= 0x2e80 && c <= 0xa4cf) ||
    (c >= 0xac00 && c <= 0xd7a3) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0xfe30 && c <= 0xfe4f) ||
    (c >= 0xff00 && c <= 0xff60) ||
    (c >= 0xffe0 && c <= 0xffe6) ||
    (c >= 0x1f300 && c <= 0x1faff) ||
    (c >= 0x20000 && c <= 0x3fffd)
  )
    return 2;
  return 1;
}

/** The longest prefix of s that takes at most w columns. */
function headCols(s: string, w: number): string {
  let out = '';
  let used = 0;
  for (const ch of s) {
    const cw = charWidth(ch.codePointAt(0)!);
    if (used + cw > w) break;
    out += ch;
    used += cw;
  }
  return out;
}

function tailCols(s: string, w: number): string {
  const chars = [...s];
  let out = '';
  let used = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    const cw = charWidth(chars[i]!.codePointAt(0)!);
    if (used + cw > w) break;
    out = chars[i]! + out;
    used += cw;
  }
  return out;
}

/** Shorten in the middle to at most `max` columns: sk_v1_cb10fe…d7cc1. */
function cutMiddle(s: string, max: number): string {
  if (displayWidth(s) <= max) return s;
  if (max <= 1) return headCols(s, max);
  const keep = max - 1;
  const head = Math.ceil(keep * 0.6);
  return headCols(s, head) + '…' + tailCols(s, keep - head);
}

/** Shorten at the end to at most `max` columns: "older than max_age…". */
function cutEnd(s: string, max: number): string {
  if (displayWidth(s) <= max) return s;
  return max <= 1 ? headCols(s, max) : headCols(s, max - 1) + '…';
}

/** A session key for a table cell: escaped, shortened in the middle when longer than max. */
export function shortKey(key: string | null, max = 34): string {
  if (key === null) return '(unreadable meta)';
  return cutMiddle(escapeControl(key), max);
}

function padCols(s: string, w: number, align: Align | undefined): string {
  const pad = ' '.repeat(Math.max(0, w - displayWidth(s)));
  return align === 'right' ? pad + s : s + pad;
}

const UNIT = /^(B|KiB|MiB|GiB|TiB|s|ms|min|h|d|°C|MHz|GHz)[,;:).]*$/;

/**
 * Word-wrap to `width` columns; continuation lines start with `indent` spaces. A word longer than a line stays whole.
 */
function wrapText(text: string, width: number, indent = 0): string[] {
  if (!Number.isFinite(width) || displayWidth(text) <= width) return [text];
  // Words with the spaces before them, so aligned runs of spaces survive inside a line.
  const raw: { sep: string; word: string }[] = [];
  for (const m of text.matchAll(/( *)([^ ]+)/g)) {
    // A unit stays with its number: "614 KiB", "31 s".
    const prev = raw[raw.length - 1];
    if (prev && m[1] === ' ' && UNIT.test(m[2]!) && /\d$/.test(prev.word)) prev.word += ' ' + m[2]!;
    else raw.push({ sep: m[1]!, word: m[2]! });
  }
  const tokens = keepQuotedWhole(raw);
  const pad = ' '.repeat(Math.min(indent, Math.max(0, width - 20)));
  const lines: string[] = [];
  let cur = '';
  let curW = 0;
  let fresh = true;
  for (const { sep, word } of tokens) {
    const ww = displayWidth(word);
    if (!fresh && curW + sep.length + ww > width) {
      lines.push(cur);
      cur = pad + word;
      curW = pad.length + ww;
    } else {
      cur += sep + word;
      curW += sep.length + ww;
    }
    fresh = false;
  }
  lines.push(cur);
  return lines;
}

/** A report line with its own continuation indent (default: its leading spaces + 2). */
export interface Line {
  text: string;
  indent: number;
}

/**
 * The last step of every text renderer: each line's control characters escaped, then
 * wrapped to the width. Tables from fitTable already fit and pass through unchanged.
 */
export function layout(lines: (string | Line)[], width: number): string {
  const out: string[] = [];
  for (const l of lines) layoutLine(l, width, (x) => out.push(x));
  return out.join('\n');
}

function layoutLine(l: string | Line, width: number, emit: (line: string) => void): void {
  const text = escapeControl(typeof l === 'string' ? l : l.text);
  const indent = typeof l === 'string' ? /^ */.exec(text)![0].length + 2 : l.indent;
  for (const w of wrapText(text, width, indent)) emit(w);
}

/**
 * Small chunks: lines held until a write outlive the young generation's collections and are
 * promoted, and the old generation then grows by dead text; chunks this small are written before
 * that happens (BENCHMARKS.md section 10d, output).
 */
const FLUSH_AT = 8 * 1024;

/**
 * `layout` as it goes: each line pushed is laid out and written with a newline, in chunks
 * of about 8 KiB, so a report of thousands of rows is never one string. What it writes
 * is `layout(lines, width) + '\n'`.
 */
export class LayoutWriter {
  private buf: string[] = [];
  private size = 0;
  constructor(
    readonly width: number,
    private readonly write: (chunk: string) => void,
  ) {}

  push(...lines: (string | Line)[]): void {
    for (const l of lines) layoutLine(l, this.width, (x) => this.add(x));
  }

  /** A table: its shape measured in a first pass over `rows()`, its lines written in a second. */
  table(cols: Column[], rows: () => Iterable<string[]>): void {
    this.tableOfShape(tableShape(cols, rows(), this.width), rows);
  }

  tableOfShape(shape: TableShape, rows: () => Iterable<string[]>): void {
    writeTable(shape, rows(), (x) => layoutLine(x, this.width, (y) => this.add(y)));
  }

  flush(): void {
    if (this.buf.length > 0) this.write(this.buf.join(''));
    this.buf = [];
    this.size = 0;
  }

  private add(line: string): void {
    this.buf.push(line, '\n');
    this.size += line.length + 1;
    if (this.size >= FLUSH_AT) this.flush();
  }
}

/** What a LayoutWriter's renderer writes, as one string without the last newline (tests, small reports). */
export function layoutToString(render: (w: LayoutWriter) => void, width: number): string {
  const chunks: string[] = [];
  const w = new LayoutWriter(width, (c) => chunks.push(c));
  render(w);
  w.flush();
  return chunks.join('').slice(0, -1);
}

export type Align = 'left' | 'right';

export interface Column {
  header: string;
  /** A shorter header, used once the full ones do not fit. */
  short?: string;
  align?: Align;
  /**
   * How cells give way when the table is too wide: cut in the middle (keys, paths), at the end, or wrapped onto more
   * lines (the last column).
   */
  fit?: 'middle' | 'end' | 'wrap';
  /** The narrowest this column may become (at least its header). */
  min?: number;
  /** Drop this column when the table cannot fit otherwise; the lowest number goes first. */
  drop?: number;
}

/** How a table is laid out: which columns, how wide, which headers; from a first pass over its rows. */
export interface TableShape {
  cols: Column[];
  active: number[];
  widths: number[];
  useShort: boolean;
}

/**
 * A plain text table fitted to `width` columns: header, a rule, rows. Cells are escaped.
 * When the natural table is too wide it uses the short headers, then narrows the
 * flexible columns down to their minimum, dropping droppable columns when that is not
 * enough, and gives the room left back to the flexible columns.
 */
export function fitTable(cols: Column[], rows: string[][], width: number = Infinity): string[] {
  const lines: string[] = [];
  writeTable(tableShape(cols, rows, width), rows, (l) => lines.push(l));
  return lines;
}

/**
 * The first of fitTable's two passes: the column widths, measured over `rows` (iterated
 * once; a generator works, so a caller with thousands of rows need not hold them).
 */
export function tableShape(cols: Column[], rows: Iterable<string[]>, width: number = Infinity): TableShape {
  let active = cols.map((_, i) => i);
  let useShort = false;
  const head = (i: number) => (useShort && cols[i]!.short !== undefined ? cols[i]!.short : cols[i]!.header);
  const cellWidth = cols.map(() => 0);
  for (const r of rows)
    for (let i = 0; i < cols.length; i++)
      cellWidth[i] = Math.max(cellWidth[i]!, displayWidth(escapeControl(r[i] ?? '')));
  const natural = (i: number) => Math.max(displayWidth(head(i)), cellWidth[i]!);
  const minOf = (i: number) =>
    cols[i]!.fit ? Math.min(natural(i), Math.max(displayWidth(head(i)), cols[i]!.min ?? 8)) : natural(i);
  const sum = (ws: number[]) => ws.reduce((a, b) => a + b, 0) + 2 * (ws.length - 1);
  let widths = active.map(natural);
  if (Number.isFinite(width) && sum(widths) > width) {
    useShort = cols.some((c) => c.short !== undefined);
    for (;;) {
      widths = active.map(natural);
      if (sum(widths) <= width) break;
      const mins = active.map(minOf);
      if (sum(mins) <= width) {
        let room = width - sum(mins);
        widths = mins.map((m, j) => {
          const give = Math.min(room, natural(active[j]!) - m);
          room -= give;
          return m + give;
        });
        break;
      }
      const droppable = active
        .filter((i) => cols[i]!.drop !== undefined)
        .sort((a, b) => cols[a]!.drop! - cols[b]!.drop!);
      if (droppable.length === 0) {
        widths = mins;
        break;
      }
      active = active.filter((i) => i !== droppable[0]);
    }
  }
  return { cols, active, widths, useShort };
}

/** The rule under the header: as wide as the widest line of the table. */
export function tableRule(shape: TableShape): string {
  return shape.widths
    .map((w) => '-'.repeat(w))
    .join('  ')
    .trimEnd();
}

/** The second pass: each line of the table handed to `emit` as it is made, rows iterated once. */
export function writeTable(shape: TableShape, rows: Iterable<string[]>, emit: (line: string) => void): void {
  const { cols, active, widths, useShort } = shape;
  const head = (i: number) => (useShort && cols[i]!.short !== undefined ? cols[i]!.short : cols[i]!.header);
  const line = (row: string[]) =>
    emit(
      row
        .map((c, j) => padCols(c, widths[j]!, cols[active[j]!]!.align))
        .join('  ')
        .trimEnd(),
    );
  line(active.map((i, j) => cutEnd(head(i), widths[j]!)));
  emit(tableRule(shape));
  for (const raw of rows) {
    const parts = active.map((i, j) => {
      const c = escapeControl(raw[i] ?? '');
      const w = widths[j]!;
      if (displayWidth(c) <= w) return [c];
      const fit = cols[i]!.fit;
      if (fit === 'wrap') return wrapText(c, w, 0).map((l) => (displayWidth(l) <= w ? l : cutMiddle(l, w)));
      return [fit === 'end' ? cutEnd(c, w) : cutMiddle(c, w)];
    });
    const height = Math.max(...parts.map((p) => p.length));
    for (let k = 0; k < height; k++) line(parts.map((p) => p[k] ?? ''));
  }
}

/** A table at its natural width, unfitted (the shape callers used before fitTable). */
export function table(headers: string[], rows: string[][], align: Align[] = []): string {
  return fitTable(
    headers.map((h, i) => ({ header: h, align: align[i] })),
    rows,
  ).join('\n');
}

/**
 * Standard output made blocking when it is a pipe. Node leaves a pipe non-blocking and queues in
 * memory whatever the reader has not taken yet, so `sessions --json | jq` held most of its
 * document at once (BENCHMARKS.md section 10d, output). Blocking, each write waits
 * for the reader, as with a file or a terminal (which Node already writes synchronously). Not for
 * the daemon: its log must never stop it.
 */
export function blockingStdout(stdout: NodeJS.WriteStream = process.stdout): void {
  const handle = (stdout as unknown as { _handle?: { setBlocking?: (on: boolean) => number } })._handle;
  if (handle && typeof handle.setBlocking === 'function') handle.setBlocking(true);
}
