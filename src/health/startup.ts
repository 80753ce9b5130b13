import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { errnoCode } from '../errors.js';
import {
  ConsoleClock,
  formatInstant,
  isJsonLineAt,
  jsonLevelByte,
  matchMarkerBytes,
  jsonMessageStart,
  LIGHT_MARKERS,
  parseJsonLight,
  Level,
  LineFormat,
  Marker,
  newLineScan,
  parseLine,
  scanLine,
  type LevelValue,
  type MarkerValue,
  type ParsedLine,
} from '../picoclaw/gatewaylog.js';

/**
 * Startup gaps: every gateway restart found in gateway.log, how it ended, and every span
 * the log allows for it (docs/picoclaw.md#the-startup-bootstrap, docs/picoclaw.md#startup-messages).
 *
 * The log is streamed in fixed-size chunks: memory stays constant whatever the file's size
 * (the restarts kept are capped too). Each line gets a cheap scan (src/picoclaw/gatewaylog.ts);
 * only marker lines, and WARN lines inside a bootstrap, are decoded and parsed.
 *
 * No figure is invented: a span exists only when both of its ends were logged, it names
 * the two markers it came from, and it carries its precision (1 s for the file's
 * whole-second timestamps, 1 ms for `duration_ms`).
 */

/**
 * What to read: a file (read by position, so a truncation under the reader is seen), an open
 * file descriptor read sequentially (standard input: a pipe or a redirected file), or any
 * stream of chunks (tests, the daemon).
 */
export type LogSource = { path: string } | { fd: number } | { stream: AsyncIterable<Buffer | string>; name?: string };

export interface AnalyzeOptions {
  /** Restarts kept in the report (the latest ones); all are counted. Default DEFAULT_MAX_RESTARTS. */
  maxRestarts?: number;
  /** Bytes read at a time (two buffers: one is read while the other is scanned). Default 1 MiB. */
  chunkBytes?: number;
  /**
   * Console lines have no date. With no journald prefix and no dated line to borrow one from,
   * the last line is placed on the date of this instant (the file's mtime by default), in
   * this UTC offset; null leaves such times without a date.
   */
  dateAnchor?: { ms: number; offsetMin: number } | 'mtime' | null;
  /** The gateway's configured level (home discovery: gateway.log_level / PICOCLAW_LOG_LEVEL), for the advice. */
  configLogLevel?: string | null;
  /** Called after each chunk (tests use it to rotate the file under the reader). */
  onChunk?: (bytesRead: number) => void | Promise<void>;
}

/** One measured span. */
export interface Span {
  seconds: number;
  /** ± this much: 1 for the file's whole-second timestamps, 0.001 for duration_ms. */
  precision_seconds: number;
  /** The marker (message) the span starts at. */
  from: string;
  /** The marker it ends at. */
  to: string;
  /** The end was never logged (a crash, or it is still running): the span is at least this long. */
  lower_bound?: true;
}

export interface GapCounts {
  /** `ingest` lines inside the bootstrap (one per ingest call, docs/picoclaw.md#the-startup-bootstrap). */
  ingest_lines: number;
  /** INFO `bootstrap: …` lines (mismatch, history edit, repairs). */
  bootstrap_lines: number;
  /** WARN (and worse) lines inside the bootstrap. */
  warnings: number;
  /** WARN `bootstrap` lines: a session that failed to bootstrap. */
  bootstrap_failures: number;
  /** Warnings that say `database is locked` (another writer held seahorse.db). */
  database_locked: number;
  /** The distinct warning texts (their `error` field when there is one), most frequent first, at most 5. */
  warning_messages: { text: string; count: number }[];
}

export type RestartEnd = 'stopped' | 'crashed' | 'failed' | 'running';

export interface RestartEntry {
  /** 1 = the first restart in the log. */
  n: number;
  /** ISO 8601 with the log's own UTC offset; null when the log has no date for it (console lines only). */
  started_at: string | null;
  /** How the start is shown (e.g. `2026-06-13 18:19:35 +02:00`, or `day 2 18:19:35`). */
  started_at_text: string;
  /** The restart markers (docs/picoclaw.md#recognising-a-restart) this start was recognised by. */
  start_markers: string[];
  /** The level the process logged at (from `Log level set to`, else the lines seen). */
  level: 'debug' | 'info' | 'warn' | null;
  end: RestartEnd;
  ended_at: string | null;
  /** Why it is classified so (the error of a failed start, how a crash was recognised …). */
  end_detail: string | null;
  /** How far the start got: the last startup stage logged. */
  reached: 'starting' | 'bootstrap' | 'initialized' | 'serving';
  spans: {
    /** start → `Agent initialized`. */
    to_agent_initialized: Span | null;
    /** The silent seahorse bootstrap (debug: short_expand → next core tool; info: last agent registration → `Agent initialized`). */
    bootstrap_gap: Span | null;
    /** `Runtime event: gateway.start` duration_ms: Run start → agent loop built, bootstrap included. */
    gateway_start_event: Span | null;
    /** `Runtime event: gateway.ready` duration_ms: Run start → ready. */
    gateway_ready_event: Span | null;
    /** start → `Shared HTTP server listening`. */
    to_http_listening: Span | null;
    /** start → `Channel startup completed`. */
    to_channels_started: Span | null;
  };
  /** The preferred "time to ready": gateway.ready's duration_ms, else start → the later of HTTP listening / channels started. */
  time_to_ready: Span | null;
  /** The preferred bootstrap gap (the same object as spans.bootstrap_gap). */
  bootstrap_gap: Span | null;
  gap: GapCounts;
  /** Config reloads while it ran (they re-register agents but are not restarts). */
  reloads: number;
  /** The bootstrap did not run: seahorse fell back to legacy. */
  seahorse_off: boolean;
  /** Lines written while this process was the current one. */
  lines: number;
  /** Set by markPrunes: the prune pass that happened since the previous restart. */
  after_prune: { at: string; deleted_sessions: number; freed_bytes: number } | null;
}

export interface StartupSummary {
  restarts: number;
  stopped: number;
  crashed: number;
  failed: number;
  running: number;
  /** The latest restart with a bootstrap gap figure. */
  latest_gap: (Span & { restart: number; started_at: string | null }) | null;
  latest_ready: (Span & { restart: number; started_at: string | null }) | null;
  /** How the (complete) gaps moved: first vs latest, and a least-squares slope per day. */
  trend: {
    restarts_with_gap: number;
    first: { restart: number; started_at: string | null; seconds: number };
    latest: { restart: number; started_at: string | null; seconds: number };
    change_seconds: number;
    per_day_seconds: number | null;
    direction: 'rising' | 'falling' | 'flat';
  } | null;
}

export interface Advice {
  kind: 'enable_info' | 'enable_events' | 'config_level_hides_restarts';
  message: string;
  settings: string[];
}

