/**
 * gateway.log lines: what PicoClaw writes and how to read it cheaply
 * (docs/picoclaw.md#gatewaylog, docs/picoclaw.md#the-startup-bootstrap).
 *
 * Two formats reach us:
 * - the file, `<home>/logs/gateway.log`: zerolog JSON, one object per line, keys in the
 *   order level, component, own fields, time, caller, message (docs/picoclaw.md#line-format). `time` is RFC3339
 *   with whole seconds and the local offset. `message` is always the last key, so it is
 *   found from the end of the line without parsing the object.
 * - the console (stdout, so journald or a redirect): `15:04:05 INF <component> <caller> >
 *   <message> key=value …`, fields sorted with `error` first, string values containing a
 *   space quoted (pkg/logger/logger.go formatFieldValue), no date. journald's
 *   `-o short-iso` adds `2026-06-13T18:19:35+0200 host picoclaw[123]: ` in front
 *   (`+02:00` on newer systemd, a fraction with short-iso-precise).
 *
 * The cheap pre-filter comes in two forms:
 * - JSON lines are looked at as bytes (isJsonLineAt, jsonLevelByte, jsonMessageStart,
 *   matchMarkerBytes): the level at a fixed offset, the message from the line's end, the
 *   marker by a byte compare. Nothing is decoded for the (vast) rest.
 * - any other line is decoded as latin1 (one char per byte, offsets stay byte offsets) and
 *   classified by scanLine; non-ASCII marker text (`✓`, `🔄`) is matched in its latin1 form.
 * Only marker lines are then read: most from their bytes (parseJsonLight), the few that need
 * fields (duration_ms, error) with JSON.parse or the console field reader (parseLine).
 */

export const LineFormat = { EMPTY: 0, JSON: 1, CONSOLE: 2, JOURNALD: 3, TEXT: 4, BINARY: 5 } as const;
export type LineFormatValue = (typeof LineFormat)[keyof typeof LineFormat];

/** Levels in zerolog's order; 0 = unknown. */
export const Level = { UNKNOWN: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, FATAL: 5 } as const;
export type LevelValue = (typeof Level)[keyof typeof Level];

/** The messages the startup report reacts to (docs/picoclaw.md#startup-messages). */
export const Marker = {
  NONE: 0,
  /** INFO gateway `Log level set to "<lvl>"`: the first line of a new process when not `-d` (docs/picoclaw.md#recognising-a-restart). */
  LOG_LEVEL_SET: 1,
  /** INFO pid `found pid file (PID: n, version: v)` (or WARN `… but process is not picoclaw`). */
  FOUND_PID: 2,
  /** WARN pid `not running (PID: n) so will remove the pid file: …`: the previous process died without a clean stop. */
  PID_NOT_RUNNING: 3,
  /** DEBUG pid `wrote pid file: <path> success`: the restart marker at debug (docs/picoclaw.md#recognising-a-restart). */
  WROTE_PID: 4,
  /** WARN pid `write pid file failed: …`: a second instance, refused. */
  WRITE_PID_FAILED: 5,
  /** ERROR gateway `Gateway startup failed` {error, …}. */
  STARTUP_FAILED: 6,
  /** DEBUG tools `Registered core tool` {name} (pkg/tools/registry.go:88). */
  CORE_TOOL: 7,
  /** INFO agent `Registered agent` / `Created implicit main agent …` (repeats on reload). */
  AGENT_REGISTERED: 8,
  /** INFO seahorse `ingest` {conv_id, messages, tokens}: bootstrap and runtime alike. */
  INGEST: 9,
  /** INFO seahorse `bootstrap: mismatch detected` / `history edit detected` / `repaired …`. */
  BOOTSTRAP_INFO: 10,
  /** WARN `bootstrap` {session, error} (pkg/agent/context_seahorse.go:189). */
  BOOTSTRAP_WARN: 11,
  /** INFO agent `Agent initialized` (pkg/gateway/gateway.go:214): after the bootstrap. */
  AGENT_INITIALIZED: 12,
  /** INFO events `Runtime event: gateway.start` {duration_ms}: Run start → agent loop, bootstrap included. */
  GATEWAY_START_EVENT: 13,
  /** INFO events `Runtime event: gateway.ready` {duration_ms}: Run start → ready. */
  GATEWAY_READY_EVENT: 14,
  /** INFO channels `Shared HTTP server listening` {addr}. */
  HTTP_LISTENING: 15,
  /** INFO channels `Channel startup completed` {started, failed, total}. */
  CHANNELS_STARTED: 16,
  /** INFO gateway `Shutting down...`. */
  SHUTTING_DOWN: 17,
  /** INFO gateway `✓ Gateway stopped`: a clean stop (docs/picoclaw.md#recognising-a-restart). */
  GATEWAY_STOPPED: 18,
  /** INFO pid `remove pid file: …` after a clean stop. */
  REMOVE_PID: 19,
  /** INFO gateway `🔄 Config file changed, reloading...`: a reload, not a restart. */
  RELOAD: 20,
  /** INFO gateway `Manual reload triggered via /reload endpoint`. */
  MANUAL_RELOAD: 21,
  /** INFO gateway `Log level changing from current to …` (reload only). */
  LEVEL_CHANGING: 22,
  /** WARN `Failed to create context manager, falling back to legacy`: no seahorse, so no bootstrap. */
  CONTEXT_FALLBACK: 23,
} as const;
export type MarkerValue = (typeof Marker)[keyof typeof Marker];

