/**
 * The cheap look at every gateway.log line (docs/picoclaw.md#line-format): format, level
 * and marker, without decoding or parsing the (vast) rest.
 * - JSON lines as bytes (isJsonLineAt, jsonLevelByte, jsonMessageStart, then
 *   matchMarkerBytes): the level at a fixed offset, the message from the line's end.
 * - any other line decoded as latin1 (one char per byte, offsets stay byte offsets) and
 *   classified by scanLine; non-ASCII marker text is matched in its latin1 form.
 */

import {
  JSON_LEVELS,
  Level,
  LineFormat,
  Marker,
  matchMarker,
  type LevelValue,
  type LineFormatValue,
  type MarkerValue,
} from './markers.js';

/** What one cheap look at a line tells (filled in place: no allocation per line). */
export interface LineScan {
  format: LineFormatValue;
  level: LevelValue;
  marker: MarkerValue;
  /** Where the JSON object / console text starts (after a journald prefix or NUL bytes). */
  body: number;
  /** A JSON-looking line that does not end in `}` (torn by a crash or a truncation). */
  torn: boolean;
  /** NUL bytes were skipped in front (a sparse hole left by copy-and-truncate). */
  nulPrefix: boolean;
}

export function newLineScan(): LineScan {
  return {
    format: LineFormat.EMPTY,
    level: Level.UNKNOWN,
    marker: Marker.NONE,
    body: 0,
    torn: false,
    nulPrefix: false,
  };
}

const JSON_HEAD = '{"level":"';
const MESSAGE_KEY = '"message":"';

function jsonLevel(c: number): LevelValue {
  switch (c) {
    case 100:
      return Level.DEBUG; // d
    case 105:
      return Level.INFO; // i
    case 119:
      return Level.WARN; // w
    case 101:
      return Level.ERROR; // e
    case 102:
      return Level.FATAL; // f
    case 112:
      return Level.FATAL; // p(anic)
    default:
      return Level.UNKNOWN;
  }
}

