import { fstatSync, mkdirSync } from 'node:fs';
import { GuardError, errnoCode, errorMessage } from '../errors.js';
import { boundLogs, gatewayLogs, MIB } from '../logs/index.js';
import { TextfileWriter } from '../metrics/textfile.js';
import { Notifier } from '../notify/notifier.js';
import { assertPicoClawHome } from '../picoclaw/home.js';
import { guardVersion } from '../version.js';
import { createLogger, type Logger } from './log.js';
import { Readings } from './readings.js';
import { Routes } from './routes.js';
import { Scheduler } from './scheduler.js';
import { isLoopback, startServer, type RunningServer } from './server.js';
import { resolveSettings, type DaemonSettings, type RunFlags } from './settings.js';
import { StatusState } from './status.js';

/**
 * `picoclaw-guard run`: the sidecar. One process that
 * - prunes on a schedule (scheduler.ts: never two passes at once; a last-run marker
 *   so a restart does not repeat a pass that just finished), each pass in a child process;
 * - keeps a cache of readings refreshed in the background (src/daemon/readings.ts);
 * - serves the status page (/) and /health, /metrics, /startup and /prune from that cache
 *   (routes.ts, server.ts), and optionally mirrors /metrics into a node_exporter textfile folder;
 * - announces transitions (a health problem raised or cleared, a failed pass, the gateway down) to the
 *   notify targets, in the background (src/notify/notifier.ts);
 * - on SIGTERM/SIGINT stops the pass between sessions, stops serving and resolves 0;
 *   on SIGHUP re-reads its configuration and reschedules;
 * - keeps gateway.log and gateway_panic.log under logs.max_size_mb (src/logs/, every 5 minutes).
 * This file is the lifecycle: start, the background refresh, reload and stop.
 */
/** The gateway logs are looked at (and cut when over logs.max_size_mb) at the first refresh, then this often. */
const LOGS_CHECK_MS = 300_000;

export interface DaemonOptions {
  flags: RunFlags;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

export class Daemon {
  private settings: DaemonSettings;
  private readonly log: Logger;
  private readonly readings: Readings;
  private readonly status: StatusState;
  private readonly scheduler: Scheduler;
  private readonly routes: Routes;
  private readonly notifier: Notifier;
  private readonly version = guardVersion();
  private readonly startedAt = Date.now();
  private server: RunningServer | null = null;
  private textfile: TextfileWriter | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private stopping = false;
  private resolveDone!: (code: number) => void;
  readonly done: Promise<number>;
  private readonly signalHandlers: [NodeJS.Signals, () => void][] = [];
  /** Aborted at stop: a probe in flight must not keep the process alive after SIGTERM. */
  private readonly stopSignal = new AbortController();
  /** The last error logged per background job: a failure that repeats every refresh is logged once. */
  private readonly lastProblem = new Map<string, string>();
  /** When the gateway logs were last looked at (performance.now()); null: not yet. */
  private logsCheckedAt: number | null = null;

