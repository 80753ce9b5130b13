import {
  Level,
  Marker,
  parseLine,
  type LevelValue,
  type MarkerValue,
  type ParsedLine,
} from '../picoclaw/gatewaylog/gatewaylog.js';
import { LEVEL_BIT, loggedInDetail, newRestart, Phase, STAGE, startLabel, type RestartState } from './restart.js';
import type { LineTime } from './times.js';
import type { RestartEnd } from './types.js';

/**
 * The restart state machine: fed the marker lines of gateway.log in order (already parsed and
 * timed), it recognises each gateway start, how far it got and how it ended
 * (docs/picoclaw.md#recognising-a-restart, docs/picoclaw.md#startup-messages). It never sees
 * bytes, so it can be driven directly with markers.
 */

/** Two start markers this close (or one without a time) may belong to one start. */
const MERGE_WINDOW_MS = 60_000;
/**
 * Warning texts are cut to this length and at most MAX_WARNING_TEXTS distinct ones are counted
 * per restart (the report lists 5): a bootstrap full of distinct warnings keeps memory bounded.
 */
const MAX_WARNING_TEXT = 160;
const MAX_WARNING_TEXTS = 50;

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

export class RestartTracker {
  /** The restarts kept (the latest ones, with the open ones among them), oldest first. */
  readonly restarts: RestartState[] = [];
  /** Older restarts dropped from `restarts`. */
  dropped = 0;
  /** Every restart recognised, kept or not. */
  found = 0;
  everStarted = false;
  /** Config reloads over the whole log. */
  reloads = 0;
  /** Clean stops whose start is not in the log. */
  stopsWithoutStart = 0;
  /**
   * Restarts not yet ended, oldest first; lines belong to the newest (a refused second
   * instance is popped off again).
   */
  private readonly open: RestartState[] = [];

  constructor(private readonly maxRestarts: number) {}

  /** The process the lines belong to now. */
  get current(): RestartState | undefined {
    return this.open[this.open.length - 1];
  }

  /** The current process is in its bootstrap (between registering and `Agent initialized`). */
  inBootstrap(): boolean {
    return this.open[this.open.length - 1]?.phase === Phase.REGISTERING;
  }

  /** A line was written: it counts for the current process. Returns that process, if any. */
  countLine(level: LevelValue): RestartState | undefined {
    const cur = this.open[this.open.length - 1];
    if (cur) {
      cur.lines++;
      cur.levelMask |= LEVEL_BIT(level);
    }
    return cur;
  }

  /**
   * A bootstrap progress line (`ingest`, INFO `bootstrap: …`) of the current process: only
   * counted; its bytes are kept by reference and parsed only if its time is needed.
   */
  progressLine(kind: MarkerValue, buf: Buffer, s: number, e: number): void {
    const cur = this.open[this.open.length - 1]!;
    if (kind === Marker.INGEST) cur.gap.ingest_lines++;
    else cur.gap.bootstrap_lines++;
    // Only a reference: copied once at the end of the chunk (the read buffer is reused).
    if (cur.lastRaw === null || cur.lastRaw.copied) cur.lastRaw = { buf, s, e, copied: false };
    else {
      cur.lastRaw.buf = buf;
      cur.lastRaw.s = s;
      cur.lastRaw.e = e;
    }
  }

  /** The chunk the progress lines point into is about to be reused: copy what they point at. */
  chunkDone(): void {
    for (const r of this.open) {
      const raw = r.lastRaw;
      if (raw !== null && !raw.copied) {
        r.lastRaw = { buf: Buffer.from(raw.buf.subarray(raw.s, raw.e)), s: 0, e: raw.e - raw.s, copied: true };
      }
    }
  }

  /** One marker line, parsed, at its time. */
  marker(kind: MarkerValue, p: ParsedLine, level: LevelValue, t: LineTime | null): void {
    // A start marker opens (or continues) a start and then counts as its first line.
    if (STAGE[kind] !== undefined) this.startMarker(kind, p, t);
    else if (kind === Marker.STARTUP_FAILED) {
      this.startupFailed(p, t);
      return;
    }
    const cur = this.open[this.open.length - 1];
    if (!cur) {
      if (kind === Marker.GATEWAY_STOPPED) this.stopsWithoutStart++;
      return;
    }
    if (t) {
      cur.lastT = t;
      cur.lastRaw = null;
    }
    if (level >= Level.WARN && cur.phase === Phase.REGISTERING) this.warning(cur, p);
    this.progress(cur, kind, p, t);
  }

