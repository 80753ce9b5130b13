import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { dbFileBytes, readPages } from '../../src/picoclaw/seahorse.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { downGateway, readyGateway } from '../support/gateway-state.js';
import { dailyHome, integrity } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * Online shrink (src/prune/apply/shrink.ts): seahorse.db is converted to auto_vacuum INCREMENTAL only by
 * a VACUUM that runs with the gateway stopped, once; from then on an online pass gives the free
 * pages back in short steps under the quiet-moment write lock, beside a gateway that keeps writing.
 */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };

const mode = (dbPath: string): number => {
  const db = new (sqlite())(dbPath, { readonly: true });
  try {
    return db.pragma('auto_vacuum', { simple: true }) as number;
  } finally {
    db.close();
  }
};

interface Pass {
  online: boolean;
  force: boolean;
  vacuum: boolean;
  shrink: boolean;
  /** Sessions idle longer than this go (each pass deletes a few more days). */
  days: number;
}

async function pass(home: string, state: string, p: Pass) {
  return runPrunePass({
    home,
    env,
    apply: true,
    clock: fixedClock(NOW),
    stateDir: state,
    probe: p.online ? readyGateway : downGateway,
    forceVacuum: p.force,
    flags: { max_age_days: p.days, max_sessions: 0, max_db_size_mb: 0, vacuum: p.vacuum, shrink_online: p.shrink },
  });
}

describe('the conversion to auto_vacuum INCREMENTAL: only offline, only once, only when allowed', () => {
  it('holds over any sequence of online, forced, offline passes with vacuum and shrink_online on or off', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ online: fc.boolean(), force: fc.boolean(), vacuum: fc.boolean(), shrink: fc.boolean() }), {
          minLength: 2,
          maxLength: 4,
        }),
        async (seq) => {
          const { home, dbPath } = dailyHome(tempDir(), NOW);
          const state = tempDir();
          let converted = 0;
          let expectMode = 0;
          for (const [i, s] of seq.entries()) {
            const r = await pass(home, state, { ...s, days: 22 - i * 4 });
            const v = r.database.vacuum;
            if (v?.converted) converted++;
            // Converted exactly by a VACUUM that ran with the gateway stopped, shrink_online on.
            const should = expectMode === 0 && v?.ran === true && !s.online && s.vacuum && s.shrink;
            expect(v?.converted ?? false, JSON.stringify({ seq, i, v })).toBe(should);
            if (should) expectMode = 2;
            expect(mode(dbPath)).toBe(expectMode);
          }
          expect(converted).toBeLessThanOrEqual(1);
          expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
        },
      ),
      {
        numRuns: 6,
        seed: Number(process.env.FC_SEED ?? 3131),
        examples: [
          [
            [
              { online: true, force: true, vacuum: true, shrink: true },
              { online: false, force: false, vacuum: true, shrink: true },
              { online: false, force: false, vacuum: true, shrink: true },
            ],
          ],
        ],
      },
    );
  }, 120_000);
});