  constructor(private readonly opts: DaemonOptions) {
    this.settings = resolveSettings(opts.flags, opts.env ?? process.env);
    assertPicoClawHome(this.settings.home);
    this.log = opts.logger ?? createLogger();
    this.readings = new Readings(this.settings);
    this.notifier = new Notifier({
      config: this.settings.notify,
      rules: this.settings.notifyRules,
      stateDir: this.settings.stateDir,
      log: this.log,
    });
    this.status = new StatusState(this.settings, opts.env ?? process.env, this.version, this.startedAt);
    this.scheduler = new Scheduler(() => this.settings, this.env, this.log, {
      changed: () => this.renderStatus(),
      passEnded: (finished, outcome, report) => {
        this.status.notePass(finished, outcome, report);
        this.renderStatus();
        this.notifier.observe({
          health: this.readings.health,
          pass: { outcome, error: this.scheduler.lastPass?.error ?? null },
        });
      },
      deleted: () => {
        this.readings.invalidateSessions();
        void this.refresh(false).catch(() => undefined);
      },
    });
    this.routes = new Routes({
      settings: () => this.settings,
      readings: this.readings,
      status: this.status,
      scheduler: this.scheduler,
      version: this.version,
    });
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  private get env(): NodeJS.ProcessEnv {
    return this.opts.env ?? process.env;
  }

  private get nextRun(): string | null {
    const ms = this.scheduler.stats.next_run_at_ms;
    return ms ? new Date(ms).toISOString() : null;
  }

  async start(): Promise<void> {
    const s = this.settings;
    try {
      mkdirSync(s.stateDir, { recursive: true });
    } catch (err) {
      this.log.warn(
        { state_dir: s.stateDir, error: errnoCode(err) ?? errorMessage(err) },
        'the state folder cannot be created: passes will not be remembered across restarts',
      );
    }
    // Signals first: SIGTERM during the first refresh (a slow gateway probe) still exits 0.
    this.installSignals();
    await this.refresh(true);
    if (this.stopping) return;
    this.server = await startServer({
      host: s.host,
      port: s.port,
      token: () => this.settings.token,
      route: (path) => this.routes.route(path),
      onRequest: (path, status) => this.routes.count(path, status),
    });
    if (this.stopping) {
      await this.server.close();
      return;
    }
    this.scheduler.schedule('start');
    const stats = this.scheduler.stats;
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
        notify: s.notify.targets.length,
        prune: { enabled: stats.enabled, interval_seconds: stats.interval_seconds, next_run: this.nextRun },
        version: this.version,
      },
      'listening',
    );
    this.tellPerson();
    this.armRefresh();
  }

  /**
   * One line for a person who started the daemon by hand, on stderr beside the JSON log on stdout: the
   * address of the status page. Not under systemd when stderr is the journal (JOURNAL_STREAM names it):
   * the JSON `listening` line is already there.
   */
  private tellPerson(): void {
    const journal = this.env.JOURNAL_STREAM;
    if (journal) {
      try {
        const st = fstatSync(2);
        if (journal === `${st.dev}:${st.ino}`) return;
      } catch {
        return;
      }
    }
    const host = this.server!.host.includes(':') ? `[${this.server!.host}]` : this.server!.host;
    process.stderr.write(
      `picoclaw-guard: listening on http://${host}:${this.server!.port}/ (the status page; JSON log on stdout)\n`,
    );
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
          await this.cutLogs();
          this.problem('logs', null, {}, '');
        } catch (err) {
          this.problem('logs', errorMessage(err), {}, 'bounding the gateway logs failed');
        }
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

  /**
   * Cut gateway.log / gateway_panic.log when over logs.max_size_mb (and finish a cut a kill
   * left). Costs two stat calls when there is nothing to do; writes nothing then.
   */
  private async cutLogs(): Promise<void> {
    // A log at the gateway's pace takes days to fill 10 MiB: every few minutes is soon enough.
    const now = performance.now();
    if (this.logsCheckedAt !== null && now - this.logsCheckedAt < LOGS_CHECK_MS) return;
    this.logsCheckedAt = now;
    const s = this.settings;
    const files = gatewayLogs(s.home.logPath);
    const r = await boundLogs(files, {
      stateDir: s.stateDir,
      limitBytes: s.logs.max_size_mb * MIB,
      keepParts: s.logs.keep_parts,
    });
    if (r.resumed) this.log.info({ ...r.resumed }, 'gateway log cut left by a killed run: resumed');
    for (const f of r.files) {
      if (f.action === 'cut')
        this.log.info(
          { file: f.file, removed_bytes: f.removed_bytes, part: f.part, parts_removed: f.parts_removed },
          'gateway log cut',
        );
      const stuck = f.action === 'unsupported' || f.action === 'skipped' ? f.reason : null;
      this.problem(
        `logs ${f.file}`,
        stuck,
        { file: f.file, size_bytes: f.size_bytes },
        'gateway log over its limit: not cut',
      );
    }
  }

  /** Rebuild the bodies requests are answered with, the status page and the textfile. */
  private rebuild(): void {
    this.routes.rebuild();
    this.status.observe(this.readings.health);
    this.renderStatus();
    this.writeTextfile();
    this.notify();
  }

