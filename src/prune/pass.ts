import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage, type ExitCodeValue } from '../errors.js';
import type { Clock } from '../io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../io/freespace.js';
import { tryLock } from '../io/lock.js';
import { releaseGarbage } from '../io/heap.js';
import type { Database } from '../io/sqlite.js';
import { loadGuardConfig } from '../guard-config.js';
import { probeGateway, type GatewayState } from '../picoclaw/gateway.js';
import { assertPicoClawHome, discoverHome, type PicoClawHome } from '../picoclaw/home.js';
import { buildInventory, type Inventory } from '../picoclaw/inventory.js';
import {
  hasFts5Trigram,
  openSeahorseRead,
  openSeahorseWrite,
  readContentBytes,
  readPages,
  withWalkCache,
} from '../picoclaw/seahorse.js';
import { applyPlan, type ApplyResult } from './apply.js';
import { archiveDirProblem, refuseArchiveInSessions } from './archive-pass.js';
import { activeHolds, holdsPath, type Hold } from '../state/holds.js';
import { appendHistory } from '../state/history.js';
import { planPrune, type DbFacts, type Plan } from './plan.js';
import { policyValues, resolvePolicy, type PolicyKey, type ResolvedPolicy } from './policy.js';
import { buildReport, type PruneReport } from './report.js';
import { readOwedVacuum, writeOwedVacuum, type OwedVacuum } from '../state/vacuum-owed.js';
import { bootstrapInput } from './bootstrap-input.js';
import { memoryBudget } from './memory-budget.js';
import { GatewayBusy, ONLINE_QUIET_MS, WriteLock } from './write-lock.js';

/**
 * One prune pass, start to end: policy (validated before anything is read), the
 * gateway's state, the lock, the inventory, the plan, and (with apply) the deletion.
 * Shared by `picoclaw-guard prune`, the pre-start unit and the daemon.
 */
export interface PassOptions {
  home?: string;
  configPath?: string;
  env?: NodeJS.ProcessEnv;
  flags?: Partial<Record<PolicyKey, unknown>>;
  apply: boolean;
  forceVacuum?: boolean;
  /** Only act if the policy's `enabled` is true (automatic passes). */
  ifEnabled?: boolean;
  clock: Clock;
  freeSpace?: FreeSpaceReader;
  /** Where the prune history is appended (apply only). null: do not record. */
  stateDir: string | null;
  probe?: (home: PicoClawHome) => Promise<GatewayState>;
  shouldStop?: () => boolean;
  onProgress?: (done: number, total: number, what: string) => void;
  /** Why the age check must be skipped this pass (the daemon saw the wall clock jump), or undefined. */
  skipAgeCheck?: string;
  /** Resolved home (the daemon resolves once); overrides `home`. */
  resolvedHome?: PicoClawHome;
  /** The process's resident size in bytes, read between sessions against the memory budget (tests give their own). */
  rss?: () => number;
  /** Where the startup-time model's samples are (max_bootstrap_seconds); default: stateDir. */
  modelStateDir?: string | null;
}

export const LOCK_NAME = '.picoclaw-guard.lock';

/** The guard's own SQLite busy timeout: PicoClaw's 5000 ms unless PICOGUARD_BUSY_TIMEOUT_MS says otherwise. */
export function busyTimeoutMs(env: NodeJS.ProcessEnv): number {
  const v = Number(env.PICOGUARD_BUSY_TIMEOUT_MS);
  return Number.isInteger(v) && v >= 0 ? v : 5000;
}

/**
 * The lock lives in the PicoClaw home (one pass per home, whoever runs it), never in a
 * sessions folder. Where the home cannot be written (read-only, another owner), the
 * state folder, else the temp folder, holds it under a name derived from the home.
 */
