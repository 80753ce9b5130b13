import { statSync } from 'node:fs';
import { errorMessage } from '../errors.js';
import { statfsFreeSpace } from '../io/freespace.js';
import { collectHealth, type HealthReport } from '../health/index.js';
import { countSessions } from '../health/picoclaw.js';
import {
  analyzeStartupLog,
  lastBootstrapGapSeconds,
  settleAndMarkPrunes,
  type PruneEffect,
  type StartupReport,
} from '../startup/index.js';
import { newVcgencmdCache } from '../health/vcgencmd.js';
import { REFRESH_SOURCES, type RefreshSource, type RefreshStat } from '../metrics/guard-metrics.js';
import type { DaemonSettings } from './settings.js';
import { dbFileBytes } from '../picoclaw/seahorse.js';
import {
  bootstrapDir,
  DEFAULT_TARGET_SECONDS,
  learn,
  measureVolume,
  predictionFor,
  type Learned,
  type StartupPrediction,
} from '../startup-model/learn.js';

/**
 * The readings the daemon's endpoints answer from, refreshed in the background:
 * - health (sysfs, procfs, statfs, vcgencmd at most once, two loopback probes of the
 *   gateway) every `metrics.refresh_seconds`;
 * - the sessions folders (one readdir each, an lstat per transcript) every
 *   `metrics.sessions_refresh_seconds` and after each prune pass; health reuses the counts;
 * - gateway.log only when its size, mtime or inode changed, at most every
 *   `metrics.startup_refresh_seconds` (a big log costs a full read).
 * A request reads these objects and nothing else.
 */
type Count = ReturnType<typeof countSessions>;

export interface StartupView {
  report: StartupReport;
  prunes: PruneEffect[];
  analyzed_at: string;
}

export class Readings {
  health: HealthReport | null = null;
  startup: StartupView | null = null;
  /** Why there is no startup report (no gateway.log yet, unreadable). */
  startupMissing: { error: string; path: string } | null = null;
  /** The next restart's predicted bootstrap gap (src/startup-model/), at the last counted volume. */
  prediction: StartupPrediction | null = null;
  private learned: Learned | null = null;
  readonly refresh: Record<RefreshSource, RefreshStat> = Object.fromEntries(
    REFRESH_SOURCES.map((s) => [s, { count: 0, last_duration_seconds: null, last_at_ms: null }]),
  ) as Record<RefreshSource, RefreshStat>;

  private counts = new Map<string, Count>();
  private sessionsAt = -Infinity;
  private startupAt = -Infinity;
  private logKey: string | null = null;
  private readonly vcgencmdCache = newVcgencmdCache();

  constructor(private settings: DaemonSettings) {}

  /** SIGHUP: new settings; the next refresh re-reads everything. */
  reconfigure(settings: DaemonSettings): void {
    this.settings = settings;
    this.sessionsAt = -Infinity;
    this.startupAt = -Infinity;
    this.logKey = null;
  }

  /** Recount the sessions folders at the next refresh (after a prune pass). */
  invalidateSessions(): void {
    this.sessionsAt = -Infinity;
  }

  private timed<T>(source: RefreshSource, fn: () => T): T {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      this.note(source, t0);
    }
  }

  private note(source: RefreshSource, t0: number): void {
    const st = this.refresh[source];
    st.count++;
    st.last_duration_seconds = Math.round(performance.now() - t0) / 1000;
    st.last_at_ms = Date.now();
  }

  refreshSessions(nowMs = performance.now()): boolean {
    if (nowMs - this.sessionsAt < this.settings.metrics.sessions_refresh_seconds * 1000) return false;
    this.timed('sessions', () => {
      const next = new Map<string, Count>();
      for (const { dir } of this.settings.home.sessionsDirs) next.set(dir, countSessions(dir));
      this.counts = next;
    });
    this.sessionsAt = nowMs;
    this.predict(null);
    return true;
  }

  /** Re-read gateway.log if it changed and the last read is old enough. */
  async refreshStartup(nowMs = performance.now()): Promise<boolean> {
    const path = this.settings.home.logPath;
    let key: string;
    try {
      const st = statSync(path);
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      key = `error:${errorMessage(err)}`;
    }
    if (key === this.logKey) return false;
    if (nowMs - this.startupAt < this.settings.metrics.startup_refresh_seconds * 1000) return false;
    const t0 = performance.now();
    try {
      const report = await analyzeStartupLog(
        { path },
        { configLogLevel: this.settings.home.gateway.logLevel, maxRestarts: 200 },
      );
      if (report.source.state === 'missing' || report.source.state === 'unreadable') {
        this.startup = null;
        this.startupMissing = {
          path,
          error:
            report.source.state === 'missing'
              ? 'no gateway.log yet (the gateway creates it when it starts)'
              : `cannot read it: ${report.source.error}`,
        };
      } else {
        const view = { stateDir: this.settings.stateDir, ownLog: true };
        const prunes = await settleAndMarkPrunes(report, this.settings.home, view);
        this.startup = { report, prunes, analyzed_at: new Date().toISOString() };
        this.startupMissing = null;
        await this.learnFrom(report);
      }
    } finally {
      this.note('startup', t0);
    }
    this.logKey = key;
    this.startupAt = nowMs;
    return true;
  }

  /**
   * Pair the stored samples with the restarts just read; a restart seen for the first time
   * (started within the last 10 minutes, no pre-start sample for it) gets the volume now.
   */
  private async learnFrom(report: StartupReport): Promise<void> {
    const volume = measureVolume(this.settings.home);
    this.learned = await learn(this.settings.home, this.settings.stateDir, {
      nowMs: Date.now(),
      write: true,
      report,
      observe: volume,
    });
    this.predict(volume);
  }

  private predict(volume: ReturnType<typeof measureVolume> | null): void {
    if (!this.learned) return;
    const s = this.settings;
    let v = volume;
    if (!v) {
      const c = this.counts.get(bootstrapDir(s.home));
      if (!c) return;
      const db = dbFileBytes(s.home.seahorsePath);
      v = { sessions: c.sessions, jsonl_bytes: c.jsonl_bytes, db_bytes: db.db > 0 ? db.total : null };
    }
    this.prediction = predictionFor(
      this.learned,
      v,
      s.policy.max_bootstrap_seconds > 0 ? s.policy.max_bootstrap_seconds : DEFAULT_TARGET_SECONDS,
    );
  }

  async refreshHealth(signal?: AbortSignal): Promise<HealthReport> {
    const s = this.settings;
    const t0 = performance.now();
    try {
      this.health = await collectHealth({
        signal,
        sysRoot: s.sysRoot,
        procRoot: s.procRoot,
        vcgencmd: s.vcgencmd,
        stateDir: s.stateDir,
        home: s.home,
        thresholds: s.thresholds,
        // The real one: the daemon process also runs passes, where no rehearsed free space may reach.
        freeSpace: statfsFreeSpace,
        cache: this.vcgencmdCache,
        lastBootstrapGapSeconds: this.startup ? lastBootstrapGapSeconds(this.startup.report) : null,
        // Counted on their own cadence; a folder not counted yet (SIGHUP added an agent) is counted now.
        countSessions: (dir) => this.counts.get(dir) ?? countSessions(dir),
      });
    } finally {
      this.note('health', t0);
    }
    return this.health;
  }
}
