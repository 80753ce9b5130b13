import { createRequire } from 'node:module';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { GatewayBusy, WriteLock } from '../../src/prune/apply/write-lock.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { dailyHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { readyGateway } from '../support/gateway-state.js';

/**
 * The gateway's side runs in a worker thread with its own connection (a separate SQLite
 * connection, as the real gateway's is), so that the guard's synchronous begin() and the
 * gateway's writes really overlap. Every wait is on an event (a shared flag, the worker's
 * message); the durations only shape the scenario.
 */
const GATEWAY = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.path, { timeout: 5000 });
const flag = new Int32Array(workerData.sab);
const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
const max = db.prepare('SELECT MAX(v) AS m FROM t');
const out = { busy: 0, ok: 0, firstError: null, busyAfterMs: [] };
if (workerData.mode === 'turn') {
  // One turn: a message transaction that holds the lock for holdMs, then read-then-write
  // transactions (appendContextItems) back to back for windowMs right after its commit.
  db.exec('BEGIN');
  insert.run(1);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  Atomics.wait(flag, 1, 0, workerData.holdMs);
  // Times are taken from before the commit: the guard cannot see the commit earlier than that.
  const committing = performance.now();
  const end = committing + workerData.windowMs;
  db.exec('COMMIT');
  do {
    db.exec('BEGIN');
    max.get();
    try {
      insert.run(2);
      out.ok++;
    } catch (e) {
      if (!String(e.code).startsWith('SQLITE_BUSY')) throw e;
      out.busy++;
      // How long after the commit the refused write came: a guard that waits quietMs cannot cause one earlier.
      out.busyAfterMs.push(performance.now() - committing);
      out.firstError = out.firstError || e.code + ': ' + e.message;
    }
    db.exec('ROLLBACK');
  } while (performance.now() < end);
} else {
  // A gateway that never pauses: a commit every few milliseconds until told to stop.
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  while (Atomics.load(flag, 2) === 0) {
    insert.run(3);
    out.ok++;
    Atomics.wait(flag, 1, 0, 3);
  }
}
db.close();
parentPort.postMessage(out);
`;

interface GatewayOut {
  busy: number;
  busyAfterMs: number[];
  ok: number;
  firstError: string | null;
}

function setup(): string {
  const path = join(tempDir('pcg-wlock-'), 'seahorse.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)');
  db.close();
  return path;
}

function startGateway(path: string, data: Record<string, unknown>): { flag: Int32Array; done: Promise<GatewayOut> } {
  const sab = new SharedArrayBuffer(12);
  const flag = new Int32Array(sab);
  const w = new Worker(GATEWAY, {
    eval: true,
    workerData: { path, sab, sqlite: createRequire(import.meta.url).resolve('better-sqlite3'), ...data },
  });
  const done = new Promise<GatewayOut>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  // The worker has its first write under way (turn: holding the lock) before the guard starts.
  Atomics.wait(flag, 0, 0, 30_000);
  return { flag, done };
}

describe('WriteLock: taking seahorse.db write lock beside a live gateway', () => {
  it(
    'never takes the lock in the moment after a gateway commit, so its read-then-write ' + 'transactions never fail',
    async () => {
      const path = setup();
      const guard = new Database(path, { timeout: 5000 });
      // The guard has seen quietMs of quiet and asks while the gateway holds the lock (holdMs > quietMs).
      // Waiting in SQLite's busy handler, it would wake during the window after the commit and hold the lock,
      // however briefly, while the gateway is between read and write: a few rounds make that near-certain.
      // Taking the lock only after quietMs without a commit, it comes 240 ms after the window closed. On a
      // loaded machine the worker may be descheduled past that; a refusal that late is not the guard's doing,
      // so the check is that none came sooner than quietMs after the commit.
      for (let round = 0; round < 5; round++) {
        const { done } = startGateway(path, { mode: 'turn', holdMs: 400, windowMs: 60 });
        new WriteLock(guard, { quietMs: 300, maxWaitMs: 10_000 }).begin();
        expect(guard.inTransaction).toBe(true);
        guard.exec('ROLLBACK');
        const out = await done;
        expect(out.ok + out.busy).toBeGreaterThan(0);
        expect(
          out.busyAfterMs.filter((ms) => ms < 300),
          out.firstError ?? '',
        ).toEqual([]);
      }
      // The connection's own busy timeout is back for everything else.
      expect(guard.pragma('busy_timeout', { simple: true })).toBe(5000);
      guard.close();
    },
  );

  it(
    'online, every attempt at the lock runs with busy_timeout 0: a held ' + 'lock is an answer, never a wait',
    async () => {
      const path = setup();
      const guard = new Database(path, { timeout: 5000 });
      const timeouts: number[] = [];
      // An attempt is the statement that takes the lock: BEGIN IMMEDIATE, or the write that changes nothing
      // inside a deferred transaction (src/prune/apply/write-lock.ts).
      const attempt = (sql: string) => /^BEGIN IMMEDIATE$|^DELETE FROM .* WHERE 0$/.test(sql);
      const record = () => timeouts.push(guard.pragma('busy_timeout', { simple: true }) as number);
      const spy = new Proxy(guard, {
        get(target, prop) {
          if (prop === 'exec') {
            return (sql: string) => {
              if (attempt(sql)) record();
              return target.exec(sql);
            };
          }
          if (prop === 'prepare') {
            return (sql: string) => {
              const st = target.prepare(sql);
              if (!attempt(sql)) return st;
              const run = st.run.bind(st);
              return Object.assign(st, { run: (...a: unknown[]) => (record(), run(...a)) });
            };
          }
          const v = Reflect.get(target, prop, target) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      // The gateway holds the lock well past one quiet spell: the first try finds it held, a later one gets it.
      const { done } = startGateway(path, { mode: 'turn', holdMs: 400, windowMs: 0 });
      new WriteLock(spy, { quietMs: 100, maxWaitMs: 10_000 }).begin();
      guard.exec('ROLLBACK');
      await done;
      expect(timeouts.length).toBeGreaterThanOrEqual(2);
      expect(timeouts.every((t) => t === 0)).toBe(true);
      expect(guard.pragma('busy_timeout', { simple: true })).toBe(5000);
      guard.close();
    },
  );

  it('gives up with GatewayBusy when the gateway never pauses for quietMs, holding nothing', async () => {
    const path = setup();
    const guard = new Database(path, { timeout: 5000 });
    const { flag, done } = startGateway(path, { mode: 'stream' });
    // quietMs is long beside the worker's 3 ms cadence, so that a descheduled worker does not look quiet.
    expect(() => new WriteLock(guard, { quietMs: 1000, maxWaitMs: 1500 }).begin()).toThrow(GatewayBusy);
    expect(guard.inTransaction).toBe(false);
    Atomics.store(flag, 2, 1);
    const out = await done;
    expect(out.ok).toBeGreaterThan(0);
    guard.close();
  });

  it('while nobody else writes, back-to-back transactions do not wait (its own commits are not activity)', () => {
    const path = setup();
    const guard = new Database(path, { timeout: 5000 });
    // The first begin() waits one quiet spell (it has seen nothing yet); a begin() that waited again would
    // make five take at least five spells.
    const lock = new WriteLock(guard, { quietMs: 1000, maxWaitMs: 60_000 });
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) {
      lock.begin();
      guard.prepare('INSERT INTO t (v) VALUES (?)').run(i);
      guard.exec('COMMIT');
    }
    expect(performance.now() - t0).toBeLessThan(4000);
    expect((guard.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n).toBe(5);
    guard.close();
  });

  it('offline (quietMs 0) waits through the busy timeout for a lock that is held', async () => {
    const path = setup();
    const guard = new Database(path, { timeout: 5000 });
    const { done } = startGateway(path, { mode: 'turn', holdMs: 100, windowMs: 0 });
    new WriteLock(guard, { quietMs: 0, maxWaitMs: 0 }).begin();
    expect(guard.inTransaction).toBe(true);
    guard.exec('ROLLBACK');
    expect((await done).busy).toBe(0);
    guard.close();
  });

  it(
    'an online pass whose seahorse.db never goes quiet skips before planning,' + ' says why, and changes nothing',
    async () => {
      const now = new Date('2026-11-30T12:00:00Z');
      const { home, dbPath } = dailyHome(tempDir('pcg-wlock-home-'), now);
      const sessionsDir = join(home, 'workspace', 'sessions');
      const look = () =>
        readdirSync(sessionsDir)
          .sort()
          .map((f) => `${f}:${statSync(join(sessionsDir, f)).size}`);
      const before = look();
      const holder = new Database(dbPath);
      holder.exec('BEGIN IMMEDIATE');
      holder.exec(`INSERT INTO conversations (session_key) VALUES ('writer')`);
      try {
        const ready = readyGateway;
        const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG, PICOGUARD_BUSY_TIMEOUT_MS: '300' };
        const r = await runPrunePass({
          home,
          env,
          apply: true,
          clock: fixedClock(now),
          stateDir: tempDir(),
          probe: ready,
          flags: { max_age_days: 3 },
        });
        expect(r.exit_code).toBe(6);
        expect(r.skipped).toContain(dbPath);
        expect(r.skipped).toMatch(/kept it busy .* for 300 ms without a 100 ms pause; nothing was deleted/);
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
      expect(look()).toEqual(before);
    },
  );
});
