import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WriteLock } from '../../src/prune/apply/write-lock.js';
import { tempDir } from '../support/tmp.js';

/**
 * The gateway's writes injected at every step of WriteLock.begin(): before and after each statement
 * the guard runs (its looks, its BEGIN, its version check, its claim, its ROLLBACK), a generated
 * schedule makes the "gateway" (a second connection, in this thread, so that the step is exact)
 * commit a message, or run its context-item transaction (deferred BEGIN; SELECT MAX; INSERT;
 * COMMIT), or both back to back, or nothing.
 *
 * The invariants:
 * - a context-item transaction fails only when the gateway's own message commit before it is at
 *   least quietMs old: a turn that writes in one burst never meets the guard's lock, at whatever
 *   step of the guard it lands;
 * - when begin() returns, the guard holds the write lock, and no other connection has committed
 *   for quietMs.
 *
 * A guard that takes the lock with BEGIN IMMEDIATE after its last look and checks the version
 * afterwards breaks the first: a message committed between the look and the lock, and the
 * context item run before the guard lets go, fails at once.
 */

const QUIET_MS = 15;

type Act = 'none' | 'msg' | 'ctx' | 'turn';

interface Gateway {
  db: Database.Database;
  lastCommitAt: number | null;
  /** The failures of context-item transactions: how long after the gateway's message commit each came. */
  ctxFailures: { afterMs: number; code: string }[];
  ctxOk: number;
  msgRefused: number;
}

function setup(): { path: string } {
  const path = join(tempDir('pcg-wlsteps-'), 'seahorse.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE conversations (id INTEGER PRIMARY KEY, k TEXT)');
  db.exec('CREATE TABLE context_items (conversation_id INTEGER, ordinal INTEGER)');
  db.exec("INSERT INTO conversations (k) VALUES ('a')");
  db.close();
  return { path };
}

function act(g: Gateway, a: Act): void {
  if (a === 'msg' || a === 'turn') {
    try {
      g.db.prepare("INSERT INTO conversations (k) VALUES ('m')").run();
      g.lastCommitAt = performance.now();
    } catch (err) {
      // A write that starts with a write waits through busy_timeout on a real gateway; here it is
      // dropped (this connection has busy_timeout 0 so that the thread is never blocked).
      if (!String((err as { code?: string }).code).startsWith('SQLITE_BUSY')) throw err;
      g.msgRefused++;
      return;
    }
  }
  if (a === 'ctx' || a === 'turn') {
    g.db.exec('BEGIN');
    try {
      const m = g.db.prepare('SELECT COALESCE(MAX(ordinal), 0) AS m FROM context_items').get() as { m: number };
      g.db.prepare('INSERT INTO context_items VALUES (1, ?)').run(m.m + 1);
      g.db.exec('COMMIT');
      g.lastCommitAt = performance.now();
      g.ctxOk++;
    } catch (err) {
      const code = String((err as { code?: string }).code);
      if (!code.startsWith('SQLITE_BUSY')) throw err;
      g.ctxFailures.push({ afterMs: g.lastCommitAt === null ? Infinity : performance.now() - g.lastCommitAt, code });
    } finally {
      if (g.db.inTransaction) g.db.exec('ROLLBACK');
    }
  }
}

/** The guard's connection, with the schedule's act run before and after each statement it steps. */
function instrumented(guard: Database.Database, step: () => void): Database.Database {
  const wrapStatement = (st: Database.Statement): Database.Statement => {
    const w: Record<string, unknown> = {
      pluck(on?: boolean) {
        if (on === undefined) st.pluck();
        else st.pluck(on);
        return w;
      },
    };
    for (const m of ['get', 'run', 'all'] as const)
      w[m] = (...args: unknown[]) => {
        step();
        try {
          return st[m](...args);
        } finally {
          step();
        }
      };
    return w as unknown as Database.Statement;
  };
  return new Proxy(guard, {
    get(target, prop) {
      if (prop === 'prepare') return (sql: string) => wrapStatement(target.prepare(sql));
      if (prop === 'exec' || prop === 'pragma')
        return (...args: unknown[]) => {
          step();
          try {
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          } finally {
            step();
          }
        };
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('WriteLock.begin() with the gateway writing at every one of its steps', () => {
  it(
    'never fails a context-item write that follows its message commit within quietMs, ' +
      'and returns holding the lock after quietMs of quiet',
    () => {
      const { path } = setup();
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom<Act>('none', 'none', 'msg', 'ctx', 'turn'), { minLength: 1, maxLength: 40 }),
          fc.integer({ min: 0, max: 3 }),
          (schedule, rounds) => {
            const guardDb = new Database(path, { timeout: 5000 });
            const g: Gateway = {
              db: new Database(path, { timeout: 0 }),
              lastCommitAt: null,
              ctxFailures: [],
              ctxOk: 0,
              msgRefused: 0,
            };
            let i = 0;
            const db = instrumented(guardDb, () => act(g, schedule[i++] ?? 'none'));
            const lock = new WriteLock(db, { quietMs: QUIET_MS, maxWaitMs: 60_000 });
            try {
              for (let r = 0; r <= rounds; r++) {
                lock.begin();
                const at = performance.now();
                expect(guardDb.inTransaction).toBe(true);
                // It holds the lock: a write that starts with a write is refused (busy_timeout 0 here).
                expect(() => g.db.prepare("INSERT INTO conversations (k) VALUES ('x')").run()).toThrow(/locked|busy/i);
                if (g.lastCommitAt !== null) expect(at - g.lastCommitAt).toBeGreaterThanOrEqual(QUIET_MS);
                // The guard's own transaction: a deletion, committed.
                guardDb.prepare("DELETE FROM conversations WHERE k = 'nothing'").run();
                guardDb.exec('COMMIT');
              }
              for (const f of g.ctxFailures) expect(f.afterMs, f.code).toBeGreaterThanOrEqual(QUIET_MS);
              expect(guardDb.pragma('busy_timeout', { simple: true })).toBe(5000);
            } finally {
              if (guardDb.inTransaction) guardDb.exec('ROLLBACK');
              guardDb.close();
              g.db.close();
            }
          },
        ),
        { numRuns: 150 },
      );
    },
  );

  it('on a database with no table to claim the lock with, takes it with BEGIN IMMEDIATE', () => {
    const path = join(tempDir('pcg-wlsteps-'), 'empty.db');
    const db = new Database(path, { timeout: 5000 });
    db.pragma('journal_mode = WAL');
    new WriteLock(db, { quietMs: QUIET_MS, maxWaitMs: 10_000 }).begin();
    expect(db.inTransaction).toBe(true);
    const other = new Database(path, { timeout: 0 });
    expect(() => other.exec('CREATE TABLE t (x)')).toThrow(/locked|busy/i);
    db.exec('ROLLBACK');
    other.close();
    db.close();
  });
});
