import {
  Level,
  Marker,
  type LevelValue,
  type MarkerValue,
  type ParsedLine,
} from '../picoclaw/gatewaylog/gatewaylog.js';
import type { LineTime } from './times.js';
import type { GapCounts, RestartEnd } from './types.js';

/**
 * One gateway process as the log shows it, while the log is read: its startup stage, the
 * times its markers were logged at, its bootstrap counts. The tracker (tracker.ts) moves it
 * along; the span rules (spans.ts) turn it into a report entry.
 */

/** How far a start got. Only moves forward. */
export const Phase = { PREAMBLE: 0, REGISTERING: 1, INITIALIZED: 2, SERVING: 3 } as const;
export type PhaseValue = (typeof Phase)[keyof typeof Phase];

/**
 * Start markers in the order one process writes them (docs/picoclaw.md#startup-messages,
 * steps 1-3): a later one continues the same start.
 */
export const STAGE: Partial<Record<MarkerValue, number>> = {
  [Marker.LOG_LEVEL_SET]: 1,
  [Marker.FOUND_PID]: 2,
  [Marker.PID_NOT_RUNNING]: 3,
  [Marker.WROTE_PID]: 4,
  [Marker.WRITE_PID_FAILED]: 4,
};

export const LEVEL_BIT = (l: LevelValue) => 1 << l;

export interface RestartState {
  n: number;
  start: LineTime | null;
  startMarkers: string[];
  stage: number;
  phase: PhaseValue;
  end: RestartEnd | null;
  endT: LineTime | null;
  endDetail: string | null;
  levelSet: string | null;
  levelMask: number;
  lastT: LineTime | null;
  /** A later line than lastT, kept unparsed (bootstrap progress); parsed only if its time is needed. */
  lastRaw: { buf: Buffer; s: number; e: number; copied: boolean } | null;
  lastAgentReg: { t: LineTime | null; name: string } | null;
  shortExpandT: LineTime | null;
  debugGapEnd: { t: LineTime | null; name: string } | null;
  agentInitT: LineTime | null;
  startEventMs: number | null;
  readyEventMs: number | null;
  httpT: LineTime | null;
  channelsT: LineTime | null;
  shutdownT: LineTime | null;
  gap: GapCounts;
  warnTexts: Map<string, number> | null;
  reloads: number;
  seahorseOff: boolean;
  lines: number;
}

export function newRestart(n: number): RestartState {
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
    gap: {
      ingest_lines: 0,
      bootstrap_lines: 0,
      warnings: 0,
      bootstrap_failures: 0,
      database_locked: 0,
      warning_messages: [],
    },
    warnTexts: null,
    reloads: 0,
    seahorseOff: false,
    lines: 0,
  };
}

/** Only a restart logged at info or debug shows how far it got (at warn, the bootstrap's end is not logged). */
export function loggedInDetail(r: RestartState): boolean {
  return (r.levelMask & (LEVEL_BIT(Level.INFO) | LEVEL_BIT(Level.DEBUG))) !== 0;
}

/** A label for a start marker line, e.g. `Log level set to "info"`, `found pid file`. */
export function startLabel(kind: MarkerValue, p: ParsedLine): string {
  switch (kind) {
    case Marker.LOG_LEVEL_SET:
      return p.message;
    case Marker.FOUND_PID:
      return 'found pid file';
    case Marker.PID_NOT_RUNNING:
      return 'not running (PID file stale)';
    case Marker.WROTE_PID:
      return 'wrote pid file';
    case Marker.WRITE_PID_FAILED:
      return 'write pid file failed';
    default:
      return p.message;
  }
}
