import {
  Level,
  LIGHT_MARKERS,
  LineFormat,
  Marker,
  parseJsonLight,
  parseLine,
  type LevelValue,
  type LineFormatValue,
  type MarkerValue,
} from '../picoclaw/gatewaylog/gatewaylog.js';
import type { LineSink } from './framer.js';
import type { DuplicatePairer } from './pairing.js';
import { Phase, STAGE } from './restart.js';
import type { RestartTracker } from './tracker.js';
import type { LineCounts } from './types.js';

/**
 * Which framed lines are worth parsing: every line is counted (per level, per process), but
 * only marker lines, and WARN lines inside a bootstrap, are parsed and passed on (through the
 * duplicate pairing) to the restart tracker. Bootstrap progress lines are only counted.
 */
export class LineRouter implements LineSink {
  /** Lines per level, indexed by LevelValue. */
  readonly levelCounts = [0, 0, 0, 0, 0, 0];

  constructor(
    private readonly lines: LineCounts,
    private readonly tracker: RestartTracker,
    private readonly pairer: DuplicatePairer,
  ) {}

  inBootstrap(): boolean {
    return this.tracker.inBootstrap();
  }

  line(
    buf: Buffer,
    s: number,
    e: number,
    format: LineFormatValue,
    level: LevelValue,
    kind: MarkerValue,
    msgStart: number,
  ): void {
    const lines = this.lines;
    // A held console event is settled before anything that is not its JSON twin looks at the state.
    if (this.pairer.holding && !(format === LineFormat.JSON && kind !== Marker.NONE)) this.pairer.flush();
    lines.total++;
    this.levelCounts[level]!++;
    const cur = this.tracker.countLine(level);
    if (!cur && !this.tracker.everStarted && format !== LineFormat.EMPTY) {
      if (STAGE[kind] === undefined && kind !== Marker.STARTUP_FAILED) lines.before_first_restart++;
    }
    const inGap = cur !== undefined && cur.phase === Phase.REGISTERING;
    const progress = kind === Marker.INGEST || kind === Marker.BOOTSTRAP_INFO;
    if (kind === Marker.NONE) {
      if (!(inGap && level >= Level.WARN)) return;
    } else if (!inGap) {
      // Runtime traffic: `ingest` is logged for every message; outside a bootstrap it is not ours.
      if (progress) return;
      const registration = kind === Marker.CORE_TOOL || kind === Marker.AGENT_REGISTERED;
      if (registration && cur && cur.phase > Phase.REGISTERING) return;
    } else if (progress && format === LineFormat.JSON && level < Level.WARN && lines.console + lines.journald === 0) {
      this.tracker.progressLine(kind, buf, s, e);
      return;
    }
    // Most marker lines need only their time and message: read from the bytes; the rest are parsed.
    const light =
      msgStart >= 0 && level < Level.WARN && LIGHT_MARKERS.has(kind)
        ? parseJsonLight(buf, s, e, msgStart, level, kind)
        : null;
    const p = light ?? parseLine(buf.toString('utf8', s, e));
    if (p === null) {
      lines.unparsable++;
      return;
    }
    this.pairer.dispatch(kind, p, p.level !== Level.UNKNOWN ? p.level : level);
  }
}
