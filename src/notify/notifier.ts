import { randomUUID } from 'node:crypto';
import { errnoCode, errorMessage } from '../errors.js';
import {
  OUTBOX_MAX,
  OUTBOX_MAX_AGE_MS,
  emptyNotifyState,
  readNotifyState,
  writeNotifyState,
  type NotifyState,
  type OutboxItem,
} from '../state/notify-state.js';
import { targetKey, type NotifyConfig, type NotifyTarget } from './config.js';
import { deliver as realDeliver, type Answer } from './deliver.js';
import { detect, type DetectMemory, type Observation, type Rules } from './detect.js';
import { boardName, type NotifyMessage } from './message.js';
import { targetLabel } from './redact.js';

/**
 * The daemon's notifier: turns each refresh and each pass into transitions (src/notify/detect.ts),
 * remembers them in the state folder, and delivers them in the background.
 *
 * - `observe` never waits for a delivery: it decides, writes the state file when something changed,
 *   queues, and returns. A pass or an HTTP answer never waits for a receiver (test/notify/daemon.test.ts
 *   holds /health against a receiver that never answers).
 * - Delivery: one message at a time, to all of its targets at once, each attempt ended by
 *   `timeout_seconds`; a target that failed is tried again after retry_seconds, doubling up to an hour,
 *   `retries` times, then given up (logged). HTTP 4xx other than 429 is not retried.
 * - Rate limit: a token bucket of 3 refilled at `max_per_hour`; a message waits for a token, so a
 *   burst of transitions is spread out, never sent at once. At most OUTBOX_MAX messages wait; beyond
 *   that the oldest is dropped (and counted in the log).
 * - Logs name a target by its label only (src/notify/redact.ts); answers are scrubbed of its secrets.
 */
export interface NotifyLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface NotifierOptions {
  config: NotifyConfig;
  rules: Rules;
  /** null: nothing is remembered across restarts. */
  stateDir: string | null;
  log: NotifyLog;
  clock?: () => number;
  deliver?: typeof realDeliver;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
}

const BUCKET = 3;
const MAX_BACKOFF_MS = 3600_000;

interface Queued {
  item: OutboxItem;
  message: NotifyMessage;
  attempts: number;
  nextAtMs: number;
  /** Took its rate-limit token (the first attempt). */
  admitted: boolean;
}

export class Notifier {
  private config: NotifyConfig;
  private rules: Rules;
  private state: NotifyState;
  private readonly mem: DetectMemory = { gatewayBadSinceMs: null };
  private queue: Queued[] = [];
  private tokens = BUCKET;
  private refilledAtMs: number;
  private timer: unknown = null;
  private sending: Promise<void> | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly clock: () => number;
  private readonly send: typeof realDeliver;
  private readonly setTimer: NonNullable<NotifierOptions['setTimer']>;
  private readonly clearTimer: NonNullable<NotifierOptions['clearTimer']>;
  private lastStateError: string | null = null;
  readonly stats = { delivered: 0, failed_attempts: 0, given_up: 0, dropped: 0 };