export interface StartupReport {
  version: 1;
  source: {
    /** The file read, or null for standard input. */
    path: string | null;
    state: 'ok' | 'empty' | 'missing' | 'unreadable';
    error: string | null;
    bytes_read: number;
    /** The file shrank while it was read (copy-and-truncate rotation): the report covers what was read before. */
    truncated_while_reading: { at_byte: number; size_after: number } | null;
    /** The file's first bytes changed while it was read (rotated and rewritten). */
    replaced_while_reading: boolean;
  };
  lines: {
    total: number;
    json: number;
    console: number;
    journald: number;
    /** Other text (stdout banners such as `✓ Gateway started on …`, continuation lines, foreign text). */
    text: number;
    /** Lines with control bytes (binary garbage) or only NULs. */
    binary: number;
    empty: number;
    /** JSON lines cut short (no closing `}`): a crash mid-write or a truncation. */
    torn: number;
    /** Marker lines that did not parse. */
    unparsable: number;
    /** Lines over 1 MiB, skipped. */
    overlong: number;
    /** Console lines that repeat the JSON line next to them (stdout redirected into gateway.log). */
    duplicates_skipped: number;
    /** Lines before the first restart marker (the log begins mid-run). */
    before_first_restart: number;
  };
  /** Lines per level. */
  levels: Record<'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'unknown', number>;
  /** The most detailed level the content shows ('none': no log lines). */
  content_level: 'debug' | 'info' | 'warn' | 'none';
  timestamps: {
    /** Where the dates came from. */
    dates: 'file' | 'journald' | 'borrowed' | 'anchored' | 'none' | 'mixed';
    /** Finest precision of the figures (1 s for the file; 0.001 s with duration_ms or short-iso-precise). */
    precision_seconds: number;
    note: string | null;
  };
  restarts_found: number;
  /** Older restarts left out of `restarts` (see maxRestarts). */
  restarts_dropped: number;
  restarts: RestartEntry[];
  reloads: number;
  summary: StartupSummary;
  notes: string[];
  advice: Advice[];
}

// ---------------------------------------------------------------------------------------

const MAX_LINE = 1024 * 1024;
/**
 * Restarts kept by default. Memory is bounded by it: in a crash loop (a restart every few KB
 * of log) kept restarts live long enough to be promoted and die in the old generation; with
 * 300 a 1 GB crash-loop log peaks at ~73 MB RSS, with 1000 at ~100 MB (measured, see report).
 */
export const DEFAULT_MAX_RESTARTS = 300;
/** Reads between two size checks of the file being read (copy-and-truncate detection). */
const STAT_EVERY = 8;
const MERGE_WINDOW_MS = 60_000;
const Phase = { PREAMBLE: 0, REGISTERING: 1, INITIALIZED: 2, SERVING: 3 } as const;
type PhaseValue = (typeof Phase)[keyof typeof Phase];
const REACHED = ['starting', 'bootstrap', 'initialized', 'serving'] as const;

/** An instant (or a floating wall-clock time when the date is unknown) and its precision. */
interface T {
  ms: number;
  floating: boolean;
  offsetMin: number | null;
  precisionMs: number;
}

/** Start markers in the order one process writes them (docs/picoclaw.md#startup-messages, steps 1-3): a later one continues the same start. */
const STAGE: Partial<Record<MarkerValue, number>> = {
  [Marker.LOG_LEVEL_SET]: 1,
  [Marker.FOUND_PID]: 2,
  [Marker.PID_NOT_RUNNING]: 3,
  [Marker.WROTE_PID]: 4,
  [Marker.WRITE_PID_FAILED]: 4,
};

interface RestartState {
  n: number;
  start: T | null;
  startMarkers: string[];
  stage: number;
  phase: PhaseValue;
  end: RestartEnd | null;
  endT: T | null;
  endDetail: string | null;
  levelSet: string | null;
  levelMask: number;
  lastT: T | null;
  /** A later line than lastT, kept unparsed (bootstrap progress); parsed only if its time is needed. */
  lastRaw: { buf: Buffer; s: number; e: number; copied: boolean } | null;
  lastAgentReg: { t: T | null; name: string } | null;
  shortExpandT: T | null;
  debugGapEnd: { t: T | null; name: string } | null;
  agentInitT: T | null;
  startEventMs: number | null;
  readyEventMs: number | null;
  httpT: T | null;
  channelsT: T | null;
  shutdownT: T | null;
  gap: GapCounts;
  warnTexts: Map<string, number> | null;
  reloads: number;
  seahorseOff: boolean;
  lines: number;
}

function newRestart(n: number): RestartState {
  return {
    n,
    start: null,
    startMarkers: [],
    stage: 0,
    phase: Phase.PREAMBLE,
    end: null,
    endT: null,
    endDetail: null,
    levelSet: null,
    levelMask: 0,
    lastT: null,
    lastRaw: null,
    lastAgentReg: null,
    shortExpandT: null,
    debugGapEnd: null,
    agentInitT: null,
    startEventMs: null,
    readyEventMs: null,
    httpT: null,
    channelsT: null,
    shutdownT: null,
    gap: { ingest_lines: 0, bootstrap_lines: 0, warnings: 0, bootstrap_failures: 0, database_locked: 0, warning_messages: [] },
    warnTexts: null,
    reloads: 0,
    seahorseOff: false,
    lines: 0,
  };
}

