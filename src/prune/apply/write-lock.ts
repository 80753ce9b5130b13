import type { Database, Statement } from '../../io/sqlite.js';
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
 * - without waiting for it: busy_timeout 0. A guard that waited in SQLite's busy handler would
 *   wake just after the gateway's message commit, which is the one moment its context-item
 *   transaction is between its read and its write. A lock that is held counts as activity: the
 *   guard waits for quiet again;
 * - through a snapshot, so that no commit can slip in between the last look and the lock: a
 *   deferred BEGIN, data_version read inside it (the version of the snapshot it starts, which
 *   must still be the quiet one), then a write that changes nothing (DELETE ... WHERE 0), which
 *   takes the lock. SQLite refuses that upgrade (SQLITE_BUSY_SNAPSHOT) if any connection
 *   committed after the snapshot began, and SQLITE_BUSY if one holds the lock; either way the
 *   guard lets go of a read it held, never of a lock, and waits again.
 *
 * So when the guard holds the lock, the gateway's last commit is at least quietMs old: a
 * context-item write can meet the lock only if the gateway paused that long between its
 * message commit and its insert. Offline (quietMs 0) BEGIN IMMEDIATE simply waits through the
 * connection's busy timeout.
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
  private statements: {
    dataVersion: Statement;
    begin: Statement;
    claim: Statement | null;
    rollback: Statement;
  } | null = null;

  constructor(
    private readonly db: Database,
    private readonly opts: WriteLockOptions,
  ) {}

  /** A write transaction (the lock held), online only at a quiet moment. Throws GatewayBusy, or SQLite's error. */
  begin(): void {
    const db = this.db;
    if (this.opts.quietMs <= 0) {
      db.exec('BEGIN IMMEDIATE');
      return;
    }
    const start = performance.now();
    const st = this.prepared();
    // busy_timeout 0 while looking for the moment: a held lock is an answer, not a wait.
    const before = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma('busy_timeout = 0');
    try {
      for (;;) {
        const quietAt = this.waitForQuiet(start);
        if (st.claim === null) {
          // No table to claim the lock with (an empty database): nothing of the gateway's to meet.
          if (this.tryBegin()) return;
        } else {
          st.begin.run();
          try {
            // The snapshot starts here; its version is the quiet one, or someone committed since the last look.
            if (st.dataVersion.get() === quietAt) {
              st.claim.run();
              return;
            }
          } catch (err) {
            if (!isBusy(err)) {
              if (db.inTransaction) st.rollback.run();
              throw err;
            }
          }
          // Only a read was held: letting go of it costs the gateway nothing.
          if (db.inTransaction) st.rollback.run();
        }
        // Held by someone else, or just committed to: either way the database is not quiet.
        this.lastVersion = null;
      }
    } finally {
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(before))}`);
    }
  }

  /** The statements of the online path, prepared once: a statement prepared per call would widen each step. */
  private prepared(): NonNullable<WriteLock['statements']> {
    if (this.statements) return this.statements;
    const db = this.db;
    // An ordinary table of main (not virtual, not SQLite's own): a DELETE that matches nothing takes the
    // write lock and writes no page, and fires no trigger.
    const table = db
      .prepare(
        `SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
           AND rootpage > 0 AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY rootpage LIMIT 1`,
      )
      .pluck()
      .get() as string | undefined;
    this.statements = {
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      begin: db.prepare('BEGIN DEFERRED'),
      claim: table === undefined ? null : db.prepare(`DELETE FROM main."${table.replaceAll('"', '""')}" WHERE 0`),
      rollback: db.prepare('ROLLBACK'),
    };
    return this.statements;
  }

  private version(): number {
    return this.prepared().dataVersion.get() as number;
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
