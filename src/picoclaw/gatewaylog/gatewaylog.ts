/**
 * gateway.log lines: what PicoClaw writes and how to read it cheaply
 * (docs/picoclaw.md#gatewaylog, docs/picoclaw.md#the-startup-bootstrap).
 *
 * Two formats reach us:
 * - the file, `<home>/logs/gateway.log`: zerolog JSON, one object per line, keys in the
 *   order level, component, own fields, time, caller, message (docs/picoclaw.md#line-format).
 *   `time` is RFC3339 with whole seconds and the local offset. `message` is always the last
 *   key, so it is found from the end of the line without parsing the object.
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
 *
 * This module is the entry the rest of the code imports; the pieces live beside it:
 * gatewaylog-markers.ts (formats, levels, marker tables, the parsed line's shape),
 * gatewaylog-scan.ts (the cheap look, on latin1 text and on bytes), gatewaylog-json.ts (the
 * light JSON parser), gatewaylog-clock.ts (stamps via time.ts, the console clock). Here: the
 * full parse of a selected line.
 */

import { parseInstant } from './clock.js';
import { JSON_LEVELS, Level, LineFormat, type LineFormatValue, type LineTime, type ParsedLine } from './markers.js';
import { consoleLevel, isConsoleAt, JOURNALD_ISO, JOURNALD_SHORT } from './scan.js';

export {
  LIGHT_MARKERS,
  Level,
  LineFormat,
  Marker,
  matchMarker,
  matchMarkerBytes,
  type LevelValue,
  type LineFormatValue,
  type LineTime,
  type MarkerValue,
  type ParsedLine,
} from './markers.js';
export { isJsonLineAt, jsonLevelByte, jsonMessageStart, newLineScan, scanLine, type LineScan } from './scan.js';
export { parseJsonLight } from './json.js';
export { ConsoleClock, formatInstant, MAX_STEP_BACK_MS, parseInstant } from './clock.js';

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
      const len = n === 'x' ? 2 : n === 'u' ? 4 : 8;
      if ((n === 'u' || n === 'x' || n === 'U') && /^[0-9a-fA-F]+$/.test(s.slice(j + 2, j + 2 + len))) {
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
    const j = eq + 1;
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

/**
 * Parse one line (UTF-8 text, no newline) in whichever format it is. Returns null for
 * lines that are not PicoClaw log lines or do not parse (never throws).
 */
export function parseLine(text: string): ParsedLine | null {
  // eslint-disable-next-line no-control-regex -- NUL padding a crash left at the head of a line
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
    const time: LineTime | null = inst ? { kind: 'instant', ...inst } : null;
    return { format: LineFormat.JOURNALD, level: Level.UNKNOWN, message: payload, fields: {}, time, journald: inst };
  }
  JOURNALD_SHORT.lastIndex = 0;
  if (JOURNALD_SHORT.exec(t)) return parseConsoleText(t.slice(JOURNALD_SHORT.lastIndex), LineFormat.JOURNALD, null);
  return null;
}
