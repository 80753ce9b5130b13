import { accessSync, constants, existsSync } from 'node:fs';
import { autoVacuumMode, shrinkAllowed } from './apply/shrink.js';
import { ExitCode, GuardError, errnoCode, errorMessage, type ExitCodeValue } from '../errors.js';
import type { Database } from '../io/sqlite.js';
import type { Inventory } from '../picoclaw/inventory/inventory.js';
import {
  hasFts5Trigram,
  openSeahorseRead,
  openSeahorseWrite,
  readContentBytes,
  readPages,
  withWalkCache,
} from '../picoclaw/seahorse.js';
import type { DbFacts } from './plan/plan.js';
import type { Policy } from './policy.js';
import { GatewayBusy, ONLINE_QUIET_MS, WriteLock } from './apply/write-lock.js';
import { APPLY_CACHE_KIB } from './apply/cache.js';

/**
 * A pass's seahorse.db: opened read-only for a plan, read-write and checked for apply (writable,
 * FTS5 with the trigram tokenizer usable, the write lock obtainable), and the facts the planner
 * needs (used bytes, each session's share of the content when a size limit or a VACUUM needs it).
 * Anything that would make a deletion unsafe is a refusal: the pass deletes nothing anywhere.
 */

/** The guard's own SQLite busy timeout: PicoClaw's 5000 ms unless PICOGUARD_BUSY_TIMEOUT_MS says otherwise. */
export function busyTimeoutMs(env: NodeJS.ProcessEnv): number {
  const v = Number(env.PICOGUARD_BUSY_TIMEOUT_MS);
  return Number.isInteger(v) && v >= 0 ? v : 5000;
}

export interface SeahorseForPass {
  /** The write connection (apply only); the caller closes it, refusal or not. */
  db: Database | null;
  dbFacts: DbFacts;
  refusal: { skipped: string; exitCode: ExitCodeValue } | null;
}

export interface SeahorsePassOptions {
  apply: boolean;
  online: boolean;
  forceVacuum: boolean;
  values: Policy;
  env: NodeJS.ProcessEnv;
  /** Warnings for the report (a dry-run notes what --apply would refuse). */
  warnings: string[];
  /** A read with the gateway down that must write nothing beside seahorse.db (openSeahorseRead's `quiet`). */
  quiet?: boolean;
}

export function prepareSeahorse(inv: Inventory, o: SeahorsePassOptions): SeahorseForPass {
  let db: Database | null = null;
  const refuse = (skipped: string, exitCode: ExitCodeValue): SeahorseForPass => ({
    db,
    dbFacts,
    refusal: { skipped, exitCode },
  });
  let dbFacts: DbFacts = { present: false, fileBytes: inv.seahorse.bytes.total, usedBytes: 0, contentBytes: null };
  const limit = o.values.max_db_size_mb * 1024 * 1024;
  const needContent = o.values.max_db_size_mb > 0 && inv.seahorse.bytes.total > limit;
  if (inv.seahorse.state === 'error') {
    const msg = `${inv.seahorse.path}: ${inv.seahorse.error}`;
    if (o.apply) {
      const code =
        inv.seahorse.errorKind === 'not_a_database' ||
        inv.seahorse.errorKind === 'schema' ||
        inv.seahorse.errorKind === 'damaged'
          ? ExitCode.DATA
          : ExitCode.SKIPPED;
      return refuse(
        `${msg}; nothing was deleted anywhere (deleting only the JSONL side would leave its rows behind)`,
        code,
      );
    }
    o.warnings.push(`${msg}: --apply would skip the pass`);
  } else if (inv.seahorse.state === 'open') {
    if (o.apply) {
      const storeProblem = preflight(inv, null);
      if (storeProblem) return refuse(`${storeProblem}; nothing was deleted anywhere`, ExitCode.SKIPPED);
      try {
        db = openSeahorseWrite(inv.seahorse.path, busyTimeoutMs(o.env));
        // The pass walks each page a few times, in conversation order: better-sqlite3's 16 MB page
        // cache, and as much again for the deleter's temp tables, bought no speed (BENCHMARKS.md 10c).
        db.pragma(`cache_size = ${-APPLY_CACHE_KIB}`);
        db.pragma(`temp.cache_size = ${-APPLY_CACHE_KIB}`);
      } catch (err) {
        const ge = err instanceof GuardError ? err : new GuardError(errorMessage(err), { exitCode: ExitCode.SKIPPED });
        return refuse(`${ge.message}; nothing was deleted anywhere`, ge.exitCode);
      }
      const unusable = ftsUnusable(db);
      if (unusable) {
        return refuse(
          `${inv.seahorse.path}: its FTS5 tables cannot be used by this SQLite (${unusable}` +
            `), so its rows cannot be deleted safely; nothing was deleted`,
          ExitCode.DATA,
        );
      }
      const busy = writeLockBusy(db, o.online, busyTimeoutMs(o.env));
      if (busy) {
        return refuse(
          `${inv.seahorse.path}: ${busy}; nothing was deleted, the next pass will try again`,
          ExitCode.SKIPPED,
        );
      }
      if (!hasFts5Trigram(db)) {
        return refuse(
          'this SQLite build has no FTS5 trigram tokenizer, so seahorse rows cannot ' +
            'be deleted safely; nothing was deleted',
          ExitCode.DATA,
        );
      }
      const p = readPages(db);
      // Offline, each session's share of the file is also what decides whether a VACUUM is worth its writes;
      // online on a converted database, whether the shrink merges the FTS index first (src/prune/apply/shrink.ts).
      const wantShares =
        needContent ||
        (o.values.vacuum && (!o.online || o.forceVacuum)) ||
        (o.online && shrinkAllowed(o.values) && autoVacuumMode(db) === 2);
      const wdb = db;
      dbFacts = {
        present: true,
        fileBytes: inv.seahorse.bytes.total,
        usedBytes: (p.pageCount - p.freelistCount) * p.pageSize,
        contentBytes: wantShares ? withWalkCache(wdb, () => readContentBytes(wdb)) : null,
      };
    } else {
      const r = openSeahorseRead(inv.seahorse.path, { quiet: o.quiet });
      if (r.state === 'open') {
        try {
          const p = readPages(r.db);
          dbFacts = {
            present: true,
            fileBytes: inv.seahorse.bytes.total,
            usedBytes: (p.pageCount - p.freelistCount) * p.pageSize,
            contentBytes: needContent ? withWalkCache(r.db, () => readContentBytes(r.db)) : null,
          };
        } finally {
          r.db.close();
        }
      }
    }
  }
  return { db, dbFacts, refusal: null };
}