/** A label for a start marker line, e.g. `Log level set to "info"`, `found pid file`. */
function startLabel(kind: MarkerValue, p: ParsedLine): string {
  switch (kind) {
    case Marker.LOG_LEVEL_SET: return p.message;
    case Marker.FOUND_PID: return 'found pid file';
    case Marker.PID_NOT_RUNNING: return 'not running (PID file stale)';
    case Marker.WROTE_PID: return 'wrote pid file';
    case Marker.WRITE_PID_FAILED: return 'write pid file failed';
    default: return p.message;
  }
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** What the reader saw of its source: bytes read, and a truncation or rewrite under it. */
interface ReadState {
  bytesRead: number;
  truncated: { at_byte: number; size_after: number } | null;
  replaced: boolean;
}

async function* fileChunks(path: string, chunkBytes: number, rs: ReadState): AsyncGenerator<Buffer> {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (a pipe is read with --log -).
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let next: Promise<{ bytesRead: number }> | null = null;
  try {
    const kind = await fh.stat();
    if (!kind.isFile()) throw new Error(`${kind.isDirectory() ? 'a directory' : kind.isFIFO() ? 'a FIFO' : 'a device or socket'}, not a regular file`);
    // Two buffers: the next read runs while the caller works on the current chunk.
    const bufs = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
    const head = Buffer.alloc(64);
    let headLen = 0;
    let which = 0;
    let offset = 0;
    let reads = 0;
    // pread at our own offset: after a truncation it returns 0 instead of new bytes mid-line.
    const readAt = (buf: Buffer, at: number) => fh.read(buf, 0, chunkBytes, at);
    next = readAt(bufs[which]!, offset);
    for (;;) {
      const { bytesRead }: { bytesRead: number } = await next!;
      next = null;
      if (bytesRead === 0) break;
      const buf = bufs[which]!;
      if (offset === 0) headLen = buf.copy(head, 0, 0, Math.min(64, bytesRead));
      offset += bytesRead;
      rs.bytesRead = offset;
      // Checked every few chunks: after a truncation the reads at our offset return 0 anyway,
      // and the checks after the last read (size, first bytes) catch what happened in between.
      const st = ++reads % STAT_EVERY === 0 ? await fh.stat() : null;
      if (st !== null && st.size < offset) {
        // The file shrank under us: copy-and-truncate rotation. What we read is the old content.
        rs.truncated = { at_byte: offset, size_after: st.size };
        yield buf.subarray(0, bytesRead);
        return;
      }
      which ^= 1;
      next = readAt(bufs[which]!, offset);
      yield buf.subarray(0, bytesRead);
    }
    const st = await fh.stat();
    if (st.size < offset) {
      rs.truncated = { at_byte: offset, size_after: st.size };
    } else if (headLen > 0) {
      // Truncated and written again past our position between two checks: the first bytes differ.
      const again = Buffer.alloc(headLen);
      const { bytesRead } = await fh.read(again, 0, headLen, 0);
      if (bytesRead < headLen || !again.equals(head.subarray(0, headLen))) rs.replaced = true;
    }
  } finally {
    // A read still in flight (the caller stopped early) must settle before the file is closed.
    if (next !== null) await next.catch(() => undefined);
    await fh.close();
  }
}

/**
 * A descriptor read in order (no positions: it may be a pipe) into two reused buffers, so
 * standard input costs no allocation per chunk. A non-blocking pipe that has nothing yet
 * (EAGAIN) is polled again shortly.
 */
async function* fdChunks(fd: number, chunkBytes: number, rs: ReadState): AsyncGenerator<Buffer> {
  const { read } = await import('node:fs');
  const bufs = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
  let which = 0;
  const readOnce = (buf: Buffer) =>
    new Promise<number>((resolve, reject) => {
      const attempt = () =>
        read(fd, buf, 0, chunkBytes, null, (err, n) => {
          if (err && (err as NodeJS.ErrnoException).code === 'EAGAIN') setTimeout(attempt, 5);
          else if (err) reject(err);
          else resolve(n);
        });
      attempt();
    });
  for (;;) {
    const buf = bufs[which]!;
    const n = await readOnce(buf);
    if (n === 0) return;
    rs.bytesRead += n;
    which ^= 1;
    yield buf.subarray(0, n);
  }
}

async function* streamChunks(stream: AsyncIterable<Buffer | string>, rs: ReadState): AsyncGenerator<Buffer> {
  for await (const chunk of stream) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    rs.bytesRead += b.length;
    yield b;
  }
}

/** Display text of a time: `2026-06-13 18:19:35 +02:00`, or `day 2 18:19:35` without a date. */
function timeText(t: T | null): { iso: string | null; text: string } {
  if (t === null) return { iso: null, text: '-' };
  if (t.floating) {
    const day = Math.floor(t.ms / 86_400_000);
    return { iso: null, text: `day ${day + 1} ${new Date(t.ms).toISOString().slice(11, 19)}` };
  }
  const iso = formatInstant(t.ms, t.offsetMin ?? 0);
  const text = iso.replace('T', ' ').replace(/(\.\d+)?(Z|[+-]\d\d:\d\d)$/, (_m, frac: string | undefined, z: string) => `${frac ?? ''} ${z === 'Z' ? 'UTC' : z}`);
  return { iso, text };
}

function span(a: T | null, b: T | null, from: string, to: string, lowerBound = false): Span | null {
  if (a === null || b === null || a.floating !== b.floating) return null;
  const ms = b.ms - a.ms;
  if (ms < 0) return null;
  const s: Span = { seconds: ms / 1000, precision_seconds: Math.max(a.precisionMs, b.precisionMs) / 1000, from, to };
  if (lowerBound) s.lower_bound = true;
  return s;
}

function msSpan(ms: number | null, to: string): Span | null {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return null;
  return { seconds: ms / 1000, precision_seconds: 0.001, from: 'gateway.Run start', to: `${to} duration_ms` };
}

const LEVEL_BIT = (l: LevelValue) => 1 << l;

/**
 * The analysis. Never throws for what is in the log; a missing or unreadable file comes
 * back as `source.state` ('missing' / 'unreadable') so a caller (the daemon) can cache
 * "no data" instead of handling an error.
 */