interface MarkerDef {
  kind: MarkerValue;
  text: string;
  /** The message must be exactly this (else: starts with it). */
  exact: boolean;
}

/** The message text as it is written (UTF-8) and as it appears in a latin1 view of the bytes. */
const DEFS: MarkerDef[] = [
  { kind: Marker.LOG_LEVEL_SET, text: 'Log level set to ', exact: false },
  { kind: Marker.LEVEL_CHANGING, text: 'Log level changing from ', exact: false },
  { kind: Marker.FOUND_PID, text: 'found pid file (PID: ', exact: false },
  { kind: Marker.PID_NOT_RUNNING, text: 'not running (PID: ', exact: false },
  { kind: Marker.WROTE_PID, text: 'wrote pid file: ', exact: false },
  { kind: Marker.WRITE_PID_FAILED, text: 'write pid file failed', exact: false },
  { kind: Marker.STARTUP_FAILED, text: 'Gateway startup failed', exact: true },
  { kind: Marker.CORE_TOOL, text: 'Registered core tool', exact: true },
  { kind: Marker.AGENT_REGISTERED, text: 'Registered agent', exact: true },
  { kind: Marker.AGENT_REGISTERED, text: 'Created implicit main agent', exact: false },
  { kind: Marker.INGEST, text: 'ingest', exact: true },
  { kind: Marker.BOOTSTRAP_INFO, text: 'bootstrap: ', exact: false },
  { kind: Marker.BOOTSTRAP_WARN, text: 'bootstrap', exact: true },
  { kind: Marker.AGENT_INITIALIZED, text: 'Agent initialized', exact: true },
  { kind: Marker.GATEWAY_START_EVENT, text: 'Runtime event: gateway.start', exact: true },
  { kind: Marker.GATEWAY_READY_EVENT, text: 'Runtime event: gateway.ready', exact: true },
  { kind: Marker.HTTP_LISTENING, text: 'Shared HTTP server listening', exact: true },
  { kind: Marker.CHANNELS_STARTED, text: 'Channel startup completed', exact: true },
  { kind: Marker.SHUTTING_DOWN, text: 'Shutting down...', exact: true },
  { kind: Marker.GATEWAY_STOPPED, text: '✓ Gateway stopped', exact: true },
  { kind: Marker.REMOVE_PID, text: 'remove pid file: ', exact: false },
  { kind: Marker.RELOAD, text: '🔄 Config file changed', exact: false },
  { kind: Marker.MANUAL_RELOAD, text: 'Manual reload triggered', exact: false },
  { kind: Marker.CONTEXT_FALLBACK, text: 'Failed to create context manager', exact: false },
];

