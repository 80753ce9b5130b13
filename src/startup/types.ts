/**
 * The startup report's shape: what `startup --json` prints and the daemon serves. Every field
 * here is part of the JSON report; a change shows in the golden reports (test/fixtures/logs).
 */

/**
 * What to read: a file (read by position, so a truncation under the reader is seen), an open
 * file descriptor read sequentially (standard input: a pipe or a redirected file), or any
 * stream of chunks (tests, the daemon).
 */
export type LogSource =
  | { path: string; /** Read its kept parts first (default true; src/startup/source.ts). */ parts?: boolean }
  | { fd: number }
  | { stream: AsyncIterable<Buffer | string>; name?: string };

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
  /**
   * The distinct warning texts (their `error` field when there is one, cut to 160 characters),
   * most frequent first, at most 5.
   */
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
    /**
     * The silent seahorse bootstrap (debug: short_expand → next core tool; info: last agent
     * registration → `Agent initialized`).
     */
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
  /**
   * The preferred "time to ready": gateway.ready's duration_ms, else start → the later of
   * HTTP listening / channels started.
   */
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
    /**
     * The kept parts of a cut log read before the file, oldest first (`bytes` uncompressed;
     * `error` when one could not be read to its end). Present only when there were any.
     */
    parts?: { path: string; bytes: number; error: string | null }[];
  };
  lines: LineCounts;
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

export interface LineCounts {
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
}

/** Every count at zero, in the report's key order. */
export function newLineCounts(): LineCounts {
  return {
    total: 0,
    json: 0,
    console: 0,
    journald: 0,
    text: 0,
    binary: 0,
    empty: 0,
    torn: 0,
    unparsable: 0,
    overlong: 0,
    duplicates_skipped: 0,
    before_first_restart: 0,
  };
}