export async function analyzeStartupLog(source: LogSource, opts: AnalyzeOptions = {}): Promise<StartupReport> {
  const maxRestarts = Math.max(1, opts.maxRestarts ?? DEFAULT_MAX_RESTARTS);
  const chunkBytes = Math.max(64, opts.chunkBytes ?? 1024 * 1024);
  const path = 'path' in source ? source.path : null;
  const fd = 'fd' in source ? source.fd : null;
  const rs: ReadState = { bytesRead: 0, truncated: null, replaced: false };

  const lines: StartupReport['lines'] = {
    total: 0, json: 0, console: 0, journald: 0, text: 0, binary: 0, empty: 0, torn: 0, unparsable: 0, overlong: 0, duplicates_skipped: 0, before_first_restart: 0,
  };
  const levelCounts = [0, 0, 0, 0, 0, 0];
  const notes: string[] = [];
  const clock = new ConsoleClock();
  const dateSources = new Set<'file' | 'journald' | 'borrowed' | 'floating'>();
  let finestPrecisionMs = Infinity;

  const restarts: RestartState[] = [];
  let dropped = 0;
  let nextN = 1;
  /** Restarts not yet ended, oldest first; lines belong to the newest (a refused second instance is popped off again). */
  const open: RestartState[] = [];
  let everStarted = false;
  let reloadsTotal = 0;
  let stopWithoutStart = 0;
  /**
   * zerolog's MultiWriter writes each event to the console and then to the file (docs/picoclaw.md#line-format): with
   * stdout redirected into gateway.log every event appears twice in a row. A console event is
   * held back for one parsed line; if its JSON twin follows, the JSON one (it has the date) is
   * used and the console one dropped.
   */
  let pending: { kind: MarkerValue; p: ParsedLine; level: LevelValue; key: string } | null = null;
  /** The last JSON event and its line number (for the other order: file first, then console). */
  let lastJson: { key: string; line: number } | null = null;

  const keep = (r: RestartState) => {
    restarts.push(r);
    if (restarts.length > maxRestarts + Math.ceil(maxRestarts / 4)) {
      // Drop the oldest closed ones; open ones are always among the newest.
      const cut = restarts.length - maxRestarts;
      restarts.splice(0, cut);
      dropped += cut;
    }
  };

  const close = (r: RestartState, end: RestartEnd, t: T | null, detail: string | null) => {
    r.end = end;
    r.endT = t;
    r.endDetail = detail;
    const i = open.indexOf(r);
    if (i >= 0) open.splice(i, 1);
  };

  /** Parse the kept bootstrap progress line, now that its time is needed. */
  const settleLast = (r: RestartState) => {
    if (r.lastRaw === null) return;
    const p = parseLine(r.lastRaw.buf.toString('utf8', r.lastRaw.s, r.lastRaw.e));
    r.lastRaw = null;
    if (p?.time?.kind === 'instant') r.lastT = { ms: p.time.ms, floating: false, offsetMin: p.time.offsetMin, precisionMs: p.time.precisionMs };
  };

  /** A newer process got past the singleton check: every older open one is dead (no closing line). */
  const closeOlder = (r: RestartState, why: string) => {
    for (const o of [...open]) {
      if (o === r) break;
      settleLast(o);
      // Only a restart logged at info or debug shows how far it got (at warn, the bootstrap's end is not logged).
      const detailed = (o.levelMask & (LEVEL_BIT(Level.INFO) | LEVEL_BIT(Level.DEBUG))) !== 0;
      const detail = o.shutdownT ? 'killed during shutdown (no `✓ Gateway stopped`)' : o.phase === Phase.REGISTERING && detailed ? `killed during the bootstrap; ${why}` : why;
      close(o, 'crashed', o.lastT, detail);
    }
  };

  const startMarker = (kind: MarkerValue, p: ParsedLine, t: T | null) => {
    const stage = STAGE[kind] ?? 1;
    const cur = open[open.length - 1];
    const near = cur?.start && t ? Math.abs(t.ms - cur.start.ms) <= MERGE_WINDOW_MS : true;
    let r: RestartState;
    if (cur && cur.phase === Phase.PREAMBLE && stage > cur.stage && near) {
      r = cur;
    } else {
      r = newRestart(nextN++);
      r.start = t;
      open.push(r);
      keep(r);
      everStarted = true;
    }
    r.stage = stage;
    r.startMarkers.push(startLabel(kind, p));
    if (r.start === null) r.start = t;
    if (kind === Marker.LOG_LEVEL_SET) {
      const m = /"(\w+)"/.exec(p.message);
      if (m) r.levelSet = m[1]!.toLowerCase();
    }
    if (kind === Marker.PID_NOT_RUNNING) closeOlder(r, 'no closing line; the next start found its PID file stale');
    if (kind === Marker.WROTE_PID) closeOlder(r, 'no closing line');
  };

  const lineTime = (p: ParsedLine): T | null => {
    const tm = p.time;
    if (tm === null) return null;
    if (tm.kind === 'instant') {
      clock.noteInstant(tm.ms, tm.offsetMin);
      dateSources.add(p.format === LineFormat.JSON ? 'file' : 'journald');
      return { ms: tm.ms, floating: false, offsetMin: tm.offsetMin, precisionMs: tm.precisionMs };
    }
    if (p.journald) {
      dateSources.add('journald');
      // short-iso-precise: journald's receive time has microseconds; stdout is unbuffered, so it is the write time.
      const ms = p.journald.precisionMs < 1000 ? p.journald.ms : ConsoleClock.withDate(tm.secondOfDay, p.journald);
      clock.noteInstant(ms, p.journald.offsetMin);
      return { ms, floating: false, offsetMin: p.journald.offsetMin, precisionMs: p.journald.precisionMs < 1000 ? p.journald.precisionMs : 1000 };
    }
    const r = clock.resolve(tm.secondOfDay);
    dateSources.add(r.floating ? 'floating' : 'borrowed');
    return { ms: r.ms, floating: r.floating, offsetMin: r.offsetMin, precisionMs: 1000 };
  };

  /** The local time of day of a parsed line, for matching a console line with its JSON twin. */
  const dupKey = (kind: MarkerValue, p: ParsedLine): string => {
    let tod = '';
    if (p.time?.kind === 'timeOfDay') tod = String(p.time.secondOfDay);
    else if (p.time?.kind === 'instant') {
      const w = new Date(p.time.ms + p.time.offsetMin * 60_000);
      tod = String(w.getUTCHours() * 3600 + w.getUTCMinutes() * 60 + w.getUTCSeconds());
    }
    return `${kind}|${p.message}|${tod}`;
  };

  const handle = (kind: MarkerValue, p: ParsedLine, level: LevelValue) => {
    const t = lineTime(p);
    if (t && t.precisionMs < finestPrecisionMs) finestPrecisionMs = t.precisionMs;

    if (STAGE[kind] !== undefined) {
      startMarker(kind, p, t);
    } else if (kind === Marker.STARTUP_FAILED) {
      const err = str(p.fields.error) ?? 'no error text';
      const cur = open[open.length - 1];
      const refused = /already running|singleton/i.test(err);
      if (cur && (cur.phase === Phase.PREAMBLE || (cur.phase < Phase.SERVING && !refused))) {
        // This start failed; a process it was refused by (if any) is current again.
        settleLast(cur);
        cur.lastT = t ?? cur.lastT;
        close(cur, 'failed', t, err);
      } else {
        // A start with no earlier line of its own (config rejected before the level is set),
        // or a second instance refused while this one serves.
        const r = newRestart(nextN++);
        r.start = t;
        r.startMarkers.push('Gateway startup failed');
        r.lastT = t;
        keep(r);
        everStarted = true;
        close(r, 'failed', t, err);
      }
      return;
    }

    const cur = open[open.length - 1];
    if (!cur) {
      if (kind === Marker.GATEWAY_STOPPED) stopWithoutStart++;
      return;
    }
    if (t) {
      cur.lastT = t;
      cur.lastRaw = null;
    }
    const inGap = cur.phase === Phase.REGISTERING;
    if (level >= Level.WARN && inGap) {
      cur.gap.warnings++;
      const text = str(p.fields.error) ?? p.message;
      if (/database is locked/i.test(text)) cur.gap.database_locked++;
      const short = text.length > 160 ? text.slice(0, 157) + '...' : text;
      const texts = (cur.warnTexts ??= new Map());
      if (texts.size < 50 || texts.has(short)) texts.set(short, (texts.get(short) ?? 0) + 1);
    }
    switch (kind) {
      case Marker.CORE_TOOL: {
        if (cur.phase > Phase.REGISTERING) break; // a reload re-registers tools
        if (cur.phase === Phase.PREAMBLE) {
          cur.phase = Phase.REGISTERING;
          closeOlder(cur, 'no closing line');
        }
        const name = str(p.fields.name) ?? '?';
        if (name === 'short_expand') {
          cur.shortExpandT = t;
          cur.debugGapEnd = null;
        } else if (cur.shortExpandT && !cur.debugGapEnd && name !== 'short_grep') {
          cur.debugGapEnd = { t, name };
        }
        break;
      }
      case Marker.AGENT_REGISTERED:
        if (cur.phase > Phase.REGISTERING) break; // reload (not a restart marker)
        if (cur.phase === Phase.PREAMBLE) {
          cur.phase = Phase.REGISTERING;
          closeOlder(cur, 'no closing line');
        }
        cur.lastAgentReg = { t, name: p.message.startsWith('Created implicit main agent') ? 'Created implicit main agent' : 'Registered agent' };
        break;
      case Marker.INGEST:
        if (inGap) cur.gap.ingest_lines++;
        break;
      case Marker.BOOTSTRAP_INFO:
        if (inGap) cur.gap.bootstrap_lines++;
        break;
      case Marker.BOOTSTRAP_WARN:
        // At warn level nothing else shows the bootstrap: this line proves it is running.
        if (cur.phase === Phase.PREAMBLE) {
          cur.phase = Phase.REGISTERING;
          closeOlder(cur, 'no closing line');
          cur.gap.warnings++;
          const text = str(p.fields.error) ?? p.message;
          if (/database is locked/i.test(text)) cur.gap.database_locked++;
          const texts = (cur.warnTexts ??= new Map());
          texts.set(text, (texts.get(text) ?? 0) + 1);
        }
        if (cur.phase === Phase.REGISTERING) cur.gap.bootstrap_failures++;
        break;
      case Marker.CONTEXT_FALLBACK:
        if (cur.phase <= Phase.REGISTERING) cur.seahorseOff = true;
        break;
      case Marker.GATEWAY_START_EVENT:
        if (cur.phase <= Phase.INITIALIZED && typeof p.fields.duration_ms === 'number') cur.startEventMs = p.fields.duration_ms;
        break;
      case Marker.AGENT_INITIALIZED:
        if (cur.phase <= Phase.REGISTERING) {
          if (cur.phase === Phase.PREAMBLE) closeOlder(cur, 'no closing line');
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
        close(cur, 'stopped', t, null);
        break;
      case Marker.RELOAD:
        cur.reloads++;
        reloadsTotal++;
        break;
      default:
        break;
    }
  };

  // ---- the line loop ------------------------------------------------------------------
  const scan = newLineScan();
  /** A line: its counts, and (for markers, and WARNs inside a bootstrap) its meaning. */
  const onLine = (buf: Buffer, s: number, e: number, format: number, level: LevelValue, kind: MarkerValue, ms = -1) => {
    // A held console event is settled before anything that is not its JSON twin looks at the state.
    if (pending !== null && !(format === LineFormat.JSON && kind !== Marker.NONE)) flushPending();
    lines.total++;
    levelCounts[level]!++;
    const cur = open[open.length - 1];
    if (cur) {
      cur.lines++;
      cur.levelMask |= LEVEL_BIT(level);
    } else if (!everStarted && format !== LineFormat.EMPTY && STAGE[kind] === undefined && kind !== Marker.STARTUP_FAILED) {
      lines.before_first_restart++;
    }
    const inGap = cur !== undefined && cur.phase === Phase.REGISTERING;
    if (kind === Marker.NONE) {
      if (!(inGap && level >= Level.WARN)) return;
    } else if (!inGap) {
      // Runtime traffic: `ingest` is logged for every message; outside a bootstrap it is not ours.
      if (kind === Marker.INGEST || kind === Marker.BOOTSTRAP_INFO) return;
      if ((kind === Marker.CORE_TOOL || kind === Marker.AGENT_REGISTERED) && cur && cur.phase > Phase.REGISTERING) return;
    } else if ((kind === Marker.INGEST || kind === Marker.BOOTSTRAP_INFO) && format === LineFormat.JSON && level < Level.WARN && lines.console + lines.journald === 0) {
      // Bootstrap progress lines are only counted; the last one's time is read when needed.
      if (kind === Marker.INGEST) cur.gap.ingest_lines++;
      else cur.gap.bootstrap_lines++;
      // Only a reference: copied once at the end of the chunk (the read buffer is reused).
      if (cur.lastRaw === null || cur.lastRaw.copied) cur.lastRaw = { buf, s, e, copied: false };
      else {
        cur.lastRaw.buf = buf;
        cur.lastRaw.s = s;
        cur.lastRaw.e = e;
      }
      return;
    }
    // Most marker lines need only their time and message: read from the bytes; the rest are parsed.
    const light = ms >= 0 && level < Level.WARN && LIGHT_MARKERS.has(kind) ? parseJsonLight(buf, s, e, ms, level, kind) : null;
    const p = light ?? parseLine(buf.toString('utf8', s, e));
    if (p === null) {
      lines.unparsable++;
      return;
    }
    dispatch(kind, p, p.level !== Level.UNKNOWN ? p.level : level);
  };

  /** Any other line, looked at in full (console, journald, garbage): decoded as latin1 and scanned. */
  const processOther = (buf: Buffer, s: number, e: number) => {
    const text = buf.toString('latin1', s, e);
    scanLine(text, 0, text.length, scan);
    switch (scan.format) {
      case LineFormat.JSON: lines.json++; break;
      case LineFormat.CONSOLE: lines.console++; break;
      case LineFormat.JOURNALD: lines.journald++; break;
      case LineFormat.TEXT: lines.text++; break;
      case LineFormat.BINARY: lines.binary++; break;
      default: lines.empty++; break;
    }
    if (scan.torn) lines.torn++;
    onLine(buf, s, e, scan.format, scan.level, scan.marker);
  };

  /**
   * The complete lines of a buffer, [start, end] (end: the last newline, or the buffer's end for
   * a final line without one). zerolog JSON lines take the byte-level path: level and message
   * are read in place and nothing is decoded unless the message is a marker.
   */
  const processBuffer = (buf: Buffer, start: number, end: number) => {
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
          onLine(buf, pos, e, LineFormat.JSON, level, Marker.NONE);
        } else {
          const ms = jsonMessageStart(buf, pos, e);
          let kind: MarkerValue = Marker.NONE;
          // Runtime `ingest` lines (one per message) are the most common candidates: outside a bootstrap they are not ours.
          if (ms >= 0 && (buf[ms] !== 105 || open[open.length - 1]?.phase === Phase.REGISTERING)) kind = matchMarkerBytes(buf, ms, e);
          onLine(buf, pos, e, LineFormat.JSON, level, kind, ms);
        }
      } else {
        processOther(buf, pos, nl);
      }
      pos = nl + 1;
    }
  };

  const flushPending = () => {
    const held = pending;
    pending = null;
    if (held !== null) handle(held.kind, held.p, held.level);
  };

  const dispatch = (kind: MarkerValue, p: ParsedLine, level: LevelValue) => {
    if (lines.console + lines.journald === 0) {
      handle(kind, p, level); // a pure JSON log so far: nothing to pair
      return;
    }
    const key = dupKey(kind, p);
    if (p.format === LineFormat.JSON) {
      if (pending !== null && pending.key === key) {
        pending = null; // its console twin: the JSON line (it has the date) is used instead
        lines.duplicates_skipped++;
      } else {
        flushPending();
      }
      lastJson = { key, line: lines.total };
      handle(kind, p, level);
      return;
    }
    flushPending();
    if (lastJson !== null && lastJson.key === key && lastJson.line === lines.total - 1) {
      // The other order (file first): the JSON twin was already used.
      lastJson = null;
      lines.duplicates_skipped++;
      return;
    }
    pending = { kind, p, level, key };
  };

  /** The unfinished last line of the previous chunk (a copy: read buffers are reused). */
  let carry: Buffer | null = null;
  let dropping = false;
  let state: StartupReport['source']['state'] = 'ok';
  let error: string | null = null;
  const chunks =
    path !== null ? fileChunks(path, chunkBytes, rs) : fd !== null ? fdChunks(fd, chunkBytes, rs) : streamChunks((source as { stream: AsyncIterable<Buffer | string> }).stream, rs);
  const feed = (b: Buffer) => {
    let start = 0;
    if (dropping) {
      const nl = b.indexOf(10);
      if (nl < 0) return;
      start = nl + 1;
      dropping = false;
    }
    const firstNl = b.indexOf(10, start);
    if (firstNl < 0) {
      carry = carry === null ? Buffer.from(b.subarray(start)) : Buffer.concat([carry, b.subarray(start)]);
    } else {
      if (carry !== null) {
        // Only the cut line is joined, never whole chunks.
        const head = Buffer.concat([carry, b.subarray(start, firstNl + 1)]);
        carry = null;
        processBuffer(head, 0, head.length - 1);
        start = firstNl + 1;
      }
      const lastNl = b.lastIndexOf(10);
      if (lastNl >= start) processBuffer(b, start, lastNl);
      carry = lastNl + 1 < b.length ? Buffer.from(b.subarray(lastNl + 1)) : null;
    }
    if (carry !== null && carry.length > MAX_LINE) {
      lines.overlong++;
      lines.total++;
      carry = null;
      dropping = true;
    }
    for (const r of open) {
      const raw = r.lastRaw;
      if (raw !== null && !raw.copied) r.lastRaw = { buf: Buffer.from(raw.buf.subarray(raw.s, raw.e)), s: 0, e: raw.e - raw.s, copied: true };
    }
  };
  try {
    for await (const buf of chunks) {
      feed(buf);
      if (opts.onChunk) await opts.onChunk(rs.bytesRead);
    }
    const last = carry as Buffer | null;
    if (last !== null && last.length > 0) processBuffer(last, 0, last.length);
  } catch (err) {
    const code = errnoCode(err);
    if (rs.bytesRead === 0 && code === 'ENOENT') state = 'missing';
    else if (rs.bytesRead === 0) state = 'unreadable';
    else notes.push(`reading stopped after ${rs.bytesRead} bytes: ${code ?? (err instanceof Error ? err.message : String(err))}`);
    error = code ?? (err instanceof Error ? err.message : String(err));
    if (rs.bytesRead === 0) notes.length = 0;
  }
  if (state === 'ok' && rs.bytesRead === 0) state = 'empty';
  flushPending();

  // ---- finish ---------------------------------------------------------------------------
  for (const r of restarts) settleLast(r);
  for (let i = open.length - 1; i >= 0; i--) {
    const r = open[i]!;
    if (i === open.length - 1) {
      r.end = 'running';
      const detailed = (r.levelMask & (LEVEL_BIT(Level.INFO) | LEVEL_BIT(Level.DEBUG))) !== 0;
      if (!detailed) r.endDetail = 'no closing line; at warn level a clean stop and the end of the bootstrap are not logged';
      else r.endDetail = r.phase === Phase.REGISTERING ? 'no closing line yet: still in the bootstrap when the log ends' : r.phase === Phase.PREAMBLE ? 'no closing line yet: still starting when the log ends' : null;
    } else {
      r.end = 'crashed';
      r.endDetail = 'no closing line';
      r.endT = r.lastT;
    }
  }

  // Console times without any date: put the last one on the anchor's date (file mtime by default).
  let anchorShift: { dayShiftMs: number; offsetMin: number } | null = null;
  if (dateSources.has('floating') && !dateSources.has('file') && !dateSources.has('journald')) {
    let anchor = opts.dateAnchor === undefined ? 'mtime' : opts.dateAnchor;
    if (anchor === 'mtime') {
      anchor = null;
      if (path !== null) {
        try {
          const st = await stat(path);
          anchor = { ms: st.mtimeMs, offsetMin: -new Date(st.mtimeMs).getTimezoneOffset() };
        } catch {
          anchor = null;
        }
      }
    }
    const lastFloating = [...restarts].reverse().flatMap((r) => [r.lastT, r.endT, r.start]).find((t): t is T => t !== null && t.floating);
    if (anchor && lastFloating) {
      const DAY = 86_400_000;
      const anchorWall = anchor.ms + anchor.offsetMin * 60_000;
      let shift = Math.floor(anchorWall / DAY) * DAY - Math.floor(lastFloating.ms / DAY) * DAY;
      if (lastFloating.ms + shift > anchorWall) shift -= DAY; // written before the file's mtime
      anchorShift = { dayShiftMs: shift, offsetMin: anchor.offsetMin };
    }
  }
  const fix = (t: T | null): T | null => {
    if (t === null || !t.floating || anchorShift === null) return t;
    return { ms: t.ms + anchorShift.dayShiftMs - anchorShift.offsetMin * 60_000, floating: false, offsetMin: anchorShift.offsetMin, precisionMs: t.precisionMs };
  };

  const entries = restarts.map((r) => toEntry(r, fix));
  const levels = {
    debug: levelCounts[Level.DEBUG]!, info: levelCounts[Level.INFO]!, warn: levelCounts[Level.WARN]!, error: levelCounts[Level.ERROR]!, fatal: levelCounts[Level.FATAL]!, unknown: levelCounts[Level.UNKNOWN]! - lines.empty,
  };
  const logLines = lines.json + lines.console + lines.journald;
  const content_level: StartupReport['content_level'] = levels.debug > 0 ? 'debug' : levels.info > 0 ? 'info' : logLines > 0 ? 'warn' : 'none';

  // Notes: what was odd about the input, in words.
  if (rs.truncated) {
    notes.push(
      `gateway.log shrank to ${rs.truncated.size_after} bytes while it was read (copy-and-truncate rotation at about byte ${rs.truncated.at_byte}): ` +
        'this report covers the part read before; the older lines are in the rotated copy (e.g. gateway.log.1)',
    );
  }
  if (rs.replaced) notes.push('the start of gateway.log changed while it was read (rotated and written again): figures near the end may mix old and new lines');
  if (lines.binary > 0) notes.push(`${lines.binary} line(s) of binary data (NUL or control bytes) were skipped`);
  if (lines.torn > 0) notes.push(`${lines.torn} JSON line(s) were cut short (no closing brace): a crash mid-write or a truncation; they were skipped`);
  if (lines.unparsable > 0) notes.push(`${lines.unparsable} line(s) looked like markers but did not parse; they were skipped`);
  if (lines.overlong > 0) notes.push(`${lines.overlong} line(s) over 1 MiB were skipped`);
  if (lines.text > 0) notes.push(`${lines.text} line(s) are not log lines (stdout banners, continuation lines or foreign text); they were ignored`);
  if (lines.duplicates_skipped > 0) notes.push(`console lines repeat the JSON lines beside them (stdout redirected into gateway.log): each event was counted once (${lines.duplicates_skipped} repeated marker lines dropped)`);
  if (lines.json > 0 && lines.console + lines.journald > 0 && lines.duplicates_skipped === 0) notes.push('the log mixes JSON and console lines; both were read');
  if (lines.before_first_restart > 0 && everStarted) notes.push(`${lines.before_first_restart} line(s) precede the first restart marker (the log begins mid-run)`);
  if (stopWithoutStart > 0) notes.push(`${stopWithoutStart} clean stop(s) whose start is not in this log`);
  if (dropped > 0) notes.push(`only the latest ${entries.length} of ${nextN - 1} restarts are listed`);

  let dates: StartupReport['timestamps']['dates'] = 'none';
  const ds = [...dateSources];
  if (ds.length === 1) dates = ds[0] === 'floating' ? (anchorShift ? 'anchored' : 'none') : ds[0]!;
  else if (ds.length > 1) dates = 'mixed';
  let tsNote: string | null = null;
  if (dateSources.has('floating')) {
    tsNote = anchorShift
      ? 'console lines carry no date: days were counted across midnights and the last line placed on the date of the file\'s modification time'
      : 'console lines carry no date: days are counted from the first line (day 1); a silence of more than a day cannot be seen';
  } else if (dateSources.has('file')) {
    tsNote = 'gateway.log has whole-second timestamps: spans between two lines are ±1 s';
  }
  for (const e of entries) {
    for (const s of Object.values(e.spans)) if (s && s.precision_seconds * 1000 < finestPrecisionMs) finestPrecisionMs = s.precision_seconds * 1000;
  }

  const report: StartupReport = {
    version: 1,
    source: { path, state, error, bytes_read: rs.bytesRead, truncated_while_reading: rs.truncated, replaced_while_reading: rs.replaced },
    lines,
    levels,
    content_level,
    timestamps: { dates, precision_seconds: Number.isFinite(finestPrecisionMs) ? finestPrecisionMs / 1000 : 1, note: tsNote },
    restarts_found: nextN - 1,
    restarts_dropped: dropped,
    restarts: entries,
    reloads: reloadsTotal,
    summary: summarize(entries),
    notes,
    advice: [],
  };
  report.advice = adviceFor(report, opts.configLogLevel ?? null);
  return report;
}