  /** The log ended: the newest open restart is still running, the older ones died silently. */
  finish(): void {
    for (const r of this.restarts) this.settleLast(r);
    const open = this.open;
    for (let i = open.length - 1; i >= 0; i--) {
      const r = open[i]!;
      if (i === open.length - 1) {
        r.end = 'running';
        if (!loggedInDetail(r)) {
          r.endDetail = 'no closing line; at warn level a clean stop and the end of the bootstrap are not logged';
        } else if (r.phase === Phase.REGISTERING) {
          r.endDetail = 'no closing line yet: still in the bootstrap when the log ends';
        } else {
          r.endDetail = r.phase === Phase.PREAMBLE ? 'no closing line yet: still starting when the log ends' : null;
        }
      } else {
        r.end = 'crashed';
        r.endDetail = 'no closing line';
        r.endT = r.lastT;
      }
    }
  }

  /** A marker of the current process past its start: how far it got, and the times of its steps. */
  private progress(cur: RestartState, kind: MarkerValue, p: ParsedLine, t: LineTime | null): void {
    switch (kind) {
      case Marker.CORE_TOOL: {
        if (cur.phase > Phase.REGISTERING) break; // a reload re-registers tools
        this.enterBootstrap(cur);
        const name = str(p.fields.name) ?? '?';
        if (name === 'short_expand') {
          cur.shortExpandT = t;
          cur.debugGapEnd = null;
        } else if (cur.shortExpandT && !cur.debugGapEnd && name !== 'short_grep') {
          cur.debugGapEnd = { t, name };
        }
        break;
      }
      case Marker.AGENT_REGISTERED: {
        if (cur.phase > Phase.REGISTERING) break; // reload (not a restart marker)
        this.enterBootstrap(cur);
        const implicit = p.message.startsWith('Created implicit main agent');
        cur.lastAgentReg = { t, name: implicit ? 'Created implicit main agent' : 'Registered agent' };
        break;
      }
      case Marker.INGEST:
        if (cur.phase === Phase.REGISTERING) cur.gap.ingest_lines++;
        break;
      case Marker.BOOTSTRAP_INFO:
        if (cur.phase === Phase.REGISTERING) cur.gap.bootstrap_lines++;
        break;
      case Marker.BOOTSTRAP_WARN:
        // At warn level nothing else shows the bootstrap: this line proves it is running.
        if (cur.phase === Phase.PREAMBLE) {
          this.enterBootstrap(cur);
          this.warning(cur, p);
        }
        if (cur.phase === Phase.REGISTERING) cur.gap.bootstrap_failures++;
        break;
      case Marker.CONTEXT_FALLBACK:
        if (cur.phase <= Phase.REGISTERING) cur.seahorseOff = true;
        break;
      case Marker.GATEWAY_START_EVENT:
        if (cur.phase <= Phase.INITIALIZED && typeof p.fields.duration_ms === 'number') {
          cur.startEventMs = p.fields.duration_ms;
        }
        break;
      case Marker.AGENT_INITIALIZED:
        if (cur.phase <= Phase.REGISTERING) {
          if (cur.phase === Phase.PREAMBLE) this.closeOlder(cur, 'no closing line');
          cur.agentInitT = t;
          cur.phase = Phase.INITIALIZED;
        }
        break;
      case Marker.HTTP_LISTENING:
        if (cur.httpT === null && cur.phase >= Phase.INITIALIZED) cur.httpT = t;
        break;
      case Marker.CHANNELS_STARTED:
        if (cur.channelsT === null && cur.phase >= Phase.INITIALIZED) {
          cur.channelsT = t;
          cur.phase = Phase.SERVING;
        }
        break;
      case Marker.GATEWAY_READY_EVENT:
        if (cur.readyEventMs === null && typeof p.fields.duration_ms === 'number') {
          cur.readyEventMs = p.fields.duration_ms;
          cur.phase = Phase.SERVING;
        }
        break;
      case Marker.SHUTTING_DOWN:
        cur.shutdownT = t;
        break;
      case Marker.GATEWAY_STOPPED:
        this.close(cur, 'stopped', t, null);
        break;
      case Marker.RELOAD:
        cur.reloads++;
        this.reloads++;
        break;
      default:
        break;
    }
  }

  /** The first bootstrap line of a start: every older open process is dead. */
  private enterBootstrap(cur: RestartState): void {
    if (cur.phase !== Phase.PREAMBLE) return;
    cur.phase = Phase.REGISTERING;
    this.closeOlder(cur, 'no closing line');
  }