  /** Hand the fresh readings to the notifier (it decides and queues; it never waits for a receiver). */
  private notify(): void {
    if (!this.notifier.enabled) return;
    const st = this.readings.startup;
    const gap = st?.report.summary.latest_gap;
    this.notifier.observe({
      health: this.readings.health,
      bootstrap: st
        ? gap && !gap.lower_bound
          ? { seconds: gap.seconds, started_at: gap.started_at }
          : null
        : undefined,
    });
  }

  private renderStatus(): void {
    const { enabled, running, next_run_at_ms } = this.scheduler.stats;
    this.status.invalidate(this.readings, { enabled, running, next_run_at_ms });
  }

  private writeTextfile(): void {
    const dir = this.settings.metrics.textfile_dir;
    if (!dir) {
      this.textfile = null;
      return;
    }
    if (this.textfile?.dir !== dir) this.textfile = new TextfileWriter(dir);
    try {
      this.textfile.write(this.routes.metricsText(false));
      this.problem('textfile', null, {}, '');
    } catch (err) {
      const error = errnoCode(err) ?? errorMessage(err);
      this.problem('textfile', error, { dir }, 'cannot write the textfile collector file');
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
      const file = err instanceof GuardError ? (err.path ?? null) : null;
      this.log.error({ error: errorMessage(err), file }, 'reload failed: keeping the running configuration');
      return;
    }
    const old = this.settings;
    if (next.host !== old.host || next.port !== old.port) {
      const msg = 'server.host and server.port take effect at the next restart';
      this.log.warn({ host: next.host, port: next.port }, msg);
    }
    // The socket stays where it is, so the token rule applies to the address in use.
    if (!isLoopback(old.host) && next.token === null) {
      this.log.error(
        { host: old.host },
        'reload refused: the daemon serves a non-loopback address and the new configuration has no token',
      );
      return;
    }
    this.settings = { ...next, host: old.host, port: old.port };
    this.logsCheckedAt = null; // a new logs section applies at this reload's refresh
    this.readings.reconfigure(this.settings);
    this.status.reconfigure(this.settings);
    this.notifier.reconfigure(this.settings.notify, this.settings.notifyRules);
    this.scheduler.schedule('reload');
    const stats = this.scheduler.stats;
    this.log.info(
      {
        config: this.settings.configPath,
        home: this.settings.home.home,
        prune: { enabled: stats.enabled, interval_seconds: stats.interval_seconds, next_run: this.nextRun },
        textfile: this.settings.metrics.textfile_dir,
        auth: this.settings.token ? 'bearer' : 'none (loopback)',
      },
      'configuration reloaded',
    );
    await this.refresh(false).catch((err: unknown) => {
      this.log.warn({ error: errorMessage(err) }, 'refresh after reload failed');
    });
  }

  /** SIGTERM/SIGINT: stop the pass between sessions, stop serving, resolve `done` with 0. */
  async stop(signal: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const t0 = performance.now();
    this.log.info({ signal, pass_running: this.scheduler.running }, 'stopping');
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.stopSignal.abort();
    const abandoned = await this.scheduler.stop();
    await this.notifier.stop();
    await this.server?.close();
    try {
      this.textfile?.remove();
    } catch (err) {
      this.log.warn({ error: errnoCode(err) ?? errorMessage(err) }, 'cannot remove the textfile collector file');
    }
    for (const [sig, fn] of this.signalHandlers) process.off(sig, fn);
    const uptime = Math.round((Date.now() - this.startedAt) / 1000);
    const stopMs = Math.round(performance.now() - t0);
    this.log.info({ signal, stop_ms: stopMs, pass_abandoned: abandoned, uptime_seconds: uptime }, 'stopped');
    this.resolveDone(0);
  }
}

/** Start the daemon; the promise resolves with the exit code once it has stopped. */
export async function runDaemon(opts: DaemonOptions): Promise<number> {
  const d = new Daemon(opts);
  await d.start();
  return d.done;
}
