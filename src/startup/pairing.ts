import { LineFormat, type LevelValue, type MarkerValue, type ParsedLine } from '../picoclaw/gatewaylog/gatewaylog.js';
import type { LineCounts } from './types.js';

/**
 * zerolog's MultiWriter writes each event to the console and then to the file
 * (docs/picoclaw.md#line-format): with stdout redirected into gateway.log every event appears
 * twice in a row. A console event is held back for one parsed line; if its JSON twin follows,
 * the JSON one (it has the date) is used and the console one dropped. The other order (file
 * first, then console) drops the console line at once.
 */

type Handle = (kind: MarkerValue, p: ParsedLine, level: LevelValue) => void;

/** The local time of day of a parsed line, for matching a console line with its JSON twin. */
function dupKey(kind: MarkerValue, p: ParsedLine): string {
  let tod = '';
  if (p.time?.kind === 'timeOfDay') tod = String(p.time.secondOfDay);
  else if (p.time?.kind === 'instant') {
    const w = new Date(p.time.ms + p.time.offsetMin * 60_000);
    tod = String(w.getUTCHours() * 3600 + w.getUTCMinutes() * 60 + w.getUTCSeconds());
  }
  return `${kind}|${p.message}|${tod}`;
}

export class DuplicatePairer {
  private pending: { kind: MarkerValue; p: ParsedLine; level: LevelValue; key: string } | null = null;
  /** The last JSON event and its line number (for the other order: file first, then console). */
  private lastJson: { key: string; line: number } | null = null;

  /** `lines`: read for the line number and whether console lines were seen; counts the duplicates. */
  constructor(
    private readonly lines: LineCounts,
    private readonly handle: Handle,
  ) {}

  /** A console event is held back, waiting for its JSON twin. */
  get holding(): boolean {
    return this.pending !== null;
  }

  /** A parsed marker line: passed on to `handle` once, whichever of its twins it is. */
  dispatch(kind: MarkerValue, p: ParsedLine, level: LevelValue): void {
    const lines = this.lines;
    if (lines.console + lines.journald === 0) {
      this.handle(kind, p, level); // a pure JSON log so far: nothing to pair
      return;
    }
    const key = dupKey(kind, p);
    if (p.format === LineFormat.JSON) {
      if (this.pending !== null && this.pending.key === key) {
        this.pending = null; // its console twin: the JSON line (it has the date) is used instead
        lines.duplicates_skipped++;
      } else {
        this.flush();
      }
      this.lastJson = { key, line: lines.total };
      this.handle(kind, p, level);
      return;
    }
    this.flush();
    if (this.lastJson !== null && this.lastJson.key === key && this.lastJson.line === lines.total - 1) {
      // The other order (file first): the JSON twin was already used.
      this.lastJson = null;
      lines.duplicates_skipped++;
      return;
    }
    this.pending = { kind, p, level, key };
  }

  /** Pass on the held console event: its twin is not coming. */
  flush(): void {
    const held = this.pending;
    this.pending = null;
    if (held !== null) this.handle(held.kind, held.p, held.level);
  }
}
