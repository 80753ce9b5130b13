import { existsSync, mkdirSync } from 'node:fs';
import { Cron } from 'croner';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { renderMetrics, emptyPruneStats, type PruneOutcome, type PruneStats } from '../metrics/guard-metrics.js';
import { isLoopback, jsonReply, startServer, METRICS_TYPE, type Reply, type RunningServer } from '../metrics/server.js';
import { TextfileWriter } from '../metrics/textfile.js';
import type { PassSummary } from './pass-summary.js';
import { ClockWatch } from './clock-watch.js';
import { assertPicoClawHome } from '../picoclaw/home.js';
import { createLogger, type Logger } from './log.js';
import { firstRunAt, lastCompletedAt, writeMarker } from '../state/marker.js';
import { PassRunner } from './pass-runner.js';
import { Readings } from './readings.js';
import { resolveSettings, type DaemonSettings, type RunFlags } from './settings.js';
import { StatusState } from './status.js';
import type { PassOutput } from './prune-child.js';
import { guardVersion } from '../version.js';

/**
 * `picoclaw-guard run`: the sidecar. One process that
 * - prunes on a schedule (croner, `protect`: never two passes at once; a last-run marker
 *   so a restart does not repeat a pass that just finished), each pass in a child process;
 * - keeps a cache of readings refreshed in the background (src/daemon/readings.ts);
 * - serves the status page (/) and /health, /metrics, /startup and /prune from that cache, and optionally
 *   mirrors /metrics into a node_exporter textfile folder;
 * - on SIGTERM/SIGINT stops the pass between sessions, stops serving and resolves 0;
 *   on SIGHUP re-reads its configuration and reschedules.
 */
export interface DaemonOptions {
  flags: RunFlags;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

/** How long a stopping daemon waits for the pass in progress before ending its thread. */
export const STOP_GRACE_MS = 4000;
/** A pass that could not run (gateway starting, lock held, a store not writable) is retried this soon. */
export const RETRY_SECONDS = 300;

export function outcomeOf(out: PassOutput): PruneOutcome {
  if (!out.ok) return 'failed';
  const r = out.report;
  switch (r.exit_code) {
    case ExitCode.OK:
      return r.skipped ? 'disabled' : 'ok';
    case ExitCode.PARTIAL:
      return 'partial';
    case ExitCode.LOCKED:
      return 'locked';
    case ExitCode.GATEWAY_STARTING:
      return 'gateway_not_ready';
    case ExitCode.SKIPPED:
      return 'skipped';
    default:
      return 'failed';
  }
}

interface LastPass {
  report: PassSummary | null;
  error: string | null;
  exit_code: number | null;
  outcome: PruneOutcome;
  finished_at: string;
}

export class Daemon {
  private settings: DaemonSettings;
  private readonly log: Logger;
  private readonly readings: Readings;
  private readonly status: StatusState;
  private readonly runner = new PassRunner();
  private readonly stats: PruneStats = emptyPruneStats();
  private readonly version = guardVersion();
  private readonly startedAt = Date.now();
  /** Wall clock against monotonic between passes: a jump skips that pass's age check. */
  private readonly clockWatch = new ClockWatch();
  private server: RunningServer | null = null;
  private textfile: TextfileWriter | null = null;
  private job: Cron | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private currentPass: Promise<void> | null = null;
  private lastPass: LastPass | null = null;
  private healthReply: Reply | null = null;
  private startupReply: Reply | null = null;
  private stopping = false;
  private resolveDone!: (code: number) => void;
  readonly done: Promise<number>;
  private readonly requests = new Map<string, number>();
  private readonly signalHandlers: [NodeJS.Signals, () => void][] = [];
  /** Aborted at stop: a probe in flight must not keep the process alive after SIGTERM. */
  private readonly stopSignal = new AbortController();
  /** The last error logged per background job: a failure that repeats every refresh is logged once. */
  private readonly lastProblem = new Map<string, string>();