const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const MESSAGE_KEY_TEXT = '"message":"';
/** Marker definitions grouped by their first char (latin1), longest text first. */
const BY_FIRST = new Map<number, { kind: MarkerValue; text: string; exact: boolean }[]>();
for (const d of DEFS) {
  const t = latin1(d.text);
  const c = t.charCodeAt(0);
  const list = BY_FIRST.get(c) ?? [];
  list.push({ kind: d.kind, text: t, exact: d.exact });
  list.sort((a, b) => b.text.length - a.text.length);
  BY_FIRST.set(c, list);
}

/**
 * The marker a message is, given where it starts in a latin1 line. `jsonQuoted`: the
 * message sits inside a JSON string (it ends at `"`); else it is console text (ends at a
 * space before the fields, or at the line's end).
 */
export function matchMarker(str: string, ms: number, e: number, jsonQuoted: boolean): MarkerValue {
  const list = BY_FIRST.get(str.charCodeAt(ms));
  if (list === undefined) return Marker.NONE;
  for (const d of list) {
    if (!str.startsWith(d.text, ms)) continue;
    if (!d.exact) return d.kind;
    const after = ms + d.text.length;
    if (jsonQuoted) {
      if (str.charCodeAt(after) === 34) return d.kind;
    } else if (after >= e || str.charCodeAt(after) === 32 || str.charCodeAt(after) === 13) {
      return d.kind;
    }
  }
  return Marker.NONE;
}

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
  return { format: LineFormat.EMPTY, level: Level.UNKNOWN, marker: Marker.NONE, body: 0, torn: false, nulPrefix: false };
}

const JSON_HEAD = '{"level":"';

const MESSAGE_KEY = MESSAGE_KEY_TEXT;

function jsonLevel(c: number): LevelValue {
  switch (c) {
    case 100: return Level.DEBUG; // d
    case 105: return Level.INFO; // i
    case 119: return Level.WARN; // w
    case 101: return Level.ERROR; // e
    case 102: return Level.FATAL; // f
    case 112: return Level.FATAL; // p(anic)
    default: return Level.UNKNOWN;
  }
}