  constructor(private readonly opts: NotifierOptions) {
    this.config = opts.config;
    this.rules = opts.rules;
    this.clock = opts.clock ?? Date.now;
    this.send = opts.deliver ?? realDeliver;
    this.setTimer = opts.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = opts.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout));
    this.refilledAtMs = this.clock();
    this.state = emptyNotifyState();
    if (this.enabled && opts.stateDir) {
      const r = readNotifyState(opts.stateDir);
      if (r.error) opts.log.warn({ error: r.error }, 'notify: the remembered state is unusable, starting afresh');
      this.state = r.state;
      this.restoreOutbox();
      this.kick();
    }
  }

  get enabled(): boolean {
    return this.config.targets.length > 0;
  }

  /** Messages waiting (the outbox). */
  get waiting(): number {
    return this.queue.length;
  }

  reconfigure(config: NotifyConfig, rules: Rules): void {
    const wasEnabled = this.enabled;
    this.config = config;
    this.rules = rules;
    if (!wasEnabled && this.enabled && this.opts.stateDir) {
      this.state = readNotifyState(this.opts.stateDir).state;
      this.restoreOutbox();
    }
    // Targets removed from the config are no longer waited for.
    const keys = new Set(config.targets.map(targetKey));
    for (const q of this.queue) q.item.pending = q.item.pending.filter((k) => keys.has(k));
    this.queue = this.queue.filter((q) => q.item.pending.length > 0);
    this.kick();
  }

  /** After a refresh or a pass: announce what changed. Returns at once. */
  observe(obs: Omit<Observation, 'nowMs'>): void {
    if (!this.enabled || this.stopped) return;
    const nowMs = this.clock();
    const d = detect(this.state.active, { ...obs, nowMs }, this.rules, this.mem);
    if (!d.changed) return;
    this.state.active = d.active;
    const board = boardName(obs.health ?? null);
    for (const m of d.messages) this.enqueue({ ...m, board, health: obs.health ?? null }, nowMs);
    this.persist();
    this.kick();
  }

  /** Stop: end attempts in flight and timers. What is still waiting stays in the outbox for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.timer) this.clearTimer(this.timer);
    this.timer = null;
    await this.sending;
  }

  /** Resolves when nothing is being sent (tests, the benchmark). */
  async idle(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private restoreOutbox(): void {
    const keys = new Set(this.config.targets.map(targetKey));
    const now = this.clock();
    this.queue = [];
    for (const item of this.state.outbox) {
      if (now - Date.parse(item.created_at) > OUTBOX_MAX_AGE_MS) continue;
      item.pending = item.pending.filter((k) => keys.has(k));
      if (item.pending.length === 0) continue;
      this.queue.push({
        item,
        message: { ...item.message, board: boardName(null), health: null },
        attempts: 0,
        nextAtMs: now,
        admitted: false,
      });
    }
    this.state.outbox = this.queue.map((q) => q.item);
  }

  private enqueue(message: NotifyMessage, nowMs: number): void {
    const item: OutboxItem = {
      id: randomUUID(),
      message: {
        event: message.event,
        level: message.level,
        code: message.code,
        message: message.message,
        time: message.time,
      },
      pending: this.config.targets.map(targetKey),
      created_at: new Date(nowMs).toISOString(),
    };
    this.queue.push({ item, message, attempts: 0, nextAtMs: nowMs, admitted: false });
    while (this.queue.length > OUTBOX_MAX) {
      const old = this.queue.shift()!;
      this.stats.dropped++;
      this.opts.log.warn(
        { code: old.item.message.code, event: old.item.message.event, waiting: this.queue.length },
        'notify: too many messages waiting, the oldest is dropped',
      );
    }
    this.state.outbox = this.queue.map((q) => q.item);
  }

  private persist(): void {
    const dir = this.opts.stateDir;
    if (!dir) return;
    try {
      writeNotifyState(dir, this.state);
      this.lastStateError = null;
    } catch (err) {
      const error = errnoCode(err) ?? errorMessage(err);
      if (error !== this.lastStateError)
        this.opts.log.warn({ state_dir: dir, error }, 'notify: cannot write the notify state: a restart may repeat');
      this.lastStateError = error;
    }
  }

  private refill(now: number): void {
    const perMs = this.config.max_per_hour / 3600_000;
    this.tokens = Math.min(BUCKET, this.tokens + (now - this.refilledAtMs) * perMs);
    this.refilledAtMs = now;
  }

  /** Send the next due message, or arm a timer for when one is due. */
  private kick(): void {
    if (this.stopped || this.sending || this.queue.length === 0) return;
    if (this.timer) {
      this.clearTimer(this.timer);
      this.timer = null;
    }
    const now = this.clock();
    this.refill(now);
    const next = this.queue.reduce((a, b) => (b.nextAtMs < a.nextAtMs ? b : a));
    let due = next.nextAtMs;
    if (!next.admitted && this.tokens < 1)
      due = Math.max(due, now + Math.ceil((1 - this.tokens) / (this.config.max_per_hour / 3600_000)));
    if (due > now) {
      const t = this.setTimer(() => {
        this.timer = null;
        this.kick();
      }, due - now);
      (t as { unref?: () => void }).unref?.();
      this.timer = t;
      return;
    }
    if (!next.admitted) {
      this.tokens -= 1;
      next.admitted = true;
    }
    this.sending = this.attempt(next).finally(() => {
      this.sending = null;
      this.kick();
    });
  }

  private async attempt(q: Queued): Promise<void> {
    const targets = this.config.targets.filter((t) => q.item.pending.includes(targetKey(t)));
    const timeoutMs = this.config.timeout_seconds * 1000;
    const answers = await Promise.all(
      targets.map(async (t): Promise<[NotifyTarget, Answer]> => [
        t,
        await this.send(t, q.message, timeoutMs, this.abort.signal),
      ]),
    );
    if (this.stopped) return;
    const m = q.item.message;
    let permanent = true;
    for (const [t, a] of answers) {
      const fields = {
        target: targetLabel(t),
        event: m.event,
        code: m.code,
        answer: a.answer,
        seconds: a.duration_seconds,
      };
      if (a.ok) {
        this.stats.delivered++;
        q.item.pending = q.item.pending.filter((k) => k !== targetKey(t));
        this.opts.log.info(fields, 'notification delivered');
      } else {
        this.stats.failed_attempts++;
        if (a.retry) permanent = false;
        else q.item.pending = q.item.pending.filter((k) => k !== targetKey(t));
        this.opts.log.warn({ ...fields, attempt: q.attempts + 1, retry: a.retry }, 'notification not delivered');
      }
    }
    q.attempts++;
    const done = q.item.pending.length === 0;
    const exhausted = q.attempts > this.config.retries;
    if (done || exhausted || permanent) {
      if (!done) {
        this.stats.given_up++;
        this.opts.log.error(
          { event: m.event, code: m.code, attempts: q.attempts, targets: targets.map(targetLabel) },
          'notification given up',
        );
      }
      this.queue = this.queue.filter((x) => x !== q);
    } else {
      q.nextAtMs = this.clock() + Math.min(MAX_BACKOFF_MS, this.config.retry_seconds * 1000 * 2 ** (q.attempts - 1));
    }
    this.state.outbox = this.queue.map((x) => x.item);
    this.persist();
  }
}

/** The rules from the notify section and the health thresholds and policy they fall back to. */
export function rulesOf(
  c: NotifyConfig,
  health: { disk_free_warn_mb: number; disk_free_critical_mb: number },
  maxBootstrapSeconds: number,
  defaultBudgetSeconds: number,
): Rules {
  const MIB = 1024 * 1024;
  const warnMb = c.disk_free_mb ?? health.disk_free_warn_mb;
  return {
    min_level: c.min_level,
    reminder_ms: c.reminder_minutes * 60_000,
    gateway_down_ms: c.gateway_down_minutes * 60_000,
    bootstrap_budget_seconds:
      c.bootstrap_budget_seconds ?? (maxBootstrapSeconds > 0 ? maxBootstrapSeconds : defaultBudgetSeconds),
    disk_free_warn_bytes: warnMb * MIB,
    disk_free_critical_bytes: Math.min(warnMb, health.disk_free_critical_mb) * MIB,
  };
}