/** The console's three-letter level at i (`TRC` counts as debug, `PNC` as fatal). */
export function consoleLevel(str: string, i: number): LevelValue {
  switch (str.charCodeAt(i)) {
    case 68:
      return str.startsWith('DBG', i) ? Level.DEBUG : Level.UNKNOWN;
    case 73:
      return str.startsWith('INF', i) ? Level.INFO : Level.UNKNOWN;
    case 87:
      return str.startsWith('WRN', i) ? Level.WARN : Level.UNKNOWN;
    case 69:
      return str.startsWith('ERR', i) ? Level.ERROR : Level.UNKNOWN;
    case 70:
      return str.startsWith('FTL', i) ? Level.FATAL : Level.UNKNOWN;
    case 80:
      return str.startsWith('PNC', i) ? Level.FATAL : Level.UNKNOWN;
    case 84:
      return str.startsWith('TRC', i) ? Level.DEBUG : Level.UNKNOWN;
    default:
      return Level.UNKNOWN;
  }
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** `15:04:05 INF ` at i. */
export function isConsoleAt(str: string, i: number, e: number): boolean {
  return (
    e - i >= 13 &&
    isDigit(str.charCodeAt(i)) &&
    isDigit(str.charCodeAt(i + 1)) &&
    str.charCodeAt(i + 2) === 58 &&
    isDigit(str.charCodeAt(i + 3)) &&
    isDigit(str.charCodeAt(i + 4)) &&
    str.charCodeAt(i + 5) === 58 &&
    isDigit(str.charCodeAt(i + 6)) &&
    isDigit(str.charCodeAt(i + 7)) &&
    str.charCodeAt(i + 8) === 32 &&
    str.charCodeAt(i + 12) === 32
  );
}

/** journald short-iso(-precise): `2026-06-13T18:19:35[.123456](+0200|+02:00|Z) host ident[pid]: `. */
export const JOURNALD_ISO =
  /(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d) \S+ [^\s[:]+(?:\[(\d+)\])?: /y;
/** journald short (no year): `Jun 13 18:19:35 host ident[pid]: `: only the prefix is skipped. */
export const JOURNALD_SHORT = /[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s[:]+(?:\[(\d+)\])?: /y;

/** Classify the console text starting at i (after any prefix). */
function scanConsole(str: string, i: number, e: number, out: LineScan): boolean {
  if (!isConsoleAt(str, i, e)) return false;
  out.level = consoleLevel(str, i + 9);
  if (out.level === Level.UNKNOWN && !str.startsWith('???', i + 9)) return false;
  out.body = i;
  // Message after ` > ` (the caller's suffix); with an empty message the line ends in ` >`.
  const gt = str.indexOf(' > ', i + 13);
  if (gt >= 0 && gt < e) out.marker = matchMarker(str, gt + 3, e, false);
  return true;
}

function isBinary(str: string, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const c = str.charCodeAt(i);
    if (c < 32 && c !== 9 && c !== 13 && c !== 27) return true;
  }
  return false;
}

/**
 * A JSON log line not in zerolog's own compact form: the same object re-serialised by a
 * log shipper or `jq -c` (spaces after colons, other key order). Parsed in full (this is
 * the slow path; zerolog's own lines never come here); the message is put back in its
 * latin1 form so the marker texts match as they do on raw lines.
 */
function scanOtherJson(str: string, s: number, e: number, out: LineScan): boolean {
  if (str.charCodeAt(e - 1) !== 125) return false;
  let o: unknown;
  try {
    o = JSON.parse(str.slice(s, e));
  } catch {
    return false;
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return false;
  const { level, message } = o as { level?: unknown; message?: unknown };
  if (typeof level !== 'string' && typeof message !== 'string') return false;
  out.format = LineFormat.JSON;
  out.level = typeof level === 'string' ? (JSON_LEVELS[level.toLowerCase()] ?? Level.UNKNOWN) : Level.UNKNOWN;
  if (typeof message === 'string') {
    // \u escapes decode to characters above latin1; the marker table holds UTF-8 bytes as latin1.
    // eslint-disable-next-line no-control-regex -- the latin1 range starts at U+0000 on purpose
    const m = /[^\u0000-\u00ff]/.test(message) ? Buffer.from(message, 'utf8').toString('latin1') : message;
    out.marker = matchMarker(m + '"', 0, m.length + 1, true);
  }
  return true;
}

/**
 * Look at one line `str[s, e)` (latin1, no `\n`). Cheap: a few char compares, one
 * backward search for the message key on JSON lines, one forward search for ` > ` on
 * console lines. Never parses JSON.
 */
export function scanLine(str: string, s: number, e: number, out: LineScan): void {
  out.level = Level.UNKNOWN;
  out.marker = Marker.NONE;
  out.torn = false;
  out.nulPrefix = false;
  out.body = s;
  if (e > s && str.charCodeAt(e - 1) === 13) e--; // CRLF
  if (e <= s) {
    out.format = LineFormat.EMPTY;
    return;
  }
  let c = str.charCodeAt(s);
  if (c === 32) {
    // A line of spaces is what the guard's cut leaves of the line it straddled (src/logs/cut.ts): blank.
    let k = s + 1;
    while (k < e && str.charCodeAt(k) === 32) k++;
    if (k === e) {
      out.format = LineFormat.EMPTY;
      return;
    }
  }
  if (c === 0) {
    // copy-and-truncate against a writer without O_APPEND leaves a run of NULs.
    while (s < e && str.charCodeAt(s) === 0) s++;
    out.nulPrefix = true;
    out.body = s;
    if (s === e) {
      out.format = LineFormat.BINARY;
      return;
    }
    c = str.charCodeAt(s);
  }
  if (c === 123) {
    if (str.startsWith(JSON_HEAD, s)) {
      out.format = LineFormat.JSON;
      out.level = jsonLevel(str.charCodeAt(s + 10));
      if (str.charCodeAt(e - 1) !== 125) {
        out.torn = true;
        return;
      }
      // `message` is the last key; search only inside this line (a sliced view, no copy).
      const line = str.slice(s, e);
      const mi = line.lastIndexOf(MESSAGE_KEY);
      if (mi >= 0) out.marker = matchMarker(line, mi + MESSAGE_KEY.length, line.length, true);
      return;
    }
    if (scanOtherJson(str, s, e, out)) return;
  } else if (isDigit(c)) {
    if (scanConsole(str, s, e, out)) {
      out.format = LineFormat.CONSOLE;
      return;
    }
    JOURNALD_ISO.lastIndex = s;
    if (JOURNALD_ISO.test(str)) {
      out.format = LineFormat.JOURNALD;
      const p = JOURNALD_ISO.lastIndex;
      if (!scanConsole(str, p, e, out)) out.body = p; // a stdout banner or a continuation line
      return;
    }
  } else if (c >= 65 && c <= 90) {
    JOURNALD_SHORT.lastIndex = s;
    if (JOURNALD_SHORT.test(str)) {
      out.format = LineFormat.JOURNALD;
      const p = JOURNALD_SHORT.lastIndex;
      if (!scanConsole(str, p, e, out)) out.body = p;
      return;
    }
  }
  out.format = isBinary(str, s, e) ? LineFormat.BINARY : LineFormat.TEXT;
}

// ---------------------------------------------------------------------------------------
// The same look, on raw bytes: the hot path for JSON lines. Nothing is decoded or allocated
// per line, so a gigabyte streams through at memory speed with a flat heap.

const JSON_HEAD_BYTES = Buffer.from('{"level":"');
const MESSAGE_KEY_BYTES = Buffer.from('"message":"');

/** A zerolog JSON line starts at byte s (`{"level":"`). */
export function isJsonLineAt(buf: Uint8Array, s: number, e: number): boolean {
  if (e - s < 12 || buf[s] !== 123) return false;
  for (let i = 1; i < 10; i++) if (buf[s + i] !== JSON_HEAD_BYTES[i]) return false;
  return true;
}

/** The level of the JSON line at s (the byte after `{"level":"`). */
export function jsonLevelByte(buf: Uint8Array, s: number): LevelValue {
  return jsonLevel(buf[s + 10]!);
}

/**
 * Where the message text of the JSON line [s, e) starts, or -1 when it has none. zerolog
 * writes `message` as the object's last key (docs/picoclaw.md#line-format), so the line ends `"message":"<text>"}`:
 * the text's opening quote is found by stepping back from the end over the text (skipping
 * escaped quotes), then the key in front of it is checked. A plain byte loop over a few
 * dozen bytes: cheaper than a native search call per line, and never looks past the line.
 */
export function jsonMessageStart(buf: Uint8Array, s: number, e: number): number {
  const keyBytes = MESSAGE_KEY_BYTES.length;
  if (e - s < keyBytes + 3 || buf[e - 1] !== 125 || buf[e - 2] !== 34) return -1;
  let q = e - 3;
  for (; q >= s + keyBytes - 1; q--) {
    if (buf[q] !== 34) continue;
    let bs = 0;
    while (buf[q - 1 - bs] === 92) bs++;
    if (bs % 2 === 0) break; // an unescaped quote: the text's opening quote
  }
  if (q < s + keyBytes - 1) return -1;
  for (let i = 0; i < keyBytes; i++) if (buf[q - keyBytes + 1 + i] !== MESSAGE_KEY_BYTES[i]) return -1;
  return q + 1;
}
