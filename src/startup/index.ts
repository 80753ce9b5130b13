/**
 * src/startup: gateway.log analysis — each gateway restart, how it ended, and its bootstrap gap.
 *
 * source.ts (byte sources) → framer.ts (lines) → router.ts (which lines to parse) → pairing.ts
 * (console/JSON twins) → tracker.ts (the restart state machine, fed markers) → spans.ts (figures)
 * → summary.ts, notes.ts; analyze.ts composes them. prunes.ts and view.ts place the guard's prune
 * passes between the restarts and settle the latest one for the command and the daemon.
 */
export { analyzeStartupLog, DEFAULT_MAX_RESTARTS } from './analyze.js';
export { SETTINGS } from './notes.js';
export { markPrunes, type PruneEffect, type PrunePass } from './prunes.js';
export { lastBootstrapGapSeconds, summarize } from './summary.js';
export type {
  Advice,
  AnalyzeOptions,
  GapCounts,
  LogSource,
  RestartEnd,
  RestartEntry,
  Span,
  StartupReport,
  StartupSummary,
} from './types.js';
export { settleAndMarkPrunes, settleLatest, type ViewOptions } from './view.js';