/** Every store must be able to delete, or nothing is deleted anywhere (the seed's rule). */
export function preflight(inv: Inventory, db: Database | null): string | null {
  for (const { dir } of inv.home.sessionsDirs) {
    if (!existsSync(dir)) continue;
    try {
      accessSync(dir, constants.W_OK | constants.X_OK);
    } catch (err) {
      return (
        `the sessions folder ${dir} cannot be written (${errnoCode(err) ?? errorMessage(err)}` +
        `): pruning only some stores would not shrink anything`
      );
    }
  }
  if (db) {
    if (db.readonly) return `${inv.seahorse.path} can only be opened read-only`;
    try {
      accessSync(inv.seahorse.path, constants.W_OK);
    } catch (err) {
      return `${inv.seahorse.path} is not writable (${errnoCode(err) ?? errorMessage(err)})`;
    }
  }
  return null;
}

/**
 * SQLite's quick_check before the first deletion: every page of every b-tree read once,
 * each cell's bounds and the freelist checked, without integrity_check's index-against-table comparisons
 * (sqlite.org/pragma.html#pragma_quick_check). Its cost is one read of the file (BENCHMARKS.md, "A damaged
 * or full disk"). What is wrong (its first line), or null when it says ok.
 */
export function quickCheck(db: Database): string | null {
  try {
    const rows = db.pragma('quick_check(100)') as { quick_check: string }[];
    const first = rows[0]?.quick_check ?? 'no answer';
    if (first === 'ok') return null;
    // Its lines may start with the header "*** in database main ***". Lines about an FTS5 index ("fts5: checksum
    // mismatch ...": the index disagrees with its content table, which a live writer's snapshot or an older
    // schema's triggers leave) are not damaged pages: the rows and the b-trees are sound, and refusing on them
    // would stop every pass on such a board for good. The first line about a page is the finding.
    const lines = rows.flatMap((r) => r.quick_check.split('\n'));
    const line = lines.find((l) => l.trim() !== '' && !l.startsWith('***') && !/^fts5:/i.test(l.trim()));
    return line === undefined ? null : line.slice(0, 200);
  } catch (err) {
    return `${errnoCode(err) ?? 'error'}: ${errorMessage(err)}`;
  }
}

/** Whether the FTS5 tables can be opened (a missing tokenizer or FTS5 fails here, before any delete). */
function ftsUnusable(db: Database): string | null {
  try {
    // A MATCH needs the tokenizer (newer FTS5 loads it lazily, so a plain read would not tell).
    db.prepare(`SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH '"guard-probe"'`).get();
    db.prepare(`SELECT COUNT(*) FROM summaries_fts WHERE summaries_fts MATCH '"guard-probe"'`).get();
    return null;
  } catch (err) {
    return errorMessage(err);
  }
}

/**
 * Take and release the write lock once: a writer that holds it past the busy timeout skips
 * the pass. Online, the lock is taken the way every deletion takes it (at a quiet moment, never
 * from SQLite's busy handler: src/prune/apply/write-lock.ts), so the probe cannot fail a gateway turn either.
 */
function writeLockBusy(db: Database, online: boolean, timeoutMs: number): string | null {
  try {
    new WriteLock(db, { quietMs: online ? ONLINE_QUIET_MS : 0, maxWaitMs: timeoutMs }).begin();
    db.exec('ROLLBACK');
    return null;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    if (err instanceof GatewayBusy)
      return (
        `the gateway kept it busy (writing, or holding its write lock) for ${timeoutMs}` +
        ` ms without a ${ONLINE_QUIET_MS} ms pause`
      );
    const code = errnoCode(err);
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED')
      return `another process held its write lock longer than the busy timeout (${errorMessage(err)})`;
    throw err;
  }
}