export function lockPathFor(home: PicoClawHome, stateDir: string | null): string {
  // Named from the real path: a symlinked path to the same home must find the same lock.
  let real = home.home;
  try {
    real = realpathSync(home.home);
  } catch {
    // a home that does not exist is refused before any lock is taken
  }
  const tag = createHash('sha256').update(real).digest('hex').slice(0, 16);
  for (const [dir, name] of [
    [real, LOCK_NAME],
    [stateDir, `${LOCK_NAME}-${tag}`],
    [tmpdir(), `picoclaw-guard-${tag}.lock`],
  ] as const) {
    if (!dir) continue;
    try {
      accessSync(dir, constants.W_OK);
      return join(dir, name);
    } catch {
      // next
    }
  }
  return join(tmpdir(), `picoclaw-guard-${tag}.lock`);
}

function skipped(
  base: {
    mode: 'dry-run' | 'apply';
    now: Date;
    home: PicoClawHome;
    policy: ResolvedPolicy;
    t0: number;
    gateway: GatewayState | null;
  },
  reason: string,
  exitCode: ExitCodeValue,
): PruneReport {
  return buildReport({
    ...base,
    inventory: null,
    plan: null,
    result: null,
    skipped: reason,
    exitCode,
    warnings: [],
    dbFacts: null,
  });
}

/** SQLite's page cache for the pass's write connection (VACUUM's copy takes the same) and its temp tables, in KiB. */
const PASS_CACHE_KIB = 8000;
const PASS_TEMP_CACHE_KIB = 2000;

