import { ExitCode, errnoCode, errorMessage } from '../errors.js';
import { emptyPruneStats, type PruneOutcome, type PruneStats } from '../metrics/guard-metrics.js';
import { ClockWatch } from './clock-watch.js';
import { clockConfirmedAt } from '../state/clock-confirmed.js';
import type { Logger } from './log.js';
import { firstRunAt, lastCompletedAt, writeMarker } from '../state/marker.js';
import { PassRunner, type PassRequest } from './pass-runner.js';
import { catchUpDue, describeSchedule, type PassSchedule } from './schedule.js';
import type { PassSummary } from './pass-summary.js';
import type { PassOutput } from './prune-child.js';
import type { DaemonSettings } from './settings.js';
import { WallTimer } from './wall-timer.js';

/**
 * The daemon's prune schedule and the bookkeeping of its passes: never two passes at once,
 * each pass in a child process (pass-runner.ts), the next one due one interval after the
 * last one ended (sooner after a pass that could not run), and a last-run marker so a
 * restart does not repeat a pass that just finished.
 *
 * Why no cron library: the schedule is not a series of start times but "one interval after
 * the last pass ended" (sooner after a pass that could not run), re-anchored at the end of each
 * pass, so it needs one timer per pass and one guard against two passes at once (currentPass).
 * A cron job per pass (croner, its `protect` repeating that guard) was only that timer, and its
 * interval mode walked every interval since a long-past `startAt` at each wake-up. The
 * wall-clock timer (wall-timer.ts) keeps what it did here: a pass starts on a whole second once
 * the wall clock reads its time, checked at least every 30 s, and a pass that outlasts its
 * interval is logged at each interval it overruns.
 *
 * With `prune.schedule` (./schedule.ts) the passes start at the cron slots instead: the next one at
 * the first slot after the last pass ended (a slot that came while a pass ran is skipped, and
 * logged), sooner after a pass that could not run (never later than the next slot), and, at
 * start, one catch-up pass when a slot was missed and the last pass is older than one period.
 * A suspend needs nothing more: on waking the wall-clock timer finds its slot passed and starts
 * one pass, and the pass after it is the next slot to come, not each slot the suspend missed.
 */

/** How long a stopping daemon waits for the pass in progress before ending its process. */
export const STOP_GRACE_MS = 4000;
/** A pass that could not run (gateway starting, lock held, a store not writable) is retried this soon. */
export const RETRY_SECONDS = 300;

/** The gap between the next two slots (the schedule's period there), in seconds; 0 when there are none. */
function periodSeconds(sch: PassSchedule, nowMs: number): number {
  const [a, b] = sch.nextRuns(2, nowMs);
  return a !== undefined && b !== undefined ? Math.round((b - a) / 1000) : 0;
}

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

export interface LastPass {
  report: PassSummary | null;
  error: string | null;
  exit_code: number | null;
  outcome: PruneOutcome;
  finished_at: string;
}

/** What the rest of the daemon hears from the schedule. */
export interface SchedulerHooks {
  /** The schedule or the running flag changed (the status page shows both). */
  changed(): void;
  /** A pass ended (after the next one was armed). */
  passEnded(finishedMs: number, outcome: PruneOutcome, report: PassSummary | null): void;
  /** A pass deleted sessions or orphan conversations: the cached counts are stale. */
  deleted(): void;
}

/** What runs a pass (pass-runner.ts: a child process); tests give a fake one that deletes nothing. */
export interface Runner {
  readonly running: boolean;
  run(req: PassRequest): Promise<PassOutput>;
  requestStop(): void;
  terminate(): Promise<unknown>;
}

