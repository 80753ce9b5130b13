import type { Database } from '../../io/sqlite.js';
import { errnoCode } from '../../errors.js';

/**
 * Taking seahorse.db's write lock beside a running gateway without ever failing one of its
 * writes.
 *
 * A gateway write that starts with a write waits for the guard through its busy_timeout
 * (5 s). PicoClaw's appendContextItems does not: it is a deferred transaction that reads
 * (SELECT MAX(ordinal)) and then writes, and SQLite does not call the busy handler when a
 * transaction that has read upgrades to a write; it answers SQLITE_BUSY at once if another
 * connection holds the lock (docs/picoclaw.md#rules-for-a-separate-pruner). A turn writes in
 * one burst (message, then context item), so online the guard takes the lock only:
 *
 * - after no other connection has committed for quietMs (PRAGMA data_version does not move;
 *   the guard's own commits do not move it);
 * - without waiting for it: BEGIN IMMEDIATE runs with busy_timeout 0. A guard that waited in
 *   SQLite's busy handler would wake just after the gateway's message commit, which is the
 *   one moment its context-item transaction is between its read and its write. A lock that is
 *   held counts as activity: the guard waits for quiet again;
 * - and lets go at once if someone committed between its last look and its lock.
 *
 * What is left is a window of microseconds (the last look, BEGIN IMMEDIATE, the re-check).
 * Offline (quietMs 0) BEGIN IMMEDIATE simply waits through the connection's busy timeout.
 */

/** The gateway kept writing: the rest of an online pass waits for a quieter moment. */
export class GatewayBusy extends Error {
  constructor(ms: number) {
    super(`the gateway wrote to seahorse.db without a ${ms} ms pause for too long; the rest waits for the next pass`);
    this.name = 'GatewayBusy';
  }
}

/** How long the database must have been still before an online pass writes (a turn's burst takes a few ms). */
export const ONLINE_QUIET_MS = 100;

export interface WriteLockOptions {
  /** Online: wait until no other connection has committed for this long. 0: offline, just BEGIN IMMEDIATE. */
  quietMs: number;
  /** Give up (GatewayBusy) when no quiet moment came within this long. */
  maxWaitMs: number;
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isBusy(err: unknown): boolean {
  const code = errnoCode(err) ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

export class WriteLock {
  private lastVersion: number | null = null;
  private lastChangeAt = 0;

  constructor(
    private readonly db: Database,
    private readonly opts: WriteLockOptions,
  ) {}

  /** BEGIN IMMEDIATE, online only at a quiet moment. Throws GatewayBusy, or SQLite's error offline. */
  begin(): void {
    const db = this.db;
    if (this.opts.quietMs <= 0) {
      db.exec('BEGIN IMMEDIATE');
      return;
    }
    const start = performance.now();
    // busy_timeout 0 while looking for the moment, so that the last look, the lock and the re-check follow
    // each other within microseconds, and a held lock is an answer, not a wait.
    const before = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma('busy_timeout = 0');
    try {
      for (;;) {
        const quietAt = this.waitForQuiet(start);
        if (this.tryBegin()) {
          if (this.version() === quietAt) return;
          // Someone committed between the last look and the lock: let go at once and wait again.
          db.exec('ROLLBACK');
        }
        // Held by someone else, or just committed to: either way the database is not quiet.
        this.lastVersion = null;
      }
    } finally {
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(before))}`);
    }
  }

  private version(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  /** BEGIN IMMEDIATE that does not wait: false when another connection holds the lock. */
  private tryBegin(): boolean {
    try {
      this.db.exec('BEGIN IMMEDIATE');
      return true;
    } catch (err) {
      if (isBusy(err)) return false;
      throw err;
    }
  }

  private waitForQuiet(start: number): number {
    const q = this.opts.quietMs;
    const look = (): number => {
      const v = this.version();
      if (v !== this.lastVersion) {
        this.lastVersion = v;
        this.lastChangeAt = performance.now();
      }
      return v;
    };
    let v = look();
    for (;;) {
      const quietFor = performance.now() - this.lastChangeAt;
      if (quietFor >= q) return v;
      if (performance.now() - start > this.opts.maxWaitMs) throw new GatewayBusy(q);
      sleepMs(Math.max(2, Math.min(25, q - quietFor)));
      v = look();
    }
  }
}
