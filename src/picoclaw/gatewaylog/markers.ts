/**
 * The vocabulary of gateway.log (docs/picoclaw.md#gatewaylog): line formats, levels, the
 * messages the startup report reacts to (matched as latin1 text and as UTF-8 bytes), and
 * the shape of a parsed line. Tables only: the scanner and the parsers import them.
 */

export const LineFormat = { EMPTY: 0, JSON: 1, CONSOLE: 2, JOURNALD: 3, TEXT: 4, BINARY: 5 } as const;
export type LineFormatValue = (typeof LineFormat)[keyof typeof LineFormat];

/** Levels in zerolog's order; 0 = unknown. */
export const Level = { UNKNOWN: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, FATAL: 5 } as const;
export type LevelValue = (typeof Level)[keyof typeof Level];

/** The messages the startup report reacts to (docs/picoclaw.md#startup-messages). */
export const Marker = {
  NONE: 0,
  /**
   * INFO gateway `Log level set to "<lvl>"`: the first line of a new process when not `-d`
   * (docs/picoclaw.md#recognising-a-restart).
   */
  LOG_LEVEL_SET: 1,
  /** INFO pid `found pid file (PID: n, version: v)` (or WARN `… but process is not picoclaw`). */
  FOUND_PID: 2,
  /**
   * WARN pid `not running (PID: n) so will remove the pid file: …`: the previous process died
   * without a clean stop.
   */
  PID_NOT_RUNNING: 3,
  /**
   * DEBUG pid `wrote pid file: <path> success`: the restart marker at debug
   * (docs/picoclaw.md#recognising-a-restart).
   */
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
export function matchMarker(str: string, msgStart: number, e: number, jsonQuoted: boolean): MarkerValue {
  const list = BY_FIRST.get(str.charCodeAt(msgStart));
  if (list === undefined) return Marker.NONE;
  for (const d of list) {
    if (!str.startsWith(d.text, msgStart)) continue;
    if (!d.exact) return d.kind;
    const after = msgStart + d.text.length;
    if (jsonQuoted) {
      if (str.charCodeAt(after) === 34) return d.kind;
    } else if (after >= e || str.charCodeAt(after) === 32 || str.charCodeAt(after) === 13) {
      return d.kind;
    }
  }
  return Marker.NONE;
}

/** Marker texts as UTF-8 bytes, grouped by their first byte. */
const BYTES_BY_FIRST = new Map<number, { kind: MarkerValue; bytes: Buffer; exact: boolean }[]>();
for (const d of DEFS) {
  const bytes = Buffer.from(d.text, 'utf8');
  const list = BYTES_BY_FIRST.get(bytes[0]!) ?? [];
  list.push({ kind: d.kind, bytes, exact: d.exact });
  list.sort((a, b) => b.bytes.length - a.bytes.length);
  BYTES_BY_FIRST.set(bytes[0]!, list);
}

/** The marker whose text starts at byte `msgStart` of a JSON string value (it ends at `"`), or NONE. */
export function matchMarkerBytes(buf: Uint8Array, msgStart: number, e: number): MarkerValue {
  const list = BYTES_BY_FIRST.get(buf[msgStart]!);
  if (list === undefined) return Marker.NONE;
  next: for (const d of list) {
    const b = d.bytes;
    if (msgStart + b.length > e) continue;
    for (let i = 1; i < b.length; i++) if (buf[msgStart + i] !== b[i]) continue next;
    if (!d.exact || buf[msgStart + b.length] === 34) return d.kind;
  }
  return Marker.NONE;
}

/**
 * Markers whose meaning is their time and message alone (plus `name` for core tools): below
 * WARN they are read straight from the bytes, without JSON.parse. The rest (events with
 * duration_ms, errors) are parsed in full.
 */
export const LIGHT_MARKERS: ReadonlySet<MarkerValue> = new Set<MarkerValue>([
  Marker.LOG_LEVEL_SET,
  Marker.LEVEL_CHANGING,
  Marker.FOUND_PID,
  Marker.PID_NOT_RUNNING,
  Marker.WROTE_PID,
  Marker.CORE_TOOL,
  Marker.AGENT_REGISTERED,
  Marker.INGEST,
  Marker.BOOTSTRAP_INFO,
  Marker.AGENT_INITIALIZED,
  Marker.HTTP_LISTENING,
  Marker.CHANNELS_STARTED,
  Marker.SHUTTING_DOWN,
  Marker.GATEWAY_STOPPED,
  Marker.REMOVE_PID,
  Marker.RELOAD,
  Marker.MANUAL_RELOAD,
]);

/** zerolog's level names, as the JSON file writes them (`trace` counts as debug, `panic` as fatal). */
export const JSON_LEVELS: Record<string, LevelValue> = {
  debug: Level.DEBUG,
  info: Level.INFO,
  warn: Level.WARN,
  error: Level.ERROR,
  fatal: Level.FATAL,
  panic: Level.FATAL,
  trace: Level.DEBUG,
};

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