function toEntry(r: RestartState, fix: (t: T | null) => T | null): RestartEntry {
  const start = fix(r.start);
  const end = fix(r.endT);
  const last = fix(r.lastT);
  const agentInit = fix(r.agentInitT);
  const st = timeText(start);
  const spans: RestartEntry['spans'] = {
    to_agent_initialized: span(start, agentInit, r.startMarkers[0] ?? 'start', 'Agent initialized'),
    bootstrap_gap: null,
    gateway_start_event: msSpan(r.startEventMs, 'Runtime event: gateway.start'),
    gateway_ready_event: msSpan(r.readyEventMs, 'Runtime event: gateway.ready'),
    to_http_listening: span(start, fix(r.httpT), r.startMarkers[0] ?? 'start', 'Shared HTTP server listening'),
    to_channels_started: span(start, fix(r.channelsT), r.startMarkers[0] ?? 'start', 'Channel startup completed'),
  };
  // docs/picoclaw.md#the-startup-bootstrap: debug is the narrower window; info includes engine open and tool setup.
  if (r.shortExpandT && r.debugGapEnd) {
    spans.bootstrap_gap = span(fix(r.shortExpandT), fix(r.debugGapEnd.t), 'Registered core tool short_expand', `Registered core tool ${r.debugGapEnd.name}`);
  }
  if (!spans.bootstrap_gap && r.lastAgentReg && agentInit) {
    spans.bootstrap_gap = span(fix(r.lastAgentReg.t), agentInit, r.lastAgentReg.name, 'Agent initialized');
  }
  if (!spans.bootstrap_gap && r.phase === Phase.REGISTERING && (r.shortExpandT || r.lastAgentReg)) {
    const from = r.shortExpandT ? { t: r.shortExpandT, name: 'Registered core tool short_expand' } : { t: r.lastAgentReg!.t, name: r.lastAgentReg!.name };
    spans.bootstrap_gap = span(fix(from.t), last, from.name, r.end === 'running' ? 'last line so far' : 'last line before it died', true);
  }
  let ready: Span | null = spans.gateway_ready_event;
  if (!ready) {
    const a = spans.to_http_listening;
    const b = spans.to_channels_started;
    ready = a && b ? (a.seconds >= b.seconds ? a : b) : (a ?? b);
  }
  const warning_messages = [...(r.warnTexts ?? new Map<string, number>()).entries()]
    .sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]))
    .slice(0, 5)
    .map(([text, count]) => ({ text, count }));
  let level: RestartEntry['level'] = null;
  if (r.levelSet === 'debug' || r.levelSet === 'info' || r.levelSet === 'warn') level = r.levelSet;
  else if (r.levelMask & LEVEL_BIT(Level.DEBUG)) level = 'debug';
  else if (r.levelMask & LEVEL_BIT(Level.INFO)) level = 'info';
  else if (r.levelMask & (LEVEL_BIT(Level.WARN) | LEVEL_BIT(Level.ERROR))) level = 'warn';
  return {
    n: r.n,
    started_at: st.iso,
    started_at_text: st.text,
    start_markers: r.startMarkers,
    level,
    end: r.end ?? 'running',
    ended_at: timeText(end).iso,
    end_detail: r.endDetail,
    reached: REACHED[r.phase],
    spans,
    time_to_ready: ready,
    bootstrap_gap: spans.bootstrap_gap,
    gap: { ...r.gap, warning_messages },
    reloads: r.reloads,
    seahorse_off: r.seahorseOff,
    lines: r.lines,
    after_prune: null,
  };
}