function consoleLevel(str: string, i: number): LevelValue {
  switch (str.charCodeAt(i)) {
    case 68: return str.startsWith('DBG', i) ? Level.DEBUG : Level.UNKNOWN;
    case 73: return str.startsWith('INF', i) ? Level.INFO : Level.UNKNOWN;
    case 87: return str.startsWith('WRN', i) ? Level.WARN : Level.UNKNOWN;
    case 69: return str.startsWith('ERR', i) ? Level.ERROR : Level.UNKNOWN;
    case 70: return str.startsWith('FTL', i) ? Level.FATAL : Level.UNKNOWN;
    case 80: return str.startsWith('PNC', i) ? Level.FATAL : Level.UNKNOWN;
    case 84: return str.startsWith('TRC', i) ? Level.DEBUG : Level.UNKNOWN;
    default: return Level.UNKNOWN;
  }
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** `15:04:05 INF ` at i. */
function isConsoleAt(str: string, i: number, e: number): boolean {
  return (
    e - i >= 13 &&
    isDigit(str.charCodeAt(i)) && isDigit(str.charCodeAt(i + 1)) && str.charCodeAt(i + 2) === 58 &&
    isDigit(str.charCodeAt(i + 3)) && isDigit(str.charCodeAt(i + 4)) && str.charCodeAt(i + 5) === 58 &&
    isDigit(str.charCodeAt(i + 6)) && isDigit(str.charCodeAt(i + 7)) && str.charCodeAt(i + 8) === 32 &&
    str.charCodeAt(i + 12) === 32
  );
}

/** journald short-iso(-precise): `2026-06-13T18:19:35[.123456](+0200|+02:00|Z) host ident[pid]: `. */
const JOURNALD_ISO = /(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d) \S+ [^\s[:]+(?:\[(\d+)\])?: /y;
/** journald short (no year): `Jun 13 18:19:35 host ident[pid]: `: only the prefix is skipped. */
const JOURNALD_SHORT = /[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s[:]+(?:\[(\d+)\])?: /y;

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

/** Marker texts as UTF-8 bytes, grouped by their first byte. */
const BYTES_BY_FIRST = new Map<number, { kind: MarkerValue; bytes: Buffer; exact: boolean }[]>();
for (const d of DEFS) {
  const bytes = Buffer.from(d.text, 'utf8');
  const list = BYTES_BY_FIRST.get(bytes[0]!) ?? [];
  list.push({ kind: d.kind, bytes, exact: d.exact });
  list.sort((a, b) => b.bytes.length - a.bytes.length);
  BYTES_BY_FIRST.set(bytes[0]!, list);
}

/** The marker whose text starts at byte `ms` of a JSON string value (it ends at `"`), or NONE. */
export function matchMarkerBytes(buf: Uint8Array, ms: number, e: number): MarkerValue {
  const list = BYTES_BY_FIRST.get(buf[ms]!);
  if (list === undefined) return Marker.NONE;
  next: for (const d of list) {
    const b = d.bytes;
    if (ms + b.length > e) continue;
    for (let i = 1; i < b.length; i++) if (buf[ms + i] !== b[i]) continue next;
    if (!d.exact || buf[ms + b.length] === 34) return d.kind;
  }
  return Marker.NONE;
}

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
  const K = MESSAGE_KEY_BYTES.length;
  if (e - s < K + 3 || buf[e - 1] !== 125 || buf[e - 2] !== 34) return -1;
  let q = e - 3;
  for (; q >= s + K - 1; q--) {
    if (buf[q] !== 34) continue;
    let bs = 0;
    while (buf[q - 1 - bs] === 92) bs++;
    if (bs % 2 === 0) break; // an unescaped quote: the text's opening quote
  }
  if (q < s + K - 1) return -1;
  for (let i = 0; i < K; i++) if (buf[q - K + 1 + i] !== MESSAGE_KEY_BYTES[i]) return -1;
  return q + 1;
}

const TIME_KEY_BYTES = Buffer.from('"time":"');
const NAME_KEY_BYTES = Buffer.from('"name":"');

/**
 * Markers whose meaning is their time and message alone (plus `name` for core tools): below
 * WARN they are read straight from the bytes, without JSON.parse. The rest (events with
 * duration_ms, errors) are parsed in full.
 */
export const LIGHT_MARKERS: ReadonlySet<MarkerValue> = new Set<MarkerValue>([
  Marker.LOG_LEVEL_SET, Marker.LEVEL_CHANGING, Marker.FOUND_PID, Marker.PID_NOT_RUNNING, Marker.WROTE_PID,
  Marker.CORE_TOOL, Marker.AGENT_REGISTERED, Marker.INGEST, Marker.BOOTSTRAP_INFO, Marker.AGENT_INITIALIZED,
  Marker.HTTP_LISTENING, Marker.CHANNELS_STARTED, Marker.SHUTTING_DOWN, Marker.GATEWAY_STOPPED, Marker.REMOVE_PID,
  Marker.RELOAD, Marker.MANUAL_RELOAD,
]);

/** A string value that starts at byte v (after its opening quote) and ends at the next quote. */
function rawValue(buf: Buffer, v: number, end: number): string | null {
  const q = buf.indexOf(34, v);
  if (q < 0 || q > end) return null;
  return buf.toString('utf8', v, q);
}

/**
 * A zerolog JSON marker line read from its bytes: `time` (the key before `caller` and
 * `message`, docs/picoclaw.md#line-format), the message text (`ms`, from jsonMessageStart), and `name` for core
 * tools. Returns null when the line is not in that shape; the caller then parses it in full.
 */
export function parseJsonLight(buf: Buffer, s: number, e: number, ms: number, level: LevelValue, kind: MarkerValue): ParsedLine | null {
  const ti = buf.lastIndexOf(TIME_KEY_BYTES, ms);
  if (ti < s) return null;
  const time = rawValue(buf, ti + TIME_KEY_BYTES.length, ms);
  if (time === null) return null;
  const inst = parseInstant(time);
  if (inst === null) return null;
  let message = buf.toString('utf8', ms, e - 2);
  if (message.includes('\\')) {
    try {
      message = JSON.parse('"' + message + '"') as string;
    } catch {
      return null;
    }
  }
  const fields: Record<string, unknown> = {};
  if (kind === Marker.CORE_TOOL) {
    const ni = buf.lastIndexOf(NAME_KEY_BYTES, ti);
    if (ni < s) return null;
    const name = rawValue(buf, ni + NAME_KEY_BYTES.length, ti);
    if (name === null) return null;
    fields.name = name;
  }
  return { format: LineFormat.JSON, level, message, fields, time: { kind: 'instant', ...inst }, journald: null };
}

// ---------------------------------------------------------------------------------------
// Full parse of a selected line.

/** A timestamp: an instant with its UTC offset, or only a time of day (console). */
export type LineTime =
  | { kind: 'instant'; ms: number; offsetMin: number; precisionMs: number }
  | { kind: 'timeOfDay'; secondOfDay: number; precisionMs: number };

export interface ParsedLine {
  format: LineFormatValue;
  level: LevelValue;
  message: string;
  fields: Record<string, unknown>;
  time: LineTime | null;
  /** journald's date for a console line (the instant journald received it, 1 s or better). */
  journald: { ms: number; offsetMin: number; precisionMs: number } | null;
}

const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|z|[+-]\d\d:?\d\d)$/;

/** RFC3339 (zerolog's `time`, journald's short-iso with or without the colon) → instant and offset. */
let lastInstantText = '';
let lastInstant: { ms: number; offsetMin: number; precisionMs: number } | null = null;

export function parseInstant(text: string): { ms: number; offsetMin: number; precisionMs: number } | null {
  // Consecutive lines mostly share their second: reuse the last answer.
  if (text === lastInstantText) return lastInstant === null ? null : { ...lastInstant };
  lastInstantText = text;
  lastInstant = parseInstantUncached(text);
  return lastInstant === null ? null : { ...lastInstant };
}

function parseInstantUncached(text: string): { ms: number; offsetMin: number; precisionMs: number } | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const z = m[8]!;
  let offsetMin = 0;
  if (z !== 'Z' && z !== 'z') {
    const digits = z.replace(':', '');
    offsetMin = (digits[0] === '-' ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5)));
  }
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return null;
  const frac = m[7];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s, frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0) - offsetMin * 60_000;
  if (!Number.isFinite(ms)) return null;
  return { ms, offsetMin, precisionMs: frac ? 1 : 1000 };
}

