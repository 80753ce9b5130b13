import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { FreeSpaceReader } from '../../io/freespace.js';
import { formatBytes } from '../../io/bytes.js';
import type { Database } from '../../io/sqlite.js';
import { dbFileBytes, readPages } from '../../picoclaw/seahorse.js';
import { prepareConversion } from './shrink.js';

/**
 * Giving space back after a pass (docs/picoclaw.md#opening: PicoClaw never VACUUMs and has
 * no auto_vacuum, so the file never shrinks by itself).
 *
 * - FTS5 deletes leave tombstones: the file does not free pages until the index is
 *   merged, so the freelist is only a fair estimate of what VACUUM gives back after
 *   `optimize` (done only while the gateway is stopped: it is a long write).
 * - VACUUM only when it gives back at least 1 MiB and a tenth of the file, and only
 *   when both the database's file system (the WAL grows by about the database size)
 *   and SQLite's temp folder (the copy) have room for it.
 * - Otherwise, truncate the WAL. Never touch -wal/-shm files or journal_mode.
 */

export const MIN_RECLAIM_BYTES = 1024 * 1024;

export const MIN_RECLAIM_RATIO = 0.1;

export interface VacuumReport {
  ran: boolean;
  /** Why it ran or did not. */
  reason: string;
  estimatedReclaimBytes: number | null;
  bytesBefore: number;
  bytesAfter: number;
  reclaimedBytes: number | null;
  durationMs: number;
  walCheckpoint: 'truncate' | 'passive' | 'busy' | 'none';
  /** This VACUUM switched seahorse.db to auto_vacuum INCREMENTAL (online shrink from now on). */
  converted?: boolean;
}

/** SQLite's temp folder: SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp, /tmp, . (tempfiles.html). */
export function sqliteTempDir(env: NodeJS.ProcessEnv = process.env): string {
  for (const d of [env.SQLITE_TMPDIR, env.TMPDIR, '/var/tmp', '/usr/tmp', '/tmp', '.']) {
    if (!d) continue;
    try {
      if (statSync(d).isDirectory()) {
        accessSync(d, constants.W_OK | constants.X_OK);
        return d;
      }
    } catch {
      // next
    }
  }
  return '.';
}

export interface Room {
  ok: boolean;
  reason: string;
}

/** Whether VACUUM of a database of `dbBytes` fits in both file systems. */
export function roomForVacuum(
  dbPath: string,
  dbBytes: number,
  freeSpace: FreeSpaceReader,
  env: NodeJS.ProcessEnv = process.env,
): Room {
  const dbDir = dirname(dbPath);
  const tmp = sqliteTempDir(env);
  const margin = 1.1;
  let sameFs = false;
  try {
    sameFs = statSync(dbDir).dev === statSync(tmp).dev;
  } catch {
    sameFs = false;
  }
  const dbFree = freeSpace(dbDir).availableBytes;
  if (sameFs) {
    const need = Math.ceil(dbBytes * 2 * margin);
    const tmpFree = freeSpace(tmp).availableBytes;
    if (dbFree < need)
      return {
        ok: false,
        reason:
          `VACUUM needs about ${formatBytes(need)} free in ${dbDir} (database copy in ` +
          `${tmp} on the same file system, plus WAL); ${formatBytes(dbFree)} are free`,
      };
    if (tmpFree < need)
      return {
        ok: false,
        reason:
          `VACUUM needs about ${formatBytes(need)} free in the temp folder ${tmp}` +
          ` (same file system as the database); ${formatBytes(tmpFree)} are free`,
      };
    return { ok: true, reason: `${formatBytes(dbFree)} free in ${dbDir} (needs ${formatBytes(need)})` };
  }
  const needDb = Math.ceil(dbBytes * margin);
  if (dbFree < needDb)
    return {
      ok: false,
      reason: `VACUUM needs about ${formatBytes(needDb)} free in ${dbDir} for the WAL; ${formatBytes(dbFree)} are free`,
    };
  const tmpFree = freeSpace(tmp).availableBytes;
  if (tmpFree < needDb)
    return {
      ok: false,
      reason:
        `VACUUM needs about ${formatBytes(needDb)} free in the temp folder ${tmp}` +
        `; ${formatBytes(tmpFree)} are free (set SQLITE_TMPDIR to a larger folder)`,
    };
  return { ok: true, reason: `${formatBytes(dbFree)} free in ${dbDir} and ${formatBytes(tmpFree)} in ${tmp}` };
}

/** Merge the FTS5 b-trees so that deleted entries turn into free pages (offline only: a long write). */
export function foldFtsTombstones(db: Database): void {
  db.exec(`INSERT INTO messages_fts(messages_fts) VALUES('optimize')`);
  db.exec(`INSERT INTO summaries_fts(summaries_fts) VALUES('optimize')`);
}

/** Checkpoint the WAL. Offline: TRUNCATE (the -wal goes to 0 bytes). Online: PASSIVE never waits. */
export function checkpoint(db: Database, online: boolean): VacuumReport['walCheckpoint'] {
  if (online) {
    db.pragma('wal_checkpoint(PASSIVE)');
    return 'passive';
  }
  const r = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
  return r[0]?.busy ? 'busy' : 'truncate';
}