/** Latest gap, latest time to ready, and the trend of the complete gaps. Pure. */
export function summarize(entries: RestartEntry[]): StartupSummary {
  const count = (e: RestartEnd) => entries.filter((r) => r.end === e).length;
  const withGap = entries.filter((r) => r.bootstrap_gap !== null);
  const lastGap = withGap[withGap.length - 1];
  const withReady = entries.filter((r) => r.time_to_ready !== null);
  const lastReady = withReady[withReady.length - 1];
  const complete = withGap.filter((r) => !r.bootstrap_gap!.lower_bound);
  let trend: StartupSummary['trend'] = null;
  if (complete.length >= 2) {
    const first = complete[0]!;
    const latest = complete[complete.length - 1]!;
    const change = latest.bootstrap_gap!.seconds - first.bootstrap_gap!.seconds;
    // Least-squares slope of gap seconds over days, when the restarts are dated.
    let perDay: number | null = null;
    const pts = complete.filter((r) => r.started_at !== null).map((r) => ({ x: Date.parse(r.started_at!) / 86_400_000, y: r.bootstrap_gap!.seconds }));
    if (pts.length >= 2) {
      const mx = pts.reduce((a, p) => a + p.x, 0) / pts.length;
      const my = pts.reduce((a, p) => a + p.y, 0) / pts.length;
      const sxx = pts.reduce((a, p) => a + (p.x - mx) ** 2, 0);
      if (sxx > 0) perDay = Math.round((pts.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx) * 1000) / 1000;
    }
    const noise = Math.max(2, 0.2 * first.bootstrap_gap!.seconds);
    trend = {
      restarts_with_gap: complete.length,
      first: { restart: first.n, started_at: first.started_at, seconds: first.bootstrap_gap!.seconds },
      latest: { restart: latest.n, started_at: latest.started_at, seconds: latest.bootstrap_gap!.seconds },
      change_seconds: Math.round(change * 1000) / 1000,
      per_day_seconds: perDay,
      direction: change > noise ? 'rising' : change < -noise ? 'falling' : 'flat',
    };
  }
  return {
    restarts: entries.length,
    stopped: count('stopped'),
    crashed: count('crashed'),
    failed: count('failed'),
    running: count('running'),
    latest_gap: lastGap ? { ...lastGap.bootstrap_gap!, restart: lastGap.n, started_at: lastGap.started_at } : null,
    latest_ready: lastReady ? { ...lastReady.time_to_ready!, restart: lastReady.n, started_at: lastReady.started_at } : null,
    trend,
  };
}

