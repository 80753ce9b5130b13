import type { Database } from '../../io/sqlite.js';
import { readPages } from '../../picoclaw/seahorse.js';
import type { Policy } from '../policy.js';
import { GatewayBusy, ONLINE_QUIET_MS, WriteLock } from './write-lock.js';

/**
 * Online shrink: giving seahorse.db's free pages back while the gateway runs.
 *
 * PicoClaw creates seahorse.db with auto_vacuum NONE (pkg/seahorse/schema.go sets no pragma), so
 * deleted rows only become free pages inside the file, and only a VACUUM, which holds the write
 * lock for the whole rewrite (seconds to minutes on an SD card), gives them back. A database in
 * auto_vacuum INCREMENTAL mode can instead give them back in steps: `PRAGMA incremental_vacuum(N)`
 * moves up to N pages from the end of the file into free slots and truncates it
 * (sqlite.org/pragma.html#pragma_incremental_vacuum), a short write transaction each time.
 *
 * - The mode can only be switched by a VACUUM (pragma.html#pragma_auto_vacuum), so the guard
 *   switches it only when it runs a VACUUM offline anyway (an owed VACUUM in the pre-start pass,
 *   or any other while the gateway is stopped): the conversion costs no extra rewrite and never
 *   blocks the gateway. Once the mode is INCREMENTAL every later VACUUM keeps it.
 * - What the mode changes for PicoClaw: nothing it reads or writes (the schema, the rows and the
 *   WAL are the same); SQLite keeps pointer-map pages (one per about page_size/5 pages: 0.1% of the
 *   file with 4 KiB pages) so that it can move pages, and frees no page by itself (INCREMENTAL,
 *   not FULL: PicoClaw's own commits do no extra work).
 * - Online, each step takes the same quiet-moment write lock as the deletions (./write-lock.ts),
 *   its size adapted to stay under a target, so no gateway write waits for long or fails; then a
 *   PASSIVE checkpoint, which never waits, lets the file itself shrink.
 * - Free pages are not all a deletion leaves: FTS5 keeps the deleted entries as tombstones inside
 *   the index's segments until they are merged (sqlite.org/fts5.html, "The merge command"). When
 *   the deleted sessions' estimated share exceeds the pages that came free by at least what makes a
 *   VACUUM worth it (1 MiB and a tenth of the file), the shrink first merges the index
 *   incrementally: `INSERT INTO t(t, rank) VALUES('merge', -N)` once, then `('merge', N)` until a
 *   call changes nothing, each call its own short transaction under the same lock, N adapted like
 *   the steps. It rewrites the index (as the offline 'optimize' does), hence the gate: SD cards wear.
 * - Whatever it leaves, the size guard counts from its estimate (src/state/size-estimate.ts), not
 *   from the file.
 */

/** Whether the policy lets the guard convert seahorse.db and shrink it online (only with VACUUM allowed). */
export function shrinkAllowed(policy: Pick<Policy, 'vacuum' | 'shrink_online'>): boolean {
  return policy.vacuum && policy.shrink_online;
}

/** auto_vacuum: 0 NONE, 1 FULL, 2 INCREMENTAL. */
export function autoVacuumMode(db: Database): number {
  return db.pragma('auto_vacuum', { simple: true }) as number;
}

/**
 * Before a VACUUM that runs offline anyway: ask for INCREMENTAL, which that VACUUM applies.
 * True when this VACUUM converts the database (it was not INCREMENTAL yet).
 */
export function prepareConversion(db: Database): boolean {
  if (autoVacuumMode(db) === 2) return false;
  db.pragma('auto_vacuum = INCREMENTAL');
  return true;
}

export interface ShrinkReport {
  ran: boolean;
  /** Why it ran, stopped, or did not run. */
  reason: string;
  steps: number;
  /** Free pages given back (bytes): page_count before minus after. */
  returnedBytes: number;
  /** The longest step's write lock. */
  longestStepMs: number;
  durationMs: number;
  freelistAfter: number;
  /** The file (-wal aside) shrinks at the checkpoint: 'passive' never waits for readers. */
  walCheckpoint: 'passive' | 'none';
  /** FTS merge steps run first (0: none), included in steps and longestStepMs. */
  mergeSteps: number;
}