/** Go's strconv.Quote output (what the console writer uses for values with spaces), read back. */
function readQuoted(s: string, i: number): { value: string; end: number } {
  let j = i + 1;
  let out = '';
  while (j < s.length) {
    const c = s[j]!;
    if (c === '"') return { value: out, end: j + 1 };
    if (c === '\\' && j + 1 < s.length) {
      const n = s[j + 1]!;
      const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', '/': '/' };
      if (n in simple) {
        out += simple[n];
        j += 2;
        continue;
      }
      if ((n === 'u' || n === 'x' || n === 'U') && /^[0-9a-fA-F]+$/.test(s.slice(j + 2, j + (n === 'x' ? 4 : n === 'u' ? 6 : 10)))) {
        const len = n === 'x' ? 2 : n === 'u' ? 4 : 8;
        out += String.fromCodePoint(parseInt(s.slice(j + 2, j + 2 + len), 16));
        j += 2 + len;
        continue;
      }
    }
    out += c;
    j++;
  }
  return { value: out, end: j };
}

function coerce(v: string): unknown {
  if (/^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i.test(v)) return Number(v);
  if (v === 'true') return true;
  if (v === 'false') return false;
  return v;
}

const FIELD_START = / ([A-Za-z_][A-Za-z0-9_.-]*)=/;