/** The exact settings that make the report possible (docs/picoclaw.md#the-startup-bootstrap). */
export const SETTINGS = {
  logLevelConfig: '"gateway": { "log_level": "info" }   (in config.json)',
  logLevelEnv: 'PICOCLAW_LOG_LEVEL=info   (in the gateway\'s environment, e.g. Environment= in its systemd unit)',
  events: '"events": { "logging": { "include": ["agent.*", "gateway.*"] } }   (in config.json)',
};

function adviceFor(r: StartupReport, configLevel: string | null): Advice[] {
  const out: Advice[] = [];
  const quiet = configLevel !== null && ['warn', 'warning', 'error', 'fatal'].includes(configLevel);
  if (r.source.state === 'ok' || r.source.state === 'empty') {
    if (r.content_level === 'warn' || r.content_level === 'none') {
      out.push({
        kind: 'enable_info',
        message:
          (r.content_level === 'none' ? 'gateway.log has no log lines.' : 'gateway.log holds only warnings and errors.') +
          ' PicoClaw logs at "warn" by default, and every startup, bootstrap, readiness and shutdown message is INFO or DEBUG: ' +
          'only crashes and failed starts show. Set the gateway\'s log level to info and restart it; the next restarts will be measured.',
        settings: [SETTINGS.logLevelConfig, SETTINGS.logLevelEnv, SETTINGS.events],
      });
    } else {
      if (!r.restarts.some((e) => e.spans.gateway_ready_event) && r.restarts.some((e) => e.end !== 'failed')) {
        out.push({
          kind: 'enable_events',
          message: 'no `Runtime event: gateway.ready` lines: figures come from whole-second timestamps (±1 s). Log the gateway events for millisecond figures.',
          settings: [SETTINGS.events],
        });
      }
      if (quiet) {
        out.push({
          kind: 'config_level_hides_restarts',
          message: `the gateway is now configured to log at "${configLevel}": restarts from now on will not be logged`,
          settings: [SETTINGS.logLevelConfig, SETTINGS.logLevelEnv],
        });
      }
    }
  }
  return out;
}