export interface ShrinkOptions {
  /** Stop between steps (the pass's deadline, SIGTERM, a stop request). */
  stop: () => boolean;
  /** Online: how long the database must be quiet before each step (./write-lock.ts). */
  quietMs?: number;
  /** Give up when no quiet moment came within this long. */
  maxQuietWaitMs?: number;
  /** Each step's lock is kept under this; the page count per step adapts. */
  targetStepMs?: number;
  /** First step's page count. */
  firstStepPages?: number;
  /** Merge the FTS5 indexes first (their tombstones become free pages): see the gate in apply-vacuum.ts. */
  foldFts?: boolean;
  /** Test and benchmark hook: after each step, with its lock time. */
  onStep?: (ms: number, pages: number) => void;
}

export const SHRINK_TARGET_STEP_MS = 30;

/** Give the free pages back in short steps, each inside the quiet-moment write lock, then checkpoint (PASSIVE). */
export function shrinkOnline(db: Database, o: ShrinkOptions): ShrinkReport {
  const t0 = performance.now();
  const target = o.targetStepMs ?? SHRINK_TARGET_STEP_MS;
  const lock = new WriteLock(db, { quietMs: o.quietMs ?? ONLINE_QUIET_MS, maxWaitMs: o.maxQuietWaitMs ?? 10_000 });
  const p0 = readPages(db);
  const r: ShrinkReport = {
    ran: false,
    reason: '',
    steps: 0,
    returnedBytes: 0,
    longestStepMs: 0,
    durationMs: 0,
    freelistAfter: p0.freelistCount,
    walCheckpoint: 'none',
    mergeSteps: 0,
  };
  if (autoVacuumMode(db) !== 2) {
    r.reason = 'seahorse.db is not in auto_vacuum INCREMENTAL mode yet (converted at the next offline VACUUM)';
    return r;
  }
  /** One write transaction at a quiet moment, timed; false when the pass must stop here (and why is in r.reason). */
  const step = (sql: string, pages: number, left: () => string): boolean => {
    if (o.stop()) {
      r.reason = `stopped at the pass's deadline with ${left()}; the next online pass goes on`;
      return false;
    }
    try {
      lock.begin();
    } catch (err) {
      if (!(err instanceof GatewayBusy)) throw err;
      r.reason = `${err.message} (${left()})`;
      return false;
    }
    const ts = performance.now();
    try {
      db.exec(sql);
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    const ms = performance.now() - ts;
    r.steps++;
    if (ms > r.longestStepMs) r.longestStepMs = ms;
    o.onStep?.(ms, pages);
    lastMs = ms;
    return true;
  };
  let lastMs = 0;
  // Halve when a step took too long, double while it takes under a quarter of the target.
  const adapt = (n: number, min: number, max: number): number =>
    lastMs > target && n > min ? Math.max(min, Math.floor(n / 2)) : lastMs < target / 4 && n < max ? n * 2 : n;
  let stopped = false;
  r.ran = true;
  if (o.foldFts) {
    const changes = db.prepare('SELECT total_changes() AS n');
    for (const t of ['messages_fts', 'summaries_fts']) {
      let n = 8;
      let first = true;
      for (;;) {
        const before = (changes.get() as { n: number }).n;
        // -N once: merge even levels below usermerge (an incremental 'optimize'); then N until nothing changes.
        if (
          !step(`INSERT INTO ${t}(${t}, rank) VALUES('merge', ${first ? -n : n})`, n, () => 'the FTS merge unfinished')
        ) {
          stopped = true;
          break;
        }
        r.mergeSteps++;
        first = false;
        if ((changes.get() as { n: number }).n - before < 2) break;
        n = adapt(n, 4, 64);
      }
      if (stopped) break;
    }
  }
  let free = db.pragma('freelist_count', { simple: true }) as number;
  if (!stopped && free === 0 && r.mergeSteps === 0) {
    r.ran = false;
    r.reason = 'no free pages to give back';
    return r;
  }
  let pages = Math.max(8, o.firstStepPages ?? 64);
  if (!stopped) r.reason = 'every free page given back';
  while (!stopped && free > 0) {
    if (!step(`PRAGMA incremental_vacuum(${pages})`, pages, () => `${free} free pages left`)) break;
    free = db.pragma('freelist_count', { simple: true }) as number;
    pages = adapt(pages, 8, 65_536);
  }
  db.pragma('wal_checkpoint(PASSIVE)');
  r.walCheckpoint = 'passive';
  const p1 = readPages(db);
  r.freelistAfter = p1.freelistCount;
  r.returnedBytes = Math.max(0, (p0.pageCount - p1.pageCount) * p0.pageSize);
  r.durationMs = performance.now() - t0;
  return r;
}
