import { errnoCode } from '../errors.js';
import { Level } from '../picoclaw/gatewaylog/gatewaylog.js';
import { LineFramer } from './framer.js';
import { adviceFor, inputNotes } from './notes.js';
import { DuplicatePairer } from './pairing.js';
import { LineRouter } from './router.js';
import { chunksOf, newReadState } from './source.js';
import { toEntry } from './spans.js';
import { summarize } from './summary.js';
import { anchored, anchorShift, LineTimes, timestampsOf, type LineTime } from './times.js';
import { RestartTracker } from './tracker.js';
import { newLineCounts, type AnalyzeOptions, type LogSource, type StartupReport } from './types.js';

/**
 * Startup gaps: every gateway restart found in gateway.log, how it ended, and every span
 * the log allows for it (docs/picoclaw.md#the-startup-bootstrap, docs/picoclaw.md#startup-messages).
 *
 * The log is streamed in fixed-size chunks: memory stays constant whatever the file's size
 * (the restarts kept are capped too). Each line gets a cheap scan (src/picoclaw/gatewaylog/gatewaylog.ts);
 * only marker lines, and WARN lines inside a bootstrap, are decoded and parsed.
 *
 * The pipeline: source (chunks) → framer (lines) → router (which lines to parse) → pairing
 * (console/JSON twins) → tracker (restarts), timed by LineTimes; then spans, summary, notes.
 */

/**
 * Restarts kept by default. Memory is bounded by it: in a crash loop (a restart every few KB
 * of log) kept restarts live long enough to be promoted and die in the old generation, so the
 * peak of a long crash-loop log grows with this cap; 300 keeps it under the log analysis's
 * memory goal (BENCHMARKS.md section 7, and "Figures that code comments carried").
 */
export const DEFAULT_MAX_RESTARTS = 300;

/**
 * The analysis. Never throws for what is in the log; a missing or unreadable file comes
 * back as `source.state` ('missing' / 'unreadable') so a caller (the daemon) can cache
 * "no data" instead of handling an error.
 */
export async function analyzeStartupLog(source: LogSource, opts: AnalyzeOptions = {}): Promise<StartupReport> {
  const maxRestarts = Math.max(1, opts.maxRestarts ?? DEFAULT_MAX_RESTARTS);
  const chunkBytes = Math.max(64, opts.chunkBytes ?? 1024 * 1024);
  const path = 'path' in source ? source.path : null;
  const rs = newReadState();
  const lines = newLineCounts();
  const times = new LineTimes();
  const tracker = new RestartTracker(maxRestarts);
  const pairer = new DuplicatePairer(lines, (kind, p, level) => tracker.marker(kind, p, level, times.of(p)));
  const router = new LineRouter(lines, tracker, pairer);
  const framer = new LineFramer(lines, router);

  let state: StartupReport['source']['state'] = 'ok';
  let error: string | null = null;
  const readNotes: string[] = [];
  try {
    for await (const buf of chunksOf(source, chunkBytes, rs)) {
      framer.feed(buf);
      tracker.chunkDone();
      if (opts.onChunk) await opts.onChunk(rs.bytesRead);
    }
    framer.end();
  } catch (err) {
    const code = errnoCode(err);
    error = code ?? (err instanceof Error ? err.message : String(err));
    if (rs.bytesRead === 0) state = code === 'ENOENT' ? 'missing' : 'unreadable';
    else readNotes.push(`reading stopped after ${rs.bytesRead} bytes: ${error}`);
  }
  if (state === 'ok' && rs.bytesRead === 0) state = 'empty';
  pairer.flush();
  tracker.finish();

  const restarts = tracker.restarts;
  const lastFloating = (): LineTime | undefined =>
    [...restarts]
      .reverse()
      .flatMap((r) => [r.lastT, r.endT, r.start])
      .find((t): t is LineTime => t !== null && t.floating);
  const shift = times.onlyFloating ? await anchorShift(opts.dateAnchor, path, lastFloating()) : null;
  const entries = restarts.map((r) => toEntry(r, anchored(shift)));

  const lc = router.levelCounts;
  const levels = {
    debug: lc[Level.DEBUG]!,
    info: lc[Level.INFO]!,
    warn: lc[Level.WARN]!,
    error: lc[Level.ERROR]!,
    fatal: lc[Level.FATAL]!,
    unknown: lc[Level.UNKNOWN]! - lines.empty,
  };
  const logLines = lines.json + lines.console + lines.journald;
  const content_level: StartupReport['content_level'] =
    levels.debug > 0 ? 'debug' : levels.info > 0 ? 'info' : logLines > 0 ? 'warn' : 'none';
  const notes = [
    ...readNotes,
    ...inputNotes({
      rs,
      lines,
      everStarted: tracker.everStarted,
      stopsWithoutStart: tracker.stopsWithoutStart,
      dropped: tracker.dropped,
      kept: entries.length,
      found: tracker.found,
    }),
  ];
  const spanPrecisions: number[] = [];
  for (const e of entries) for (const s of Object.values(e.spans)) if (s) spanPrecisions.push(s.precision_seconds);

  const report: StartupReport = {
    version: 1,
    source: {
      path,
      state,
      error,
      bytes_read: rs.bytesRead,
      truncated_while_reading: rs.truncated,
      replaced_while_reading: rs.replaced,
      ...(rs.parts.length > 0 ? { parts: rs.parts } : {}),
    },
    lines,
    levels,
    content_level,
    timestamps: timestampsOf(times, shift, spanPrecisions),
    restarts_found: tracker.found,
    restarts_dropped: tracker.dropped,
    restarts: entries,
    reloads: tracker.reloads,
    summary: summarize(entries),
    notes,
    advice: [],
  };
  report.advice = adviceFor(report, opts.configLogLevel ?? null);
  return report;
}