/** A prune pass from the guard's history (src/state/history.ts), structurally. */
export interface PrunePass {
  at: string;
  deleted_sessions: number;
  freed_bytes: number;
  outcome?: string;
}

export interface PruneEffect {
  at: string;
  deleted_sessions: number;
  freed_bytes: number;
  /** The gap of the last restart before the prune and of the first after it. */
  gap_before: { restart: number; seconds: number } | null;
  gap_after: { restart: number; seconds: number } | null;
}

/**
 * Mark each restart that came after a prune pass (the latest pass since the previous
 * restart), and pair each pass with the gaps around it, so the user sees the gap fall.
 * Restarts without a date cannot be placed and are left unmarked. Mutates `report.restarts`.
 */
export function markPrunes(report: StartupReport, passes: PrunePass[]): PruneEffect[] {
  const useful = passes
    .filter((p) => p.deleted_sessions > 0 && (p.outcome === undefined || p.outcome === 'ok' || p.outcome === 'partial'))
    .map((p) => ({ p, ms: Date.parse(p.at) }))
    .filter((x) => Number.isFinite(x.ms))
    .sort((a, b) => a.ms - b.ms);
  const dated = report.restarts.filter((r) => r.started_at !== null).map((r) => ({ r, ms: Date.parse(r.started_at!) }));
  let prev = -Infinity;
  for (const { r, ms } of dated) {
    const between = useful.filter((x) => x.ms > prev && x.ms <= ms);
    const last = between[between.length - 1];
    if (last) r.after_prune = { at: last.p.at, deleted_sessions: between.reduce((a, x) => a + x.p.deleted_sessions, 0), freed_bytes: between.reduce((a, x) => a + x.p.freed_bytes, 0) };
    prev = ms;
  }
  return useful.map(({ p, ms }) => {
    const before = [...dated].reverse().find((d) => d.ms < ms && d.r.bootstrap_gap && !d.r.bootstrap_gap.lower_bound);
    const after = dated.find((d) => d.ms >= ms && d.r.bootstrap_gap && !d.r.bootstrap_gap.lower_bound);
    return {
      at: p.at,
      deleted_sessions: p.deleted_sessions,
      freed_bytes: p.freed_bytes,
      gap_before: before ? { restart: before.r.n, seconds: before.r.bootstrap_gap!.seconds } : null,
      gap_after: after ? { restart: after.r.n, seconds: after.r.bootstrap_gap!.seconds } : null,
    };
  });
}

/** For the health report: the latest bootstrap gap in seconds (a lower bound when it never ended), or null. */
export function lastBootstrapGapSeconds(report: StartupReport): number | null {
  return report.summary.latest_gap?.seconds ?? null;
}

/**
 * The log alone cannot tell a running gateway from one that died after its last line.
 * Given whether the gateway is alive now (PID file + process, from the caller), settle the
 * latest restart: a `running` one whose process is gone becomes `crashed`. Mutates the
 * report and recomputes its summary.
 */
export function settleLatest(report: StartupReport, gatewayAlive: boolean): void {
  const latest = report.restarts[report.restarts.length - 1];
  if (!latest || latest.end !== 'running' || gatewayAlive) return;
  latest.end = 'crashed';
  latest.end_detail = (latest.end_detail ? latest.end_detail.replace(/^no closing line yet: /, '') + '; ' : '') + 'no closing line, and no gateway runs now (PID file absent or stale)';
  if (latest.bootstrap_gap?.lower_bound) latest.bootstrap_gap.to = 'last line before it died';
  report.summary = summarize(report.restarts);
}
