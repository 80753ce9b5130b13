/**
 * The light JSON parser: a zerolog marker line read from its bytes, without JSON.parse
 * (docs/picoclaw.md#line-format). Only for LIGHT_MARKERS below WARN; anything not in
 * zerolog's exact shape is declined and the caller parses the line in full (parseLine).
 */

import { parseInstant } from './clock.js';
import { LineFormat, Marker, type LevelValue, type MarkerValue, type ParsedLine } from './markers.js';

const TIME_KEY_BYTES = Buffer.from('"time":"');
const NAME_KEY_BYTES = Buffer.from('"name":"');

/** A string value that starts at byte v (after its opening quote) and ends at the next quote. */
function rawValue(buf: Buffer, v: number, end: number): string | null {
  const q = buf.indexOf(34, v);
  if (q < 0 || q > end) return null;
  return buf.toString('utf8', v, q);
}

/**
 * A zerolog JSON marker line read from its bytes: `time` (the key before `caller` and
 * `message`, docs/picoclaw.md#line-format), the message text (starting at `msgStart`, from
 * jsonMessageStart), and `name` for core tools. Returns null when the line is not in that
 * shape; the caller then parses it in full.
 */
export function parseJsonLight(
  buf: Buffer,
  s: number,
  e: number,
  msgStart: number,
  level: LevelValue,
  kind: MarkerValue,
): ParsedLine | null {
  const ti = buf.lastIndexOf(TIME_KEY_BYTES, msgStart);
  if (ti < s) return null;
  const time = rawValue(buf, ti + TIME_KEY_BYTES.length, msgStart);
  if (time === null) return null;
  const inst = parseInstant(time);
  if (inst === null) return null;
  let message = buf.toString('utf8', msgStart, e - 2);
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