/** Split `message key=value …` (console) into the message and its fields. */
export function splitConsoleMessage(rest: string): { message: string; fields: Record<string, unknown> } {
  const fields: Record<string, unknown> = {};
  const m = FIELD_START.exec(' ' + rest);
  if (!m) return { message: rest.trimEnd(), fields };
  const at = m.index; // index in `rest` of the first key (the added space shifts by one)
  const message = rest.slice(0, Math.max(0, at - 1)).trimEnd();
  let i = at;
  while (i < rest.length) {
    while (rest[i] === ' ') i++;
    const eq = rest.indexOf('=', i);
    if (eq < 0) break;
    const key = rest.slice(i, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) break;
    let j = eq + 1;
    if (rest[j] === '"') {
      const q = readQuoted(rest, j);
      fields[key] = q.value;
      i = q.end;
      continue;
    }
    if (rest[j] === '{' || rest[j] === '[') {
      let depth = 0;
      let k = j;
      for (; k < rest.length; k++) {
        const ch = rest[k];
        if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') {
          depth--;
          if (depth === 0) {
            k++;
            break;
          }
        }
      }
      const raw = rest.slice(j, k);
      try {
        fields[key] = JSON.parse(raw);
      } catch {
        fields[key] = raw;
      }
      i = k;
      continue;
    }
    const sp = rest.indexOf(' ', j);
    const raw = rest.slice(j, sp < 0 ? rest.length : sp);
    fields[key] = coerce(raw);
    i = sp < 0 ? rest.length : sp;
  }
  return { message, fields };
}

function parseConsoleText(text: string, format: LineFormatValue, journald: ParsedLine['journald']): ParsedLine | null {
  if (!isConsoleAt(text, 0, text.length)) return null;
  const level = consoleLevel(text, 9);
  const secondOfDay = Number(text.slice(0, 2)) * 3600 + Number(text.slice(3, 5)) * 60 + Number(text.slice(6, 8));
  const gt = text.indexOf(' > ', 13);
  let rest = '';
  if (gt >= 0) rest = text.slice(gt + 3);
  else if (!text.endsWith(' >')) return null;
  const { message, fields } = splitConsoleMessage(rest);
  const head = text.slice(13, gt >= 0 ? gt : text.length - 2).split(' ');
  if (head.length >= 2) fields.component = head[0];
  return { format, level, message, fields, time: { kind: 'timeOfDay', secondOfDay, precisionMs: 1000 }, journald };
}

const JSON_LEVELS: Record<string, LevelValue> = { debug: Level.DEBUG, info: Level.INFO, warn: Level.WARN, error: Level.ERROR, fatal: Level.FATAL, panic: Level.FATAL, trace: Level.DEBUG };

/**
 * Parse one line (UTF-8 text, no newline) in whichever format it is. Returns null for
 * lines that are not PicoClaw log lines or do not parse (never throws).
 */
