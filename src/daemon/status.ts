import { statSync } from 'node:fs';
import { describeSchedule } from './schedule.js';
import { join } from 'node:path';
import type { HealthReport } from '../health/index.js';
import { formatBytes, WHOLE_MIB } from '../io/bytes.js';
import type { Reply } from './server.js';
import type { PruneOutcome } from '../metrics/guard-metrics.js';
import { HISTORY_FILE, readHistory } from '../state/history.js';
import type { PassSummary } from './pass-summary.js';
import { capacityFor, fillSynthetic, GatewayTracker, ReadingHistory, sampleOf } from './history.js';
import type { StartupPrediction } from '../startup-model/learn.js';
import type { Readings, StartupView } from './readings.js';
import type { DaemonSettings } from './settings.js';
import { MAX_CHART_POINTS, renderStatusPage, STYLE_HASH, type GapPrediction, type PassRow } from './status-page.js';
import { instantMs } from '../picoclaw/time.js';

/**
 * What the status page needs beyond the readings cache: the history of readings, when the
 * gateway entered its state, the passes (the guard's prune history plus this daemon's own
 * passes, which the history file leaves out when they deleted nothing), and the rendered
 * page. The page is rendered from these objects alone (no file, no process) at the first
 * request after the cache changed, then served as is until the next change: a daemon
 * nobody looks at renders nothing (its idle memory stays where it was), and a page that
 * is open costs one render per refresh (BENCHMARKS.md section 6).
 */
export const HTML_TYPE = 'text/html; charset=utf-8';
/** Tests and the footprint benchmark only: start with this many synthetic readings ('full': a whole buffer). */
export const HISTORY_FILL_ENV = 'PICOGUARD_TEST_HISTORY_FILL';