  constructor(private readonly opts: DaemonOptions) {
    this.settings = resolveSettings(opts.flags, opts.env ?? process.env);
    assertPicoClawHome(this.settings.home);
    this.log = opts.logger ?? createLogger();
    this.readings = new Readings(this.settings);
    this.status = new StatusState(this.settings, opts.env ?? process.env, this.version, this.startedAt);
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  private get env(): NodeJS.ProcessEnv {
    return this.opts.env ?? process.env;
  }

  async start(): Promise<void> {
    const s = this.settings;
    try {
      mkdirSync(s.stateDir, { recursive: true });
    } catch (err) {
      this.log.warn({ state_dir: s.stateDir, error: errnoCode(err) ?? errorMessage(err) }, 'the state folder cannot be created: passes will not be remembered across restarts');
    }
    // Signals first: SIGTERM during the first refresh (a slow gateway probe) still exits 0.
    this.installSignals();
    await this.refresh(true);
    if (this.stopping) return;
    this.server = await startServer({
      host: s.host,
      port: s.port,
      token: () => this.settings.token,
      route: (path) => this.route(path),
      onRequest: (path, status) => {
        const key = `${['/health', '/metrics', '/startup', '/prune', '/'].includes(path) ? path : 'other'} ${status}`;
        this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
      },
    });
    if (this.stopping) {
      await this.server.close();
      return;
    }
    this.schedule('start');
    this.log.info(
      {
        host: this.server.host,
        port: this.server.port,
        auth: s.token ? `bearer (${s.tokenSource})` : 'none (loopback)',
        home: s.home.home,
        state_dir: s.stateDir,
        config: s.configPath,
        textfile: this.textfile?.path ?? null,
        refresh_seconds: s.metrics.refresh_seconds,
        prune: { enabled: this.stats.enabled, interval_seconds: this.stats.interval_seconds, next_run: this.stats.next_run_at_ms ? new Date(this.stats.next_run_at_ms).toISOString() : null },
        version: this.version,
      },
      'listening',
    );
    this.armRefresh();
  }

  // --- the cache -------------------------------------------------------------------------

  /** Log a background failure when it starts or changes (not at every refresh); log its end once. */
  private problem(job: string, error: string | null, fields: Record<string, unknown>, msg: string): void {
    const last = this.lastProblem.get(job);
    if (error === null) {
      if (last !== undefined) {
        this.lastProblem.delete(job);
        this.log.info({ job }, `${job}: working again`);
      }
      return;
    }
    if (last === error) return;
    this.lastProblem.set(job, error);
    this.log.warn({ ...fields, error }, msg);
  }

  private armRefresh(): void {
    if (this.stopping) return;
    this.refreshTimer = setTimeout(() => {
      void this.refresh(false).finally(() => this.armRefresh());
    }, this.settings.metrics.refresh_seconds * 1000);
  }

  /** One background refresh; concurrent calls share it. Errors are logged and the old readings stay. */
  refresh(first: boolean): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        try {
          await this.readings.refreshStartup();
          this.problem('startup', null, {}, '');
        } catch (err) {
          this.problem('startup', errorMessage(err), {}, 'reading gateway.log failed');
        }
        try {
          this.readings.refreshSessions();
          this.problem('sessions', null, {}, '');
        } catch (err) {
          this.problem('sessions', errorMessage(err), {}, 'counting sessions failed');
        }
        try {
          await this.readings.refreshHealth(this.stopSignal.signal);
          this.problem('health', null, {}, '');
        } catch (err) {
          if (first) throw err;
          this.problem('health', errorMessage(err), {}, 'collecting health failed');
        }
        // Stopped meanwhile: the textfile is already removed and must not come back.
        if (this.stopping) return;
        this.rebuild();
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** Rebuild the bodies requests are answered with, and the textfile. */
  private rebuild(): void {
    const h = this.readings.health;
    this.healthReply = h ? jsonReply(h.status === 'CRITICAL' ? 503 : 200, h) : null;
    const st = this.readings.startup;
    this.startupReply = st
      ? jsonReply(200, { ...st.report, prunes: st.prunes, analyzed_at: st.analyzed_at, prediction: this.readings.prediction })
      : jsonReply(404, { error: this.readings.startupMissing?.error ?? 'gateway.log not read yet', path: this.readings.startupMissing?.path ?? this.settings.home.logPath });
    this.status.observe(h);
    this.renderStatus();
    this.writeTextfile();
  }

  private renderStatus(): void {
    this.status.invalidate(this.readings, { enabled: this.stats.enabled, running: this.stats.running, next_run_at_ms: this.stats.next_run_at_ms });
  }

  private writeTextfile(): void {
    const dir = this.settings.metrics.textfile_dir;
    if (!dir) {
      this.textfile = null;
      return;
    }
    if (this.textfile?.dir !== dir) this.textfile = new TextfileWriter(dir);
    try {
      this.textfile.write(this.metricsText(false));
      this.problem('textfile', null, {}, '');
    } catch (err) {
      this.problem('textfile', errnoCode(err) ?? errorMessage(err), { dir }, 'cannot write the textfile collector file');
    }
  }

  private metricsText(withHttp: boolean): string {
    const s = this.settings;
    let text = renderMetrics({
      version: this.version,
      health: this.readings.health,
      startup: this.readings.startup?.report ?? null,
      prune: this.stats,
      seahorse_limit_bytes: s.policy.max_db_size_mb > 0 ? s.policy.max_db_size_mb * 1024 * 1024 : null,
      refresh: this.readings.refresh,
      prediction: this.readings.prediction,
    });
    if (withHttp && this.requests.size > 0) {
      // Only on /metrics (the textfile has no HTTP side): requests served, by endpoint and status.
      const lines = ['# HELP picoclaw_guard_http_requests_total HTTP requests the daemon answered, by endpoint and status code.', '# TYPE picoclaw_guard_http_requests_total counter'];
      for (const [k, n] of [...this.requests.entries()].sort()) {
        const [path, code] = k.split(' ');
        lines.push(`picoclaw_guard_http_requests_total{endpoint="${path}",code="${code}"} ${n}`);
      }
      text += lines.join('\n') + '\n';
    }
    return text;
  }

  private route(path: string): Reply | null {
    switch (path) {
      case '/':
        return this.status.reply() ?? { status: 503, contentType: 'text/plain; charset=utf-8', body: Buffer.from('no reading yet\n') };
      case '/health':
        return this.healthReply ?? jsonReply(503, { error: 'no health reading yet' });
      case '/metrics':
        return { status: 200, contentType: METRICS_TYPE, body: Buffer.from(this.metricsText(true)) };
      case '/startup':
        return this.startupReply;
      case '/prune':
        return this.pruneReply();
      default:
        return null;
    }
  }

  private pruneReply(): Reply {
    const lp = this.lastPass;
    const schedule = {
      enabled: this.stats.enabled,
      interval_seconds: this.stats.interval_seconds,
      running: this.stats.running,
      next_run_at: this.stats.next_run_at_ms ? new Date(this.stats.next_run_at_ms).toISOString() : null,
      last_success_at: this.stats.last_success_at_ms ? new Date(this.stats.last_success_at_ms).toISOString() : null,
    };
    const headers = { 'x-picoclaw-guard-schedule': JSON.stringify(schedule) };
    if (!lp) {
      return jsonReply(404, { error: 'no prune pass has run since the daemon started', ...schedule }, headers);
    }
    if (lp.report) return { ...jsonReply(200, lp.report), headers: { ...headers, 'x-picoclaw-guard-outcome': lp.outcome } };
    return jsonReply(500, { error: lp.error, outcome: lp.outcome, exit_code: lp.exit_code, finished_at: lp.finished_at, ...schedule }, headers);
  }

  // --- the schedule ------------------------------------------------------------------------

  /** (Re)arm the schedule from the policy, the marker and the prune history. */
  private schedule(why: 'start' | 'reload'): void {
    this.job?.stop();
    this.job = null;
    const s = this.settings;
    this.stats.enabled = s.policy.enabled && s.intervalSeconds > 0;
    this.stats.interval_seconds = s.intervalSeconds;
    const last = lastCompletedAt(s.stateDir, s.home.home);
    if (last !== null && (this.stats.last_success_at_ms === null || last > this.stats.last_success_at_ms)) this.stats.last_success_at_ms = last;
    if (!this.stats.enabled) {
      this.stats.next_run_at_ms = null;
      this.log.info({ why, enabled: s.policy.enabled, interval_seconds: s.intervalSeconds }, s.policy.enabled ? 'scheduled prune passes are off (check_interval_minutes is 0)' : 'scheduled prune passes are off (prune.enabled is false)');
      return;
    }
    if (this.runner.running) return; // the pass in progress re-arms when it ends
    this.arm(firstRunAt(last, s.intervalSeconds * 1000, Date.now()));
  }

  /**
   * One croner job per pass: interval jobs from a `startAt` that is long past make croner
   * walk every interval since then at each 30 s wake-up (measured: 22 ms per wake after a
   * year at hourly passes), so each pass re-anchors the schedule at its own end.
   * `protect` drops a tick that comes while the pass is still running (croner's `protect` option: blocked ticks are dropped, not queued).
   */
  private arm(atMs: number): void {
    this.job?.stop();
    if (this.stopping) return;
    const startAt = new Date(Math.max(atMs, Date.now() + 1000));
    this.job = new Cron(
      '* * * * * *',
      {
        interval: this.settings.intervalSeconds,
        startAt,
        protect: () => this.log.warn('a scheduled prune pass is due while the last one still runs: skipped'),
        catch: (err) => this.log.error({ error: errorMessage(err) }, 'prune scheduling failed'),
      },
      () => this.runScheduledPass(),
    );
    this.stats.next_run_at_ms = this.job.nextRun()?.getTime() ?? null;
  }

  private runScheduledPass(): Promise<void> {
    if (this.stopping || this.currentPass) return this.currentPass ?? Promise.resolve();
    this.currentPass = this.pass().finally(() => {
      this.currentPass = null;
    });
    return this.currentPass;
  }

  private async pass(): Promise<void> {
    const s = this.settings;
    const t0 = Date.now();
    this.stats.running = true;
    this.stats.next_run_at_ms = null;
    const clockJump = this.clockWatch.check();
    if (clockJump) this.log.warn({ clock_jump: clockJump }, 'the wall clock jumped since the last pass: this pass skips its age check');
    this.renderStatus();
    let out: PassOutput;
    try {
      out = await this.runner.run({
        home: s.home,
        configPath: s.configFlag,
        stateDir: s.stateDir,
        stepDelayMs: Number(this.env.PICOGUARD_TEST_STEP_DELAY_MS ?? 0) || 0,
        skipAgeCheck: clockJump,
      });
    } catch (err) {
      out = { ok: false, message: errorMessage(err), exitCode: null };
    }
    this.stats.running = false;
    const finished = Date.now();
    const outcome = outcomeOf(out);
    const report = out.ok ? out.report : null;
    this.stats.passes[outcome]++;
    if (report && !report.skipped) {
      this.stats.deleted_sessions += report.totals.deleted_sessions;
      this.stats.freed_bytes += report.totals.freed_bytes;
      this.stats.deleted_seahorse_messages += report.totals.deleted_seahorse_messages ?? 0;
      this.stats.deleted_orphan_conversations += report.totals.deleted_orphan_conversations;
    }
    const durationMs = report ? report.duration_ms : finished - t0;
    this.stats.last = {
      finished_at_ms: finished,
      duration_seconds: durationMs / 1000,
      outcome,
      longest_write_seconds: report?.database.longest_write_ms != null ? report.database.longest_write_ms / 1000 : null,
    };
    this.lastPass = { report, error: out.ok ? null : out.message, exit_code: out.ok ? out.report.exit_code : out.exitCode, outcome, finished_at: new Date(finished).toISOString() };

    // A pass this daemon stopped (SIGTERM) did not finish: no marker, so the next start goes on with it.
    if ((outcome === 'ok' || (outcome === 'partial' && !this.stopping)) && report) {
      this.stats.last_success_at_ms = finished;
      try {
        writeMarker(s.stateDir, { home: s.home.home, finished_at: new Date(finished).toISOString(), outcome, duration_ms: report.duration_ms, deleted_sessions: report.totals.deleted_sessions });
      } catch (err) {
        this.log.warn({ state_dir: s.stateDir, error: errnoCode(err) ?? errorMessage(err) }, 'cannot write the last-run marker');
      }
    }

    // Re-anchor: the next pass one interval after this one ended; sooner after a pass that could not run.
    if (!this.stopping && this.stats.enabled) {
      const transient = outcome === 'locked' || outcome === 'gateway_not_ready' || outcome === 'skipped' || outcome === 'failed';
      const wait = transient ? Math.min(this.settings.intervalSeconds, RETRY_SECONDS) : this.settings.intervalSeconds;
      this.arm(finished + wait * 1000);
    }
    this.status.notePass(finished, outcome, report);
    this.renderStatus();

    const line = {
      outcome,
      exit_code: this.lastPass.exit_code,
      duration_ms: durationMs,
      gateway: report?.gateway?.state ?? null,
      sessions: report?.totals.sessions ?? null,
      deleted_sessions: report?.totals.deleted_sessions ?? 0,
      freed_bytes: report?.totals.freed_bytes ?? 0,
      deleted_seahorse_messages: report?.totals.deleted_seahorse_messages ?? null,
      deleted_orphan_conversations: report?.totals.deleted_orphan_conversations ?? 0,
      vacuum: report?.database.vacuum?.ran ?? null,
      longest_write_ms: report?.database.longest_write_ms ?? null,
      skipped: report?.skipped ?? null,
      error: out.ok ? null : out.message,
      warnings: report?.warnings.length ?? 0,
      stopped_early: this.stopping,
      next_run: this.stats.next_run_at_ms ? new Date(this.stats.next_run_at_ms).toISOString() : null,
    };
    // Each warning in full (a clock that looks wrong, undated sessions pushing dated ones out, a size
    // limit that cannot be met): the pass line only counts them.
    if (report && report.warnings.length > 0) this.log.warn({ warnings: report.warnings }, 'prune pass warnings');
    if (outcome === 'failed') this.log.error(line, 'prune pass');
    else if (outcome === 'ok' || outcome === 'partial' || outcome === 'disabled') this.log.info(line, 'prune pass');
    else this.log.warn(line, 'prune pass');

    if (!this.stopping && report && report.totals.deleted_sessions + report.totals.deleted_orphan_conversations > 0) {
      this.readings.invalidateSessions();
      void this.refresh(false).catch(() => undefined);
    }
  }

  // --- signals -----------------------------------------------------------------------------

  private installSignals(): void {
    const on = (sig: NodeJS.Signals, fn: () => void) => {
      process.on(sig, fn);
      this.signalHandlers.push([sig, fn]);
    };
    on('SIGTERM', () => void this.stop('SIGTERM'));
    on('SIGINT', () => void this.stop('SIGINT'));
    on('SIGHUP', () => void this.reload());
  }

  /** SIGHUP: re-read the configuration; a bad file keeps the running one. */
  async reload(): Promise<void> {
    if (this.stopping) return;
    let next: DaemonSettings;
    try {
      next = resolveSettings(this.opts.flags, this.env);
    } catch (err) {
      this.log.error({ error: errorMessage(err), file: err instanceof GuardError ? (err.path ?? null) : null }, 'reload failed: keeping the running configuration');
      return;
    }
    const old = this.settings;
    if (next.host !== old.host || next.port !== old.port) {
      this.log.warn({ host: next.host, port: next.port }, 'server.host and server.port take effect at the next restart');
    }
    // The socket stays where it is, so the token rule applies to the address in use.
    if (!isLoopback(old.host) && next.token === null) {
      this.log.error({ host: old.host }, 'reload refused: the daemon serves a non-loopback address and the new configuration has no token');
      return;
    }
    this.settings = { ...next, host: old.host, port: old.port };
    this.readings.reconfigure(this.settings);
    this.status.reconfigure(this.settings);
    this.schedule('reload');
    this.log.info(
      {
        config: this.settings.configPath,
        home: this.settings.home.home,
        prune: { enabled: this.stats.enabled, interval_seconds: this.stats.interval_seconds, next_run: this.stats.next_run_at_ms ? new Date(this.stats.next_run_at_ms).toISOString() : null },
        textfile: this.settings.metrics.textfile_dir,
        auth: this.settings.token ? 'bearer' : 'none (loopback)',
      },
      'configuration reloaded',
    );
    await this.refresh(false).catch((err: unknown) => this.log.warn({ error: errorMessage(err) }, 'refresh after reload failed'));
  }

  /** SIGTERM/SIGINT: stop the pass between sessions, stop serving, resolve `done` with 0. */
  async stop(signal: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const t0 = performance.now();
    this.log.info({ signal, pass_running: this.runner.running }, 'stopping');
    this.job?.stop();
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.stopSignal.abort();
    this.runner.requestStop();
    let abandoned = false;
    if (this.currentPass) {
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_GRACE_MS).unref());
      if ((await Promise.race([this.currentPass.then(() => 'done' as const), timer])) === 'timeout') {
        abandoned = true;
        await this.runner.terminate();
      }
    }
    await this.server?.close();
    try {
      this.textfile?.remove();
    } catch (err) {
      this.log.warn({ error: errnoCode(err) ?? errorMessage(err) }, 'cannot remove the textfile collector file');
    }
    for (const [sig, fn] of this.signalHandlers) process.off(sig, fn);
    this.log.info({ signal, stop_ms: Math.round(performance.now() - t0), pass_abandoned: abandoned, uptime_seconds: Math.round((Date.now() - this.startedAt) / 1000) }, 'stopped');
    this.resolveDone(0);
  }
}

/** Start the daemon; the promise resolves with the exit code once it has stopped. */
export async function runDaemon(opts: DaemonOptions): Promise<number> {
  const d = new Daemon(opts);
  await d.start();
  return d.done;
}