export function parseLine(text: string): ParsedLine | null {
  let t = text.replace(/^\u0000+/, '');
  if (t.endsWith('\r')) t = t.slice(0, -1);
  if (t.startsWith('{')) {
    let obj: unknown;
    try {
      obj = JSON.parse(t);
    } catch {
      return null;
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return null;
    const o = obj as Record<string, unknown>;
    const inst = typeof o.time === 'string' ? parseInstant(o.time) : null;
    return {
      format: LineFormat.JSON,
      level: typeof o.level === 'string' ? (JSON_LEVELS[o.level.toLowerCase()] ?? Level.UNKNOWN) : Level.UNKNOWN,
      message: typeof o.message === 'string' ? o.message : '',
      fields: o,
      time: inst ? { kind: 'instant', ...inst } : null,
      journald: null,
    };
  }
  const direct = parseConsoleText(t, LineFormat.CONSOLE, null);
  if (direct) return direct;
  JOURNALD_ISO.lastIndex = 0;
  const m = JOURNALD_ISO.exec(t);
  if (m) {
    const stamp = t.slice(0, t.indexOf(' '));
    const inst = parseInstant(stamp);
    const payload = t.slice(JOURNALD_ISO.lastIndex);
    const c = parseConsoleText(payload, LineFormat.JOURNALD, inst);
    if (c) return c;
    // A stdout line without the console format (a banner): its time is journald's.
    return { format: LineFormat.JOURNALD, level: Level.UNKNOWN, message: payload, fields: {}, time: inst ? { kind: 'instant', ...inst } : null, journald: inst };
  }
  JOURNALD_SHORT.lastIndex = 0;
  if (JOURNALD_SHORT.exec(t)) return parseConsoleText(t.slice(JOURNALD_SHORT.lastIndex), LineFormat.JOURNALD, null);
  return null;
}

// ---------------------------------------------------------------------------------------
// Console clock: times of day become instants.

/**
 * Turns console times of day into instants. zerolog's console time is the local time of
 * day only (docs/picoclaw.md#line-format), so dates come from elsewhere: journald's prefix, a dated (JSON) line
 * seen earlier, or, failing both, a running day count that follows midnight rollovers.
 * Time only moves forward: a line may step back a little (events of concurrent goroutines
 * are written out of order, and the console stamps whole seconds), but a step back of
 * more than MAX_STEP_BACK_MS is the next day. A silence of more than a day cannot be seen.
 * Floating times (no date known) are wall-clock ms counted from day 0 = 1970-01-01.
 */
export const MAX_STEP_BACK_MS = 10 * 60_000;

export class ConsoleClock {
  /** Last dated instant and its offset: dates console lines that have none. */
  private lastInstant: { ms: number; offsetMin: number } | null = null;
  /** Last floating wall-clock time (ms since day 0). */
  private lastFloating: number | null = null;

  noteInstant(ms: number, offsetMin: number): void {
    this.lastInstant = { ms, offsetMin };
  }

  /** An instant for `secondOfDay` near the last known time, or a floating wall-clock time. */
  resolve(secondOfDay: number): { ms: number; offsetMin: number | null; floating: boolean } {
    const DAY = 86_400_000;
    const nearest = (refWall: number) => {
      const day = Math.floor(refWall / DAY) * DAY;
      let cand = day + secondOfDay * 1000;
      if (cand < refWall - MAX_STEP_BACK_MS) cand += DAY;
      return cand;
    };
    if (this.lastInstant) {
      const off = this.lastInstant.offsetMin;
      const wallMs = nearest(this.lastInstant.ms + off * 60_000);
      const ms = wallMs - off * 60_000;
      this.lastInstant = { ms, offsetMin: off };
      return { ms, offsetMin: off, floating: false };
    }
    const wallMs = this.lastFloating === null ? secondOfDay * 1000 : nearest(this.lastFloating);
    this.lastFloating = wallMs;
    return { ms: wallMs, offsetMin: null, floating: true };
  }

  /** journald's date with the console's time of day: the day that puts them nearest. */
  static withDate(secondOfDay: number, journald: { ms: number; offsetMin: number }): number {
    const DAY = 86_400_000;
    const refWall = journald.ms + journald.offsetMin * 60_000;
    const day = Math.floor(refWall / DAY) * DAY;
    let cand = day + secondOfDay * 1000;
    if (cand < refWall - DAY / 2) cand += DAY;
    else if (cand > refWall + DAY / 2) cand -= DAY;
    return cand - journald.offsetMin * 60_000;
  }
}

/** `2026-06-13T18:19:35+02:00` for an instant at a given offset (whole seconds unless ms ≠ 0). */
export function formatInstant(ms: number, offsetMin: number): string {
  const d = new Date(ms + offsetMin * 60_000);
  const iso = d.toISOString();
  const frac = d.getUTCMilliseconds() !== 0 ? iso.slice(19, 23) : '';
  if (offsetMin === 0) return iso.slice(0, 19) + frac + 'Z';
  const a = Math.abs(offsetMin);
  return `${iso.slice(0, 19)}${frac}${offsetMin < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}