/** PicoClaw's writes, in a worker thread with its own connection: a turn is a message, then appendContextItems. */
const GATEWAY = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.path, { timeout: 5000 });
const flag = new Int32Array(workerData.sab);
const conv = Number(db.prepare("INSERT INTO conversations (session_key) VALUES ('writer')").run().lastInsertRowid);
const msg = db.prepare("INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'user', ?, ?)");
const max = db.prepare('SELECT COALESCE(MAX(ordinal), 0) AS m FROM context_items WHERE conversation_id = ?');
const item = db.prepare("INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (?, ?, 'message', ?)");
const out = { turns: 0, failures: 0, firstError: null, longestMs: 0 };
Atomics.store(flag, 0, 1);
Atomics.notify(flag, 0);
let seed = 7;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
while (Atomics.load(flag, 2) === 0) {
  const t0 = performance.now();
  try {
    // Write first: waits through busy_timeout (5 s) for a guard step.
    const id = Number(msg.run(conv, 'turn ' + out.turns + ' ' + 'y'.repeat(600), workerData.at).lastInsertRowid);
    // Read then write, a deferred transaction: SQLITE_BUSY at once if the guard holds the lock.
    db.exec('BEGIN');
    const m = max.get(conv).m;
    item.run(conv, m + 1, id);
    db.exec('COMMIT');
    out.turns++;
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    out.failures++;
    out.firstError = out.firstError || e.code + ': ' + e.message;
  }
  out.longestMs = Math.max(out.longestMs, performance.now() - t0);
  // The next turn 20 to 250 ms later.
  Atomics.wait(flag, 1, 0, 20 + Math.floor(rnd() * 230));
}
db.close();
parentPort.postMessage(out);
`;

interface GatewayOut {
  turns: number;
  failures: number;
  firstError: string | null;
  longestMs: number;
}

function startGateway(path: string): { stop: () => Promise<GatewayOut> } {
  const sab = new SharedArrayBuffer(12);
  const flag = new Int32Array(sab);
  const w = new Worker(GATEWAY, {
    eval: true,
    workerData: {
      path,
      sab,
      at: new Date(NOW.getTime() - 3_600_000).toISOString().slice(0, 19).replace('T', ' '),
      sqlite: createRequire(import.meta.url).resolve('better-sqlite3'),
    },
  });
  const done = new Promise<GatewayOut>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  Atomics.wait(flag, 0, 0, 30_000);
  return {
    stop: () => {
      Atomics.store(flag, 2, 1);
      Atomics.notify(flag, 1);
      return done;
    },
  };
}

describe('online shrink beside a gateway that keeps writing', () => {
  it('gives the free pages back in short steps, clears the owed VACUUM, and no gateway write fails', async () => {
    const { home, dbPath } = dailyHome(tempDir(), NOW);
    const state = tempDir();
    // The pre-start pass: a VACUUM that runs anyway converts the database.
    const offline = await pass(home, state, { online: false, force: false, vacuum: true, shrink: true, days: 20 });
    expect(offline.database.vacuum).toMatchObject({ ran: true, converted: true });
    expect(mode(dbPath)).toBe(2);

    const gw = startGateway(dbPath);
    let out: GatewayOut = { turns: 0, failures: -1, firstError: 'not stopped', longestMs: 0 };
    let online: Awaited<ReturnType<typeof pass>>;
    try {
      online = await pass(home, state, { online: true, force: false, vacuum: true, shrink: true, days: 8 });
    } finally {
      out = await gw.stop();
    }
    if (process.env.DEBUG_SHRINK) console.log(JSON.stringify(online.database.shrink), JSON.stringify(out));
    expect(online.exit_code).toBe(0);
    expect(online.totals.deleted_sessions).toBe(12);
    expect(online.database.vacuum?.ran).toBe(false);
    const s = online.database.shrink!;
    expect(s, JSON.stringify(s)).toMatchObject({ ran: true, free_pages_left: 0 });
    expect(s.returned_bytes).toBeGreaterThan(1024 * 1024);
    // 12 of 22 sessions' index entries were tombstones: merged first, so that they came back too.
    expect(s.fts_merge_steps).toBeGreaterThan(0);
    // In steps, each held short: the page count adapts to a 30 ms target (5-8 ms a step here). The
    // bound leaves room for an fsync that a loaded machine stalls; the live-gateway harness measures it.
    expect(s.steps).toBeGreaterThan(1);
    expect(s.longest_step_ms).toBeLessThan(1000);
    // Nothing is owed once every free page is back (the tombstones are the size estimate's business).
    expect(online.database.vacuum_owed).toBeNull();
    expect(out.turns).toBeGreaterThan(0);
    expect(out.failures, out.firstError ?? '').toBe(0);

    const db = new (sqlite())(dbPath, { readonly: true });
    const p = readPages(db);
    db.close();
    expect(p.freelistCount).toBe(0);
    expect(dbFileBytes(dbPath).db).toBeLessThan(offline.database.bytes_after!);
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  }, 60_000);

  it('an online pass on a database not converted yet leaves the VACUUM owed and shrinks nothing', async () => {
    const { home, dbPath } = dailyHome(tempDir(), NOW);
    const state = tempDir();
    const r = await pass(home, state, { online: true, force: false, vacuum: true, shrink: true, days: 10 });
    expect(r.totals.deleted_sessions).toBe(14);
    expect(r.database.shrink).toBeNull();
    expect(r.database.vacuum_owed).not.toBeNull();
    expect(mode(dbPath)).toBe(0);
  });
});
