import { realpathSync } from 'node:fs';
import { ExitCode, errnoCode, errorMessage, type ExitCodeValue } from '../errors.js';
import type { Clock } from '../io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../io/freespace.js';
import { tryLock } from '../io/lock.js';
import { releaseGarbage } from '../io/heap.js';
import type { Database } from '../io/sqlite.js';
import { loadGuardConfig } from '../guard-config.js';
import { probeGateway, type GatewayState } from '../picoclaw/gateway.js';
import { assertPicoClawHome, discoverHome, type PicoClawHome } from '../picoclaw/home.js';
import { buildInventory, releaseAliases } from '../picoclaw/inventory.js';
import { applyPlan, type ApplyOptions, type ApplyResult } from './apply.js';
import { archiveDirProblem, refuseArchiveInSessions } from './archive-pass.js';
import { activeHolds, holdsPath, type Hold } from '../state/holds.js';
import { appendHistory } from '../state/history.js';
import { recordClockConfirmed } from '../state/clock-confirmed.js';
import { planPrune, type Plan, type PlanInput } from './plan.js';
import { groupSessions } from './plan-groups.js';
import { planWarnings } from './plan-warnings.js';
import { policyValues, resolvePolicy, type PolicyKey, type ResolvedPolicy } from './policy.js';
import { buildReportOf, type PruneReport } from './report.js';
import { lockPathFor } from './pass-lock.js';
import type { SessionEntries, SessionList } from './report-sessions.js';
import { readOwedVacuum, writeOwedVacuum, type OwedVacuum } from '../state/vacuum-owed.js';
import { bootstrapInput } from './bootstrap-input.js';
import { memoryBudget } from './memory-budget.js';
import { preflight, prepareSeahorse } from './pass-seahorse.js';

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
  /** The operator confirmed the clock (--trust-clock): the age step runs even when its signals doubt it. */
  trustClock?: boolean;
  /** Resolved home (the daemon resolves once); overrides `home`. */
  resolvedHome?: PicoClawHome;
  /** The process's resident size in bytes, read between sessions against the memory budget (tests give their own). */
  rss?: () => number;
  /** Where the startup-time model's samples are (max_bootstrap_seconds); default: stateDir. */
  modelStateDir?: string | null;
  /** The caller prints no archive path (the text report): the report's sessions leave them out (see ReportInput). */
  noArchivePaths?: boolean;
  /** The report's sessions are made as they are read (see runPrunePass). */
  streamSessions?: boolean;
  /** In-process callers only (the simulation harness): called before each step of deleting one session. */
  onStep?: ApplyOptions['onStep'];
}

function skipped(
  base: {
    mode: 'dry-run' | 'apply';
    now: Date;
    home: PicoClawHome;
    policy: ResolvedPolicy;
    t0: number;
    gateway: GatewayState | null;
    stream: boolean;
  },
  reason: string,
  exitCode: ExitCodeValue,
): PruneReport<SessionList> {
  return buildReportOf({
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

/** The real path of a file (symlinks resolved), so one database is one record however it is reached. */
function realPathOf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * One prune pass: the inventory, the plan, the deletions when applying, and the report. With
 * `streamSessions` the report's sessions are made as they are read (SessionEntries): for a caller
 * that writes them out or summarizes them, never holding them all.
 */
export async function runPrunePass(o: PassOptions & { streamSessions: true }): Promise<PruneReport<SessionEntries>>;
export async function runPrunePass(o: PassOptions): Promise<PruneReport>;
export async function runPrunePass(o: PassOptions): Promise<PruneReport<SessionList>> {
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
  const base = {
    mode,
    now,
    home,
    policy,
    t0,
    gateway: null as GatewayState | null,
    stream: !!o.streamSessions,
  } as const;
  assertPicoClawHome(home);
  if (values.archive_dir) refuseArchiveInSessions(values.archive_dir, home);
  if (o.ifEnabled && !values.enabled) {
    return skipped(
      base,
      'the policy is not enabled (set prune.enabled to true in the guard config,' +
        ' or PICOCLAW_SESSION_PRUNE_ENABLED=true)',
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
    const sh = prepareSeahorse(inv, { apply: o.apply, online, forceVacuum: !!o.forceVacuum, values, env, warnings });
    db = sh.db;
    const dbFacts = sh.dbFacts;
    if (sh.refusal) {
      return buildReportOf({
        ...withGw,
        inventory: inv,
        plan: null,
        result: null,
        skipped: sh.refusal.skipped,
        exitCode: sh.refusal.exitCode,
        warnings,
        dbFacts: null,
      });
    }
    if (o.apply) {
      const why = preflight(inv, db);
      if (why)
        return buildReportOf({
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
      return buildReportOf({
        ...withGw,
        inventory: inv,
        plan: null,
        result: null,
        skipped:
          `${holdsProblem}; nothing was deleted, since a restored session could be among the victims: ` +
          `fix or remove that file`,
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
    // Aliases serve the seahorse mapping (done) and the alias groups; an archive reads them from the meta it stores.
    const agentIds = home.agents.map((a) => a.id);
    const planInput: PlanInput = {
      // Taken over by the planner, which lets them go once its own groups are made.
      aliasGroups: groupSessions(inv.sessions, agentIds),
      holds,
      bootstrap,
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds,
      policy: values,
      now: now.getTime(),
      db: dbFacts,
      skipAgeCheck: !!o.skipAgeCheck,
      trustClock: !!o.trustClock,
    };
    releaseAliases(inv);
    // Those aliases and the size walk's rows are dead: the plan starts clean.
    releaseGarbage();
    const plan: Plan = planPrune(planInput);
    // The planner's indexes are dead; the report or the deletions come next.
    releaseGarbage();
    warnings.push(...planWarnings(plan, { skipAgeCheck: o.skipAgeCheck, apply: o.apply, now }));
    // The archive folder is checked once, before anything is deleted: one message, not one per session.
    const archiveProblem = values.archive_dir
      ? archiveDirProblem(values.archive_dir, { apply: o.apply, freeSpace: o.freeSpace ?? statfsFreeSpace, plan })
      : null;
    if (archiveProblem && o.apply) {
      return buildReportOf({
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
        onStep: o.onStep,
      });
      // The deletions' garbage is dead: the report is built in the space it leaves, not on top of it.
      releaseGarbage();
    }
    const refused = (x: { action: string; reason: string }) =>
      x.action === 'keep' &&
      ['changed_since_plan', 'archive_failed', 'not_writable', 'delete_failed', 'interrupted'].includes(x.reason);
    // One outcome at a time: a list of them all would hold every deletion's archive path at once (GroupOutcomes
    // makes each again when asked for).
    const partial =
      result !== null &&
      [result.groups.values(), result.orphans.values(), result.shared.values()].some((outcomes) => {
        for (const x of outcomes) if (refused(x)) return true;
        return false;
      });
    const report = buildReportOf({
      ...withGw,
      inventory: inv,
      plan,
      result,
      skipped: null,
      exitCode: partial ? ExitCode.PARTIAL : ExitCode.OK,
      warnings,
      dbFacts,
      consume: true,
      noArchivePaths: o.noArchivePaths,
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
    if (o.apply && o.stateDir && o.trustClock) {
      try {
        recordClockConfirmed(o.stateDir, Date.now());
      } catch (err) {
        report.warnings.push(
          `could not record the confirmed clock in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`,
        );
      }
    }
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