/** The real path of a file (symlinks resolved), so one database is one record however it is reached. */
function realPathOf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Every store must be able to delete, or nothing is deleted anywhere (the seed's rule). */
function preflight(inv: Inventory, db: Database | null): string | null {
  for (const { dir } of inv.home.sessionsDirs) {
    if (!existsSync(dir)) continue;
    try {
      accessSync(dir, constants.W_OK | constants.X_OK);
    } catch (err) {
      return `the sessions folder ${dir} cannot be written (${errnoCode(err) ?? errorMessage(err)}): pruning only some stores would not shrink anything`;
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
 * from SQLite's busy handler: src/prune/write-lock.ts), so the probe cannot fail a gateway turn either.
 */
function writeLockBusy(db: Database, online: boolean, timeoutMs: number): string | null {
  try {
    new WriteLock(db, { quietMs: online ? ONLINE_QUIET_MS : 0, maxWaitMs: timeoutMs }).begin();
    db.exec('ROLLBACK');
    return null;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    if (err instanceof GatewayBusy)
      return `the gateway kept it busy (writing, or holding its write lock) for ${timeoutMs} ms without a ${ONLINE_QUIET_MS} ms pause`;
    const code = errnoCode(err);
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED')
      return `another process held its write lock longer than the busy timeout (${errorMessage(err)})`;
    throw err;
  }
}

export async function runPrunePass(o: PassOptions): Promise<PruneReport> {
  const t0 = performance.now();
  const env = o.env ?? process.env;
  const now = o.clock();
  const mode = o.apply ? 'apply' : 'dry-run';
  const home = o.resolvedHome ?? discoverHome({ home: o.home, env });
  const guardConfig = loadGuardConfig(o.configPath, env);
  const policy = resolvePolicy({
    flags: o.flags,
    env,
    guardConfig:
      guardConfig.path && guardConfig.sections.prune
        ? { path: guardConfig.path, values: guardConfig.sections.prune }
        : null,
    picoclawConfig: home.sessionPrune ? { path: home.configPath, values: home.sessionPrune } : null,
  });
  const values = policyValues(policy);
  const base = { mode, now, home, policy, t0, gateway: null as GatewayState | null } as const;
  assertPicoClawHome(home);
  if (values.archive_dir) refuseArchiveInSessions(values.archive_dir, home);
  if (o.ifEnabled && !values.enabled) {
    return skipped(
      base,
      'the policy is not enabled (set prune.enabled to true in the guard config, or PICOCLAW_SESSION_PRUNE_ENABLED=true)',
      ExitCode.OK,
    );
  }

  const gateway = await (o.probe ?? ((h) => probeGateway(h)))(home);
  const withGw = { ...base, gateway };
  if (o.apply && (gateway.state === 'starting' || gateway.state === 'hung')) {
    return skipped(
      withGw,
      `the gateway is ${gateway.state} (${gateway.reason}); pruning now would race its bootstrap`,
      ExitCode.GATEWAY_STARTING,
    );
  }
  const online = gateway.state === 'ready';

  const lock = o.apply ? tryLock(lockPathFor(home, o.stateDir), `prune pid ${process.pid}`) : null;
  if (lock && !lock.ok) {
    const h = lock.holder;
    return skipped(
      withGw,
      `another prune pass holds the lock for ${home.home}${h ? ` (pid ${h.pid}, since ${h.since})` : ''}`,
      ExitCode.LOCKED,
    );
  }
  let db: Database | null = null;
  try {
    const inv = buildInventory(home);
    const warnings: string[] = [];
    // seahorse: read-only for the plan; read-write (and checked) for apply.
    let dbFacts: DbFacts = { present: false, fileBytes: inv.seahorse.bytes.total, usedBytes: 0, contentBytes: null };
    const limit = values.max_db_size_mb * 1024 * 1024;
    const needContent = values.max_db_size_mb > 0 && inv.seahorse.bytes.total > limit;
    if (inv.seahorse.state === 'error') {
      const msg = `${inv.seahorse.path}: ${inv.seahorse.error}`;
      if (o.apply) {
        const code =
          inv.seahorse.errorKind === 'not_a_database' || inv.seahorse.errorKind === 'schema'
            ? ExitCode.DATA
            : ExitCode.SKIPPED;
        return buildReport({
          ...withGw,
          inventory: inv,
          plan: null,
          result: null,
          skipped: `${msg}; nothing was deleted anywhere (deleting only the JSONL side would leave its rows behind)`,
          exitCode: code,
          warnings,
          dbFacts: null,
        });
      }
      warnings.push(`${msg}: --apply would skip the pass`);
    } else if (inv.seahorse.state === 'open') {
      if (o.apply) {
        const storeProblem = preflight(inv, null);
        if (storeProblem)
          return buildReport({
            ...withGw,
            inventory: inv,
            plan: null,
            result: null,
            skipped: `${storeProblem}; nothing was deleted anywhere`,
            exitCode: ExitCode.SKIPPED,
            warnings,
            dbFacts: null,
          });
        try {
          db = openSeahorseWrite(inv.seahorse.path, busyTimeoutMs(env));
          // The pass walks each page a few times, in conversation order: better-sqlite3's 16 MB page
          // cache, and as much again for the deleter's temp tables, bought no speed (BENCHMARKS.md 10c).
          db.pragma(`cache_size = ${-PASS_CACHE_KIB}`);
          db.pragma(`temp.cache_size = ${-PASS_TEMP_CACHE_KIB}`);
        } catch (err) {
          const ge =
            err instanceof GuardError ? err : new GuardError(errorMessage(err), { exitCode: ExitCode.SKIPPED });
          return buildReport({
            ...withGw,
            inventory: inv,
            plan: null,
            result: null,
            skipped: `${ge.message}; nothing was deleted anywhere`,
            exitCode: ge.exitCode,
            warnings,
            dbFacts: null,
          });
        }
        const unusable = ftsUnusable(db);
        if (unusable) {
          return buildReport({
            ...withGw,
            inventory: inv,
            plan: null,
            result: null,
            skipped: `${inv.seahorse.path}: its FTS5 tables cannot be used by this SQLite (${unusable}), so its rows cannot be deleted safely; nothing was deleted`,
            exitCode: ExitCode.DATA,
            warnings,
            dbFacts: null,
          });
        }
        const busy = writeLockBusy(db, online, busyTimeoutMs(env));
        if (busy) {
          return buildReport({
            ...withGw,
            inventory: inv,
            plan: null,
            result: null,
            skipped: `${inv.seahorse.path}: ${busy}; nothing was deleted, the next pass will try again`,
            exitCode: ExitCode.SKIPPED,
            warnings,
            dbFacts: null,
          });
        }
        if (!hasFts5Trigram(db)) {
          return buildReport({
            ...withGw,
            inventory: inv,
            plan: null,
            result: null,
            skipped:
              'this SQLite build has no FTS5 trigram tokenizer, so seahorse rows cannot be deleted safely; nothing was deleted',
            exitCode: ExitCode.DATA,
            warnings,
            dbFacts: null,
          });
        }
        const p = readPages(db);
        // Offline, each session's share of the file is also what decides whether a VACUUM is worth its writes.
        const wantShares = needContent || (values.vacuum && (!online || !!o.forceVacuum));
        const wdb = db;
        dbFacts = {
          present: true,
          fileBytes: inv.seahorse.bytes.total,
          usedBytes: (p.pageCount - p.freelistCount) * p.pageSize,
          contentBytes: wantShares ? withWalkCache(wdb, () => readContentBytes(wdb)) : null,
        };
      } else {
        const r = openSeahorseRead(inv.seahorse.path);
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
    if (o.apply) {
      const why = preflight(inv, db);
      if (why)
        return buildReport({
          ...withGw,
          inventory: inv,
          plan: null,
          result: null,
          skipped: `${why}; nothing was deleted anywhere`,
          exitCode: ExitCode.SKIPPED,
          warnings,
          dbFacts,
        });
    }
    if (values.max_age_days > 0 && now.getTime() < Date.UTC(2024, 0, 1)) {
      warnings.push(
        `the clock reads ${now.toISOString()}, before 2024: the age check is skipped until it is set (NTP)`,
      );
    }
    if (inv.storeErrors.length > 0) for (const e of inv.storeErrors) warnings.push(e.error);

    // Sessions put back by restore are kept until their hold ends.
    // A holds file that cannot be read may hide a hold: when in doubt the data is kept, so an
    // apply deletes nothing until it can be read again (the dry-run warns).
    let holds: Hold[] = [];
    let holdsProblem: string | null = null;
    if (o.stateDir) {
      try {
        holds = activeHolds(o.stateDir, realpathSync(home.home), now.getTime());
      } catch (err) {
        holdsProblem = `the restore holds in ${holdsPath(o.stateDir)} cannot be read (${errorMessage(err)})`;
      }
    }
    if (holdsProblem && o.apply) {
      return buildReport({
        ...withGw,
        inventory: inv,
        plan: null,
        result: null,
        skipped: `${holdsProblem}; nothing was deleted, since a restored session could be among the victims: fix or remove that file`,
        exitCode: ExitCode.SKIPPED,
        warnings,
        dbFacts,
      });
    }
    if (holdsProblem) warnings.push(`${holdsProblem}: --apply would skip the pass`);
    const bootstrap =
      values.max_bootstrap_seconds > 0
        ? await bootstrapInput(
            home,
            o.modelStateDir ?? o.stateDir,
            values.max_bootstrap_seconds,
            now.getTime(),
            o.apply,
            warnings,
          )
        : null;
    // A VACUUM an earlier online pass deferred: counted on by the size check, run at the next offline pass.
    const dbKey = realPathOf(inv.seahorse.path);
    let owedBefore: OwedVacuum | null = null;
    if (o.stateDir && inv.seahorse.state === 'open') owedBefore = readOwedVacuum(o.stateDir, dbKey);
    if (
      owedBefore &&
      online &&
      values.vacuum &&
      !o.forceVacuum &&
      owedBefore.estimated_bytes_after !== null &&
      dbFacts.contentBytes
    ) {
      let content = 0;
      for (const b of dbFacts.contentBytes.values()) content += b;
      dbFacts.owedEstimateBytes = owedBefore.content_bytes
        ? Math.round((owedBefore.estimated_bytes_after * content) / owedBefore.content_bytes)
        : owedBefore.estimated_bytes_after;
    }
    const plan: Plan = planPrune({
      holds,
      bootstrap,
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: home.agents.map((a) => a.id),
      policy: values,
      now: now.getTime(),
      db: dbFacts,
      skipAgeCheck: !!o.skipAgeCheck,
    });
    // The planner's indexes are dead; the report or the deletions come next.
    releaseGarbage();
    if (plan.ageCheck === 'skipped_clock_jump')
      warnings.push(
        `${o.skipAgeCheck}: the age check is skipped this pass (nothing is deleted by age until two passes agree on the time)`,
      );
    if (plan.everyDatedOld) {
      const n = plan.groups.filter((g) => g.reason === 'max_age_days').length;
      warnings.push(
        `every session is older than max_age_days (${values.max_age_days} days) but the newest: is the clock right? ${now.toISOString()} (${n} session(s) ${o.apply ? 'deleted' : 'would be deleted'} by age)`,
      );
    }
    if (plan.undated.displaced > 0) {
      warnings.push(
        `${plan.undated.groups} undated session(s) (no usable timestamp) count toward max_sessions=${values.max_sessions} and are never deleted (PicoClaw's rule): ` +
          `they push out ${plan.undated.displaced} dated session(s) that would otherwise be kept; give them a timestamp or remove them by hand (picoclaw-guard sessions lists them)`,
      );
    }
    // The archive folder is checked once, before anything is deleted: one message, not one per session.
    const archiveProblem = values.archive_dir
      ? archiveDirProblem(values.archive_dir, { apply: o.apply, freeSpace: o.freeSpace ?? statfsFreeSpace, plan })
      : null;
    if (archiveProblem && o.apply) {
      return buildReport({
        ...withGw,
        inventory: inv,
        plan: null,
        result: null,
        skipped: `${archiveProblem}; nothing was deleted anywhere (every deletion needs its archive)`,
        exitCode: ExitCode.SKIPPED,
        warnings,
        dbFacts,
      });
    }
    if (archiveProblem) warnings.push(`${archiveProblem}: --apply would skip the pass`);
    let result: ApplyResult | null = null;
    const budget = memoryBudget(env, o.rss);
    if (o.apply) {
      result = applyPlan({
        vacuumOwed: owedBefore,
        plan,
        db,
        dbPath: inv.seahorse.path,
        online,
        forceVacuum: !!o.forceVacuum,
        freeSpace: o.freeSpace ?? statfsFreeSpace,
        archiveDir: values.archive_dir,
        archiveHome: realpathSync(home.home),
        nowMs: now.getTime(),
        shouldStop: () => budget.over() || !!o.shouldStop?.(),
        onProgress: o.onProgress,
      });
    }
    const refused = (x: { action: string; reason: string }) =>
      x.action === 'keep' &&
      ['changed_since_plan', 'archive_failed', 'not_writable', 'delete_failed', 'interrupted'].includes(x.reason);
    const partial =
      result !== null &&
      [...result.groups.values(), ...result.orphans.values(), ...result.shared.values()].some(refused);
    const report = buildReport({
      ...withGw,
      inventory: inv,
      plan,
      result,
      skipped: null,
      exitCode: partial ? ExitCode.PARTIAL : ExitCode.OK,
      warnings,
      dbFacts,
    });
    if (result && o.stateDir && db && JSON.stringify(result.owed) !== JSON.stringify(owedBefore)) {
      try {
        writeOwedVacuum(o.stateDir, dbKey, result.owed);
      } catch (err) {
        report.warnings.push(
          `could not record the owed VACUUM in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`,
        );
      }
    }
    const overBudget = budget.why();
    if (overBudget) report.warnings.push(overBudget);
    if (result?.size.unmet) report.warnings.push(`seahorse.db stays over max_db_size_mb: ${result.size.unmet}`);
    if (o.apply && o.stateDir) {
      try {
        appendHistory(o.stateDir, {
          at: new Date().toISOString(),
          home: home.home,
          mode: 'apply',
          outcome: partial ? 'partial' : 'ok',
          deleted_sessions: report.totals.deleted_sessions,
          deleted_orphans: report.totals.deleted_orphan_conversations,
          freed_bytes: report.totals.freed_bytes,
          sessions_before: report.totals.sessions,
          sessions_after: report.totals.sessions - report.totals.deleted_sessions,
          duration_ms: report.duration_ms,
          reason: null,
          undated_sessions: plan.undated.groups,
          displaced_by_undated: plan.undated.displaced,
          size_limit_unmet: result?.size.unmet ?? null,
          vacuum_owed_since: result?.owed?.since ?? null,
        });
      } catch (err) {
        report.warnings.push(`could not record the pass in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`);
      }
    }
    return report;
  } finally {
    if (db) db.close();
    if (lock?.ok) lock.lock.release();
  }
}