export class Scheduler {
  readonly stats: PruneStats = emptyPruneStats();
  private lastPassValue: LastPass | null = null;
  /** Slots skipped because a pass still ran (schedule mode), since the daemon started. */
  skippedSlots = 0;
  /** Wall clock against monotonic between passes: a jump skips that pass's age check. */
  private readonly clockWatch = new ClockWatch();
  private readonly timer = new WallTimer();
  /** Warns while a pass outlasts its interval: the pass that came due then is dropped, not queued. */
  private readonly overrun = new WallTimer();
  private currentPass: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly settings: () => DaemonSettings,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
    private readonly hooks: SchedulerHooks,
    private readonly runner: Runner = new PassRunner(),
  ) {}

  /** prune.schedule, or null with the interval. */
  get scheduleSettings(): PassSchedule | null {
    return this.settings().schedule ?? null;
  }

  /** The next n slots of the cron schedule (ms), or [] with the interval. */
  nextRuns(n: number): number[] {
    const sch = this.settings().schedule ?? null;
    if (!sch || !this.stats.enabled) return [];
    return sch.nextRuns(n, Date.now());
  }

  get lastPass(): LastPass | null {
    return this.lastPassValue;
  }

  get running(): boolean {
    return this.runner.running;
  }

  /** (Re)arm the schedule from the policy, the marker and the prune history. */
  schedule(why: 'start' | 'reload'): void {
    this.timer.cancel();
    this.overrun.cancel();
    const s = this.settings();
    const sch = s.schedule ?? null;
    this.stats.enabled = s.policy.enabled && (sch !== null || s.intervalSeconds > 0);
    this.stats.interval_seconds = sch ? periodSeconds(sch, Date.now()) : s.intervalSeconds;
    const last = lastCompletedAt(s.stateDir, s.home.home);
    if (last !== null && (this.stats.last_success_at_ms === null || last > this.stats.last_success_at_ms)) {
      this.stats.last_success_at_ms = last;
    }
    if (!this.stats.enabled) {
      this.stats.next_run_at_ms = null;
      const off = s.policy.enabled
        ? 'scheduled prune passes are off (check_interval_minutes is 0)'
        : 'scheduled prune passes are off (prune.enabled is false)';
      this.log.info({ why, enabled: s.policy.enabled, interval_seconds: s.intervalSeconds }, off);
      // The status page renders from a snapshot of the schedule: until told, it shows the one before this.
      this.hooks.changed();
      return;
    }
    if (this.runner.running) return; // the pass in progress re-arms when it ends
    if (!sch) {
      this.arm(firstRunAt(last, s.intervalSeconds * 1000, Date.now()));
      this.hooks.changed();
      return;
    }
    const now = Date.now();
    const catchUp = catchUpDue(sch, last, now);
    const next = sch.next(now);
    if (catchUp) this.arm(now);
    else if (next !== null) this.arm(next);
    else this.stats.next_run_at_ms = null;
    this.log.info(
      {
        why,
        schedule: sch.pattern,
        timezone: sch.timezone,
        catch_up: catchUp,
        last_pass: last === null ? null : new Date(last).toISOString(),
        next_runs: sch.nextRuns(3, now).map((ms) => new Date(ms).toISOString()),
      },
      catchUp
        ? `prune schedule ${describeSchedule(sch)}: a slot was missed since the last pass, which is older than one period: one catch-up pass now`
        : `prune schedule ${describeSchedule(sch)}`,
    );
    this.hooks.changed();
  }

  /**
   * Arm the next pass for `atMs`, at least a second from now and on a whole second (the
   * resolution passes have always started at; next_run in the log and /prune shows it).
   */
  private arm(atMs: number): void {
    this.timer.cancel();
    if (this.stopping) return;
    const due = Math.ceil(Math.max(atMs, Date.now() + 1000) / 1000) * 1000;
    this.stats.next_run_at_ms = due;
    this.timer.at(due, () => {
      this.runScheduledPass().catch((err: unknown) => {
        this.log.error({ error: errorMessage(err) }, 'prune scheduling failed');
      });
    });
  }

  private runScheduledPass(): Promise<void> {
    if (this.stopping || this.currentPass) return this.currentPass ?? Promise.resolve();
    const sch = this.settings().schedule ?? null;
    const interval = this.settings().intervalSeconds * 1000;
    // The slots that come while this pass runs are skipped (never queued), each said in the log.
    const following = (dueMs: number): number | null => (sch ? sch.next(dueMs) : dueMs + interval);
    const warnAt = (dueMs: number | null): void => {
      if (dueMs === null) return;
      this.overrun.at(dueMs, () => {
        this.skippedSlots++;
        this.log.warn(
          { slot: new Date(dueMs).toISOString(), skipped_slots: this.skippedSlots },
          'a scheduled prune pass is due while the last one still runs: skipped',
        );
        warnAt(following(dueMs));
      });
    };
    warnAt(following(Date.now()));
    this.currentPass = this.pass().finally(() => {
      this.overrun.cancel();
      this.currentPass = null;
    });
    return this.currentPass;
  }

  private async pass(): Promise<void> {
    const s = this.settings();
    const t0 = Date.now();
    this.stats.running = true;
    this.stats.next_run_at_ms = null;
    const clockJump = this.clockWatch.check(clockConfirmedAt(s.stateDir));
    if (clockJump) {
      const msg = 'the wall clock jumped since the last pass: this pass skips its age check';
      this.log.warn({ clock_jump: clockJump }, msg);
    }
    this.hooks.changed();
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
    this.count(outcome, report);
    const durationMs = report ? report.duration_ms : finished - t0;
    this.stats.last = {
      finished_at_ms: finished,
      duration_seconds: durationMs / 1000,
      outcome,
      longest_write_seconds: report?.database.longest_write_ms != null ? report.database.longest_write_ms / 1000 : null,
    };
    const lastPass: LastPass = {
      report,
      error: out.ok ? null : out.message,
      exit_code: out.ok ? out.report.exit_code : out.exitCode,
      outcome,
      finished_at: new Date(finished).toISOString(),
    };
    this.lastPassValue = lastPass;

    // A pass this daemon stopped (SIGTERM) did not finish: no marker, so the next start goes on with it.
    if ((outcome === 'ok' || (outcome === 'partial' && !this.stopping)) && report) {
      this.stats.last_success_at_ms = finished;
      this.mark(s, finished, outcome, report);
    }

    // Re-anchor: the next pass one interval after this one ended; sooner after a pass that could not run.
    if (!this.stopping && this.stats.enabled) {
      const transient =
        outcome === 'locked' || outcome === 'gateway_not_ready' || outcome === 'skipped' || outcome === 'failed';
      const sch = this.settings().schedule ?? null;
      if (sch) {
        // The first slot after this pass ended: the ones it ran through are skipped, not caught up.
        const next = sch.next(finished);
        const retry = finished + RETRY_SECONDS * 1000;
        const at = transient ? Math.min(retry, next ?? retry) : next;
        if (at !== null) this.arm(at);
      } else {
        const interval = this.settings().intervalSeconds;
        this.arm(finished + (transient ? Math.min(interval, RETRY_SECONDS) : interval) * 1000);
      }
    }
    this.hooks.passEnded(finished, outcome, report);
    this.logPass(lastPass, out, durationMs);

    if (!this.stopping && report && report.totals.deleted_sessions + report.totals.deleted_orphan_conversations > 0) {
      this.hooks.deleted();
    }
  }

  private count(outcome: PruneOutcome, report: PassSummary | null): void {
    this.stats.passes[outcome]++;
    if (report && !report.skipped) {
      this.stats.deleted_sessions += report.totals.deleted_sessions;
      this.stats.freed_bytes += report.totals.freed_bytes;
      this.stats.deleted_seahorse_messages += report.totals.deleted_seahorse_messages ?? 0;
      this.stats.deleted_orphan_conversations += report.totals.deleted_orphan_conversations;
    }
  }

  private mark(s: DaemonSettings, finished: number, outcome: 'ok' | 'partial', report: PassSummary): void {
    try {
      writeMarker(s.stateDir, {
        home: s.home.home,
        finished_at: new Date(finished).toISOString(),
        outcome,
        duration_ms: report.duration_ms,
        deleted_sessions: report.totals.deleted_sessions,
      });
    } catch (err) {
      const error = errnoCode(err) ?? errorMessage(err);
      this.log.warn({ state_dir: s.stateDir, error }, 'cannot write the last-run marker');
    }
  }

  private logPass(lp: LastPass, out: PassOutput, durationMs: number): void {
    const { outcome, report } = lp;
    const line = {
      outcome,
      exit_code: lp.exit_code,
      duration_ms: durationMs,
      gateway: report?.gateway?.state ?? null,
      sessions: report?.totals.sessions ?? null,
      deleted_sessions: report?.totals.deleted_sessions ?? 0,
      freed_bytes: report?.totals.freed_bytes ?? 0,
      deleted_seahorse_messages: report?.totals.deleted_seahorse_messages ?? null,
      deleted_orphan_conversations: report?.totals.deleted_orphan_conversations ?? 0,
      vacuum: report?.database.vacuum?.ran ?? null,
      converted: report?.database.vacuum?.converted ?? null,
      shrink_returned_bytes: report?.database.shrink?.returned_bytes ?? null,
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
  }

  /**
   * Stop: no further pass; the one in progress is asked to stop between sessions and killed
   * when it has not within STOP_GRACE_MS. Resolves true when it had to be killed.
   */
  async stop(): Promise<boolean> {
    this.stopping = true;
    this.timer.cancel();
    this.overrun.cancel();
    this.runner.requestStop();
    if (!this.currentPass) return false;
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_GRACE_MS).unref());
    if ((await Promise.race([this.currentPass.then(() => 'done' as const), timer])) !== 'timeout') return false;
    await this.runner.terminate();
    return true;
  }
}
