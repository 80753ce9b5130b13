import {
  isJsonLineAt,
  jsonLevelByte,
  jsonMessageStart,
  LineFormat,
  Marker,
  matchMarkerBytes,
  newLineScan,
  scanLine,
  type LevelValue,
  type LineFormatValue,
  type MarkerValue,
} from '../picoclaw/gatewaylog/gatewaylog.js';
import type { LineCounts } from './types.js';

/**
 * The line framer: chunks in, lines out, each with its format, level and marker from a cheap
 * scan (src/picoclaw/gatewaylog/gatewaylog.ts). zerolog JSON lines take the byte-level path: level and
 * message are read in place and nothing is decoded unless the message is a marker. A line cut
 * by a chunk boundary is joined from a copy (never whole chunks); a line over 1 MiB is skipped.
 * Counts each line's format in `lines` (json, console, journald, text, binary, empty, torn,
 * overlong).
 */

const MAX_LINE = 1024 * 1024;

export interface LineSink {
  /**
   * One line, bytes [s, e) of `buf` (valid until the chunk is done). `msgStart`: where a JSON
   * line's message starts, -1 when it was not located (not JSON, or torn).
   */
  line(
    buf: Buffer,
    s: number,
    e: number,
    format: LineFormatValue,
    level: LevelValue,
    kind: MarkerValue,
    msgStart: number,
  ): void;
  /** Whether runtime `ingest` lines are worth matching as markers (a bootstrap is running). */
  inBootstrap(): boolean;
}

export class LineFramer {
  /** The unfinished last line of the previous chunk (a copy: read buffers are reused). */
  private carry: Buffer | null = null;
  /** Skipping the rest of an overlong line. */
  private dropping = false;
  private readonly scan = newLineScan();

  constructor(
    private readonly lines: LineCounts,
    private readonly sink: LineSink,
  ) {}

  /** The complete lines of a chunk; the unfinished last one waits for the next chunk. */
  feed(b: Buffer): void {
    let start = 0;
    if (this.dropping) {
      const nl = b.indexOf(10);
      if (nl < 0) return;
      start = nl + 1;
      this.dropping = false;
    }
    const firstNl = b.indexOf(10, start);
    if (firstNl < 0) {
      const rest = b.subarray(start);
      this.carry = this.carry === null ? Buffer.from(rest) : Buffer.concat([this.carry, rest]);
    } else {
      if (this.carry !== null) {
        // Only the cut line is joined, never whole chunks.
        const head = Buffer.concat([this.carry, b.subarray(start, firstNl + 1)]);
        this.carry = null;
        this.frame(head, 0, head.length - 1);
        start = firstNl + 1;
      }
      const lastNl = b.lastIndexOf(10);
      if (lastNl >= start) this.frame(b, start, lastNl);
      this.carry = lastNl + 1 < b.length ? Buffer.from(b.subarray(lastNl + 1)) : null;
    }
    if (this.carry !== null && this.carry.length > MAX_LINE) {
      this.lines.overlong++;
      this.lines.total++;
      this.carry = null;
      this.dropping = true;
    }
  }

  /** The input ended: a last line without a newline is a line too. */
  end(): void {
    const last = this.carry;
    if (last !== null && last.length > 0) this.frame(last, 0, last.length);
  }

  /** The lines of `buf` in [start, end] (end: the last newline, or the buffer's end for a last line without one). */
  private frame(buf: Buffer, start: number, end: number): void {
    const lines = this.lines;
    let pos = start;
    while (pos <= end) {
      let nl = buf.indexOf(10, pos);
      if (nl < 0 || nl > end) nl = end;
      let e = nl;
      if (e > pos && buf[e - 1] === 13) e--;
      if (isJsonLineAt(buf, pos, e)) {
        lines.json++;
        const level = jsonLevelByte(buf, pos);
        if (buf[e - 1] !== 125) {
          lines.torn++;
          this.sink.line(buf, pos, e, LineFormat.JSON, level, Marker.NONE, -1);
        } else {
          const msgStart = jsonMessageStart(buf, pos, e);
          let kind: MarkerValue = Marker.NONE;
          // Runtime `ingest` lines (one per message) are the most common candidates: outside a
          // bootstrap they are not ours.
          if (msgStart >= 0 && (buf[msgStart] !== 105 || this.sink.inBootstrap())) {
            kind = matchMarkerBytes(buf, msgStart, e);
          }
          this.sink.line(buf, pos, e, LineFormat.JSON, level, kind, msgStart);
        }
      } else {
        this.other(buf, pos, nl);
      }
      pos = nl + 1;
    }
  }

  /** Any other line, looked at in full (console, journald, garbage): decoded as latin1 and scanned. */
  private other(buf: Buffer, s: number, e: number): void {
    const lines = this.lines;
    const scan = this.scan;
    const text = buf.toString('latin1', s, e);
    scanLine(text, 0, text.length, scan);
    switch (scan.format) {
      case LineFormat.JSON:
        lines.json++;
        break;
      case LineFormat.CONSOLE:
        lines.console++;
        break;
      case LineFormat.JOURNALD:
        lines.journald++;
        break;
      case LineFormat.TEXT:
        lines.text++;
        break;
      case LineFormat.BINARY:
        lines.binary++;
        break;
      default:
        lines.empty++;
        break;
    }
    if (scan.torn) lines.torn++;
    this.sink.line(buf, s, e, scan.format, scan.level, scan.marker, -1);
  }
}
