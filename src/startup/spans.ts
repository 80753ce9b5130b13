import { Level } from '../picoclaw/gatewaylog/gatewaylog.js';
import { LEVEL_BIT, Phase, type RestartState } from './restart.js';
import { collate } from '../io/collate.js';
import { timeText, type LineTime } from './times.js';
import type { RestartEntry, Span } from './types.js';

/**
 * The span rules: which figures a restart's logged markers allow, and nothing more. A span
 * exists only when both of its ends were logged (or it is marked a lower bound), names the two
 * markers it came from, and carries its precision (1 s for the file's whole-second timestamps,
 * 1 ms for `duration_ms`).
 */

const REACHED = ['starting', 'bootstrap', 'initialized', 'serving'] as const;

/** From a to b, when both are known and on the same footing (both dated or both floating). */
export function span(
  a: LineTime | null,
  b: LineTime | null,
  from: string,
  to: string,
  lowerBound = false,
): Span | null {
  if (a === null || b === null || a.floating !== b.floating) return null;
  const ms = b.ms - a.ms;
  if (ms < 0) return null;
  const s: Span = { seconds: ms / 1000, precision_seconds: Math.max(a.precisionMs, b.precisionMs) / 1000, from, to };
  if (lowerBound) s.lower_bound = true;
  return s;
}

/** A runtime event's `duration_ms`, measured by the gateway from the start of gateway.Run. */
export function msSpan(ms: number | null, to: string): Span | null {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return null;
  return { seconds: ms / 1000, precision_seconds: 0.001, from: 'gateway.Run start', to: `${to} duration_ms` };
}

/**
 * docs/picoclaw.md#the-startup-bootstrap: debug is the narrower window (short_expand → the next
 * core tool); info includes engine open and tool setup (last agent registration → `Agent
 * initialized`); a bootstrap that never ended is at least as long as up to its last line.
 */
function bootstrapGap(
  r: RestartState,
  fix: (t: LineTime | null) => LineTime | null,
  agentInit: LineTime | null,
): Span | null {
  let gap: Span | null = null;
  if (r.shortExpandT && r.debugGapEnd) {
    const to = `Registered core tool ${r.debugGapEnd.name}`;
    gap = span(fix(r.shortExpandT), fix(r.debugGapEnd.t), 'Registered core tool short_expand', to);
  }
  if (!gap && r.lastAgentReg && agentInit) {
    gap = span(fix(r.lastAgentReg.t), agentInit, r.lastAgentReg.name, 'Agent initialized');
  }
  if (!gap && r.phase === Phase.REGISTERING && (r.shortExpandT || r.lastAgentReg)) {
    const from = r.shortExpandT
      ? { t: r.shortExpandT, name: 'Registered core tool short_expand' }
      : { t: r.lastAgentReg!.t, name: r.lastAgentReg!.name };
    const to = r.end === 'running' ? 'last line so far' : 'last line before it died';
    gap = span(fix(from.t), fix(r.lastT), from.name, to, true);
  }
  return gap;
}

/** A restart as the report shows it; `fix` places floating times on the anchor's date. */
export function toEntry(r: RestartState, fix: (t: LineTime | null) => LineTime | null): RestartEntry {
  const start = fix(r.start);
  const end = fix(r.endT);
  const agentInit = fix(r.agentInitT);
  const st = timeText(start);
  const startName = r.startMarkers[0] ?? 'start';
  const spans: RestartEntry['spans'] = {
    to_agent_initialized: span(start, agentInit, startName, 'Agent initialized'),
    bootstrap_gap: null,
    gateway_start_event: msSpan(r.startEventMs, 'Runtime event: gateway.start'),
    gateway_ready_event: msSpan(r.readyEventMs, 'Runtime event: gateway.ready'),
    to_http_listening: span(start, fix(r.httpT), startName, 'Shared HTTP server listening'),
    to_channels_started: span(start, fix(r.channelsT), startName, 'Channel startup completed'),
  };
  spans.bootstrap_gap = bootstrapGap(r, fix, agentInit);
  let ready: Span | null = spans.gateway_ready_event;
  if (!ready) {
    const a = spans.to_http_listening;
    const b = spans.to_channels_started;
    ready = a && b ? (a.seconds >= b.seconds ? a : b) : (a ?? b);
  }
  const warning_messages = [...(r.warnTexts ?? new Map<string, number>()).entries()]
    .sort((x, y) => y[1] - x[1] || collate(x[0], y[0]))
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