export function runVacuum(
  db: Database,
  o: { toIncremental?: boolean } = {},
): { durationMs: number; checkpoint: VacuumReport['walCheckpoint']; converted: boolean } {
  const t0 = performance.now();
  // Offline only (src/prune/apply/shrink.ts): this VACUUM also switches auto_vacuum, at no extra cost.
  const converted = o.toIncremental ? prepareConversion(db) : false;
  // PASSIVE first (hermes: a TRUNCATE here would race a live writer), then VACUUM, then TRUNCATE:
  // VACUUM rewrites every page through the WAL, which would otherwise stay as large as the database.
  db.pragma('wal_checkpoint(PASSIVE)');
  db.exec('VACUUM');
  const cp = checkpoint(db, false);
  return { durationMs: performance.now() - t0, checkpoint: cp, converted };
}

export interface AfterPassOptions {
  path: string;
  online: boolean;
  forceVacuum: boolean;
  vacuumAllowed: boolean;
  /** Convert to auto_vacuum INCREMENTAL when this VACUUM runs with the gateway stopped (shrink_online). */
  toIncremental?: boolean;
  freeSpace: FreeSpaceReader;
  /**
   * The deleted sessions' estimated share of the file. When even that plus today's free
   * pages falls short of the threshold, the FTS merge and the VACUUM (which together write
   * several times the file: SD cards wear) are not started at all.
   */
  estimatedFreedBytes?: number | null;
}

/** After a pass that deleted something: VACUUM if it is worth it and fits, else truncate the WAL. */
export function vacuumAfterPass(db: Database, o: AfterPassOptions): VacuumReport {
  const before = dbFileBytes(o.path).total;
  const base: VacuumReport = {
    ran: false,
    reason: '',
    estimatedReclaimBytes: null,
    bytesBefore: before,
    bytesAfter: before,
    reclaimedBytes: null,
    durationMs: 0,
    walCheckpoint: 'none',
  };
  const finish = (r: VacuumReport): VacuumReport => ({ ...r, bytesAfter: dbFileBytes(o.path).total });
  if (!o.vacuumAllowed) {
    return finish({
      ...base,
      reason: 'vacuum is off in the policy; WAL checkpointed',
      walCheckpoint: checkpoint(db, o.online),
    });
  }
  if (o.online && !o.forceVacuum) {
    return finish({
      ...base,
      reason:
        'deferred: the gateway is running (VACUUM would block its writes); it runs ' +
        'at the next pass while the gateway is stopped, or with --force-vacuum',
      walCheckpoint: checkpoint(db, true),
    });
  }
  const t0 = performance.now();
  if (o.estimatedFreedBytes !== undefined && o.estimatedFreedBytes !== null) {
    const p0 = readPages(db);
    const fileBytes0 = p0.pageCount * p0.pageSize;
    const pre = p0.freelistCount * p0.pageSize + o.estimatedFreedBytes;
    if (pre < MIN_RECLAIM_BYTES || pre < fileBytes0 * MIN_RECLAIM_RATIO) {
      return finish({
        ...base,
        estimatedReclaimBytes: pre,
        reason:
          `not worth it: the deleted sessions' share plus free pages is about ${formatBytes(pre)}` +
          ` (needs at least 1 MiB and a tenth of the ${formatBytes(fileBytes0)} file); no FTS merge, no VACUUM; WAL truncated`,
        walCheckpoint: checkpoint(db, o.online),
        durationMs: performance.now() - t0,
      });
    }
  }
  foldFtsTombstones(db);
  const p = readPages(db);
  const fileBytes = p.pageCount * p.pageSize;
  const est = p.freelistCount * p.pageSize;
  base.estimatedReclaimBytes = est;
  if (est < MIN_RECLAIM_BYTES || est < fileBytes * MIN_RECLAIM_RATIO) {
    return finish({
      ...base,
      reason:
        `not worth it: would give back ${formatBytes(est)} (needs at least 1 MiB and a tenth of the ` +
        `${formatBytes(fileBytes)} file); WAL truncated`,
      walCheckpoint: checkpoint(db, o.online),
      durationMs: performance.now() - t0,
    });
  }
  const room = roomForVacuum(o.path, fileBytes, o.freeSpace);
  if (!room.ok) {
    return finish({
      ...base,
      reason: `skipped: ${room.reason}; WAL truncated`,
      walCheckpoint: checkpoint(db, o.online),
      durationMs: performance.now() - t0,
    });
  }
  const v = runVacuum(db, { toIncremental: !o.online && o.toIncremental === true });
  const after = dbFileBytes(o.path).total;
  return {
    ...base,
    ran: true,
    reason:
      `worth it: about ${formatBytes(est)} of free pages after folding FTS tombstones (at least 1 MiB and a tenth ` +
      `of the file); ${room.reason}`,
    bytesAfter: after,
    reclaimedBytes: before - after,
    durationMs: performance.now() - t0,
    walCheckpoint: v.checkpoint,
    converted: v.converted,
  };
}