  /** A WARN (or worse) line inside the bootstrap. */
  private warning(r: RestartState, p: ParsedLine): void {
    r.gap.warnings++;
    const text = str(p.fields.error) ?? p.message;
    if (/database is locked/i.test(text)) r.gap.database_locked++;
    const short = text.length > MAX_WARNING_TEXT ? text.slice(0, MAX_WARNING_TEXT - 3) + '...' : text;
    const texts = (r.warnTexts ??= new Map());
    if (texts.size < MAX_WARNING_TEXTS || texts.has(short)) texts.set(short, (texts.get(short) ?? 0) + 1);
  }

  private startMarker(kind: MarkerValue, p: ParsedLine, t: LineTime | null): void {
    const stage = STAGE[kind] ?? 1;
    const cur = this.open[this.open.length - 1];
    const near = cur?.start && t ? Math.abs(t.ms - cur.start.ms) <= MERGE_WINDOW_MS : true;
    let r: RestartState;
    if (cur && cur.phase === Phase.PREAMBLE && stage > cur.stage && near) {
      r = cur;
    } else {
      r = this.begin(t);
      this.open.push(r);
    }
    r.stage = stage;
    r.startMarkers.push(startLabel(kind, p));
    if (r.start === null) r.start = t;
    if (kind === Marker.LOG_LEVEL_SET) {
      const m = /"(\w+)"/.exec(p.message);
      if (m) r.levelSet = m[1]!.toLowerCase();
    }
    if (kind === Marker.PID_NOT_RUNNING) this.closeOlder(r, 'no closing line; the next start found its PID file stale');
    if (kind === Marker.WROTE_PID) this.closeOlder(r, 'no closing line');
  }

  private startupFailed(p: ParsedLine, t: LineTime | null): void {
    const err = str(p.fields.error) ?? 'no error text';
    const cur = this.open[this.open.length - 1];
    const refused = /already running|singleton/i.test(err);
    if (cur && (cur.phase === Phase.PREAMBLE || (cur.phase < Phase.SERVING && !refused))) {
      // This start failed; a process it was refused by (if any) is current again.
      this.settleLast(cur);
      cur.lastT = t ?? cur.lastT;
      this.close(cur, 'failed', t, err);
    } else {
      // A start with no earlier line of its own (config rejected before the level is set),
      // or a second instance refused while this one serves.
      const r = this.begin(t);
      r.startMarkers.push('Gateway startup failed');
      r.lastT = t;
      this.close(r, 'failed', t, err);
    }
  }

  /** A new restart, kept; the oldest closed ones are dropped past the cap. */
  private begin(t: LineTime | null): RestartState {
    const r = newRestart(++this.found);
    r.start = t;
    this.everStarted = true;
    const kept = this.restarts;
    kept.push(r);
    if (kept.length > this.maxRestarts + Math.ceil(this.maxRestarts / 4)) {
      // Drop the oldest closed ones; open ones are always among the newest.
      const cut = kept.length - this.maxRestarts;
      kept.splice(0, cut);
      this.dropped += cut;
    }
    return r;
  }

  private close(r: RestartState, end: RestartEnd, t: LineTime | null, detail: string | null): void {
    // Only open restarts get their progress line copied when a chunk is done: settle it now,
    // while the bytes it points at are still this chunk's (a stop line without a time keeps it).
    this.settleLast(r);
    r.end = end;
    r.endT = t;
    r.endDetail = detail;
    const i = this.open.indexOf(r);
    if (i >= 0) this.open.splice(i, 1);
  }

  /** Parse the kept bootstrap progress line, now that its time is needed. */
  private settleLast(r: RestartState): void {
    if (r.lastRaw === null) return;
    const p = parseLine(r.lastRaw.buf.toString('utf8', r.lastRaw.s, r.lastRaw.e));
    r.lastRaw = null;
    if (p?.time?.kind === 'instant') {
      r.lastT = { ms: p.time.ms, floating: false, offsetMin: p.time.offsetMin, precisionMs: p.time.precisionMs };
    }
  }

  /** A newer process got past the singleton check: every older open one is dead (no closing line). */
  private closeOlder(r: RestartState, why: string): void {
    for (const o of [...this.open]) {
      if (o === r) break;
      this.settleLast(o);
      let detail = why;
      if (o.shutdownT) detail = 'killed during shutdown (no `✓ Gateway stopped`)';
      else if (o.phase === Phase.REGISTERING && loggedInDetail(o)) detail = `killed during the bootstrap; ${why}`;
      this.close(o, 'crashed', o.lastT, detail);
    }
  }
}