/** The page can fetch nothing and run nothing: its CSS and SVG are inline. */
const PAGE_HEADERS = {
  'content-security-policy': `default-src 'none'; style-src ${STYLE_HASH}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  'referrer-policy': 'no-referrer',
};

const OWN_PASSES = 20;

type Schedule = { enabled: boolean; running: boolean; next_run_at_ms: number | null };

export class StatusState {
  private history: ReadingHistory;
  private readonly gateway = new GatewayTracker();
  private lastHealth: HealthReport | null = null;
  private own: PassRow[] = [];
  private undated: { at_ms: number; per_agent: Record<string, number> } | null = null;
  private filePasses: PassRow[] = [];
  private fileKey: string | null = null;
  private body: Buffer | null = null;
  private source: { readings: Readings; schedule: Schedule } | null = null;

  constructor(
    private settings: DaemonSettings,
    env: NodeJS.ProcessEnv,
    private readonly version: string,
    private readonly startedAtMs: number,
  ) {
    this.history = new ReadingHistory(capacityFor(settings.metrics.refresh_seconds));
    const fill = env[HISTORY_FILL_ENV];
    if (fill)
      fillSynthetic(
        this.history,
        fill === 'full' ? this.history.capacity - 1 : Number(fill) || 0,
        settings.metrics.refresh_seconds,
        Date.now(),
      );
  }

  reconfigure(settings: DaemonSettings): void {
    this.settings = settings;
    this.history = this.history.resized(capacityFor(settings.metrics.refresh_seconds));
    this.fileKey = null;
  }

  get historyLength(): number {
    return this.history.length;
  }

  /** After a refresh: keep a new health reading and re-read the prune history if it changed. */
  observe(health: HealthReport | null): void {
    if (health && health !== this.lastHealth) {
      this.lastHealth = health;
      const at = instantMs(health.collected_at);
      this.history.push(sampleOf(health, at));
      if (health.picoclaw.available) this.gateway.observe(health.picoclaw.gateway.state, at);
    }
    this.readPassFile();
  }

  /** A pass of this daemon ended. */
  notePass(finishedMs: number, outcome: PruneOutcome, report: PassSummary | null): void {
    this.own.unshift({
      at_ms: finishedMs,
      outcome,
      deleted_sessions: report?.totals.deleted_sessions ?? 0,
      freed_bytes: report?.totals.freed_bytes ?? 0,
      sessions_after: report ? report.totals.sessions - report.totals.deleted_sessions : null,
    });
    this.own.length = Math.min(this.own.length, OWN_PASSES);
    if (report && !report.skipped) {
      this.undated = { at_ms: finishedMs, per_agent: report.undated_kept_per_agent };
    }
    this.readPassFile();
  }

  private readPassFile(): void {
    const s = this.settings;
    let key: string;
    try {
      const st = statSync(join(s.stateDir, HISTORY_FILE));
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      key = 'none';
    }
    if (key === this.fileKey) return;
    this.fileKey = key;
    this.filePasses = readHistory(s.stateDir, s.home.home)
      .slice(-50)
      .map((e) => ({
        at_ms: instantMs(e.at),
        outcome: e.outcome,
        deleted_sessions: e.deleted_sessions,
        freed_bytes: e.freed_bytes,
        sessions_after: e.sessions_after,
      }))
      .filter((e) => Number.isFinite(e.at_ms));
  }

  /** The history file's passes and this daemon's, newest first; a pass in both counts once. */
  passes(): PassRow[] {
    const out = [...this.filePasses];
    for (const o of this.own) if (!out.some((f) => Math.abs(f.at_ms - o.at_ms) < 10_000)) out.push(o);
    return out.sort((a, b) => b.at_ms - a.at_ms);
  }

  /** The cache changed: the next request renders the page again. */
  invalidate(readings: Readings, schedule: Schedule): void {
    this.source = { readings, schedule };
    this.body = null;
  }

  private render(readings: Readings, schedule: Schedule): Buffer {
    const s = this.settings;
    const nowMs = Date.now();
    const tolerance = s.metrics.refresh_seconds * 2000;
    const html = renderStatusPage({
      nowMs,
      version: this.version,
      startedAtMs: this.startedAtMs,
      refreshSeconds: s.metrics.refresh_seconds,
      health: readings.health,
      samples: this.history.thinned(MAX_CHART_POINTS),
      historyLength: this.history.length,
      historyCapacity: this.history.capacity,
      gateway: this.gateway.current,
      undated: this.undated,
      policy: s.policySources,
      intervalSeconds: s.intervalSeconds,
      intervalSource: s.intervalSource,
      cron: s.schedule ? { text: describeSchedule(s.schedule), next_runs_ms: s.schedule.nextRuns(3, nowMs) } : null,
      passes: this.passes(),
      schedule,
      startup: readings.startup,
      startupMissing: readings.startupMissing,
      sessionsAt: (ms) => this.history.sessionsAt(ms, tolerance),
      prediction: predictionOf(readings.startup, readings.prediction),
      maxDbBytes: s.policy.max_db_size_mb > 0 ? s.policy.max_db_size_mb * 1024 * 1024 : null,
    });
    return Buffer.from(html);
  }

  reply(): Reply | null {
    if (!this.body && this.source) this.body = this.render(this.source.readings, this.source.schedule);
    return this.body ? { status: 200, contentType: HTML_TYPE, body: this.body, headers: PAGE_HEADERS } : null;
  }
}

/**
 * The startup model's forecast of the next restart's gap (src/startup-model/), when it has
 * one; a report that carries `prediction.next_gap_seconds` is read too. Anything else is
 * ignored, so the page never shows a made-up figure.
 */
export function predictionOf(st: StartupView | null, model?: StartupPrediction | null): GapPrediction | null {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  if (model && model.state === 'ok' && num(model.predicted_seconds) !== null) {
    const at = model.predicted_seconds!;
    const err = num(model.error_seconds);
    return {
      next_gap_seconds: at,
      low_seconds: err === null ? null : Math.max(0, at - err),
      high_seconds: err === null ? null : at + err,
      basis:
        `${model.volume.sessions} sessions / ${formatBytes(model.volume.jsonl_bytes, WHOLE_MIB)}` +
        ` of the default agent, from ${model.measured_samples} measured restarts`,
    };
  }
  const p = (st?.report as { prediction?: unknown } | undefined)?.prediction as
    Partial<GapPrediction> | null | undefined;
  if (!p || typeof p !== 'object' || typeof p.next_gap_seconds !== 'number' || !Number.isFinite(p.next_gap_seconds))
    return null;
  return {
    next_gap_seconds: p.next_gap_seconds,
    low_seconds: num(p.low_seconds),
    high_seconds: num(p.high_seconds),
    basis: typeof p.basis === 'string' ? p.basis : null,
  };
}
