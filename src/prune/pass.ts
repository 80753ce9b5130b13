import { realpathSync } from 'node:fs';
import { ExitCode, errnoCode, errorMessage, type ExitCodeValue } from '../errors.js';
import type { Clock } from '../io/clock.js';
import { statfsFreeSpace, type FreeSpaceReader } from '../io/freespace.js';
import { tryLock } from '../io/lock.js';
import { releaseGarbage } from '../io/heap.js';
import type { Database } from '../io/sqlite.js';
import { loadGuardConfig } from '../guard-config.js';
import { probeGateway, type GatewayState } from '../picoclaw/gateway.js';
import { assertPicoClawHome, discoverHome, type PicoClawHome, type Whereabouts } from '../picoclaw/home.js';
import { USABLE_SINCE_MS } from '../picoclaw/time.js';
import { buildInventory, releaseAliases } from '../picoclaw/inventory/inventory.js';
// The deleter, the archiver and the startup-time model are imported when a pass needs them: a dry-run, and the
// pre-start pass with nothing to do (one before every gateway start), load none of their modules.
import type { ApplyOptions, ApplyResult } from './apply/apply.js';
import type { BootstrapInput } from './plan/bootstrap-cap.js';
import { activeHolds, holdsPath, type Hold } from '../state/holds.js';
import { homePins, keptByPinSince, pinsPath, type Pin } from '../state/pins.js';
import { appendHistory } from '../state/history.js';
import { recordClockConfirmed } from '../state/clock-confirmed.js';
import { planPrune, type Plan, type PlanInput } from './plan/plan.js';
import { groupSessions } from './plan/groups.js';
import { planWarnings } from './plan/warnings.js';
import { selectForDelete, type Selection } from './plan/select.js';
import { policyValues, resolvePolicy, type PolicyKey, type ResolvedPolicy } from './policy.js';
import { buildReportOf, type PruneReport } from './report/report.js';
import { confirmInput, dbBytesOf, NOT_CONFIRMED, whereOrRefuse, type ConfirmInput } from './pass-confirm.js';

export { NOT_CONFIRMED, outsideHomeRefusal, type ConfirmInput, type DbSummary } from './pass-confirm.js';
import { lockPathFor } from '../state/pass-lock.js';
import type { SessionEntries, SessionList } from './report/sessions.js';
import { readOwedVacuum, writeOwedVacuum, type OwedVacuum } from '../state/vacuum-owed.js';
import { readSizeEstimate, scaledEstimate, writeSizeEstimate, type SizeEstimate } from '../state/size-estimate.js';
import { memoryBudget } from './memory-budget.js';
import { preflight, prepareSeahorse, quickCheck } from './pass-seahorse.js';
import { journalPath } from '../state/deletion-journal.js';
import {
  damagedRefusal,
  dbKeyOf,
  diskFaultError,
  noteStateFault,
  planDeletes,
  recoverInterrupted,
} from './pass-safety.js';

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
  /** Why `shouldStop` stopped the pass, for the history line ("interrupted by SIGINT"), or null. */
  stopReason?: () => string | null;
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
  /** `delete KEY`: the plan narrowed to this one alias group (src/prune/plan/select.ts). */
  only?: Selection;
  /** Refuse an apply whose folders lie outside a --home (`prune`, unless --allow-outside-home): ./pass-confirm.ts. */
  refuseOutsideHome?: boolean;
  /** The prompt before deleting (interactive `prune --apply`): false skips the pass. ./pass-confirm.ts. */
  confirm?: (c: ConfirmInput) => Promise<boolean>;
  /** Test hook (a function, never an environment variable): called between the steps of deleting one session. */
  onStep?: ApplyOptions['onStep'];
  /** Test hook: the same for a conversation deleted on its own (an orphan, or shared). */
  onConversationStep?: ApplyOptions['onConversationStep'];
  /** A dry-run with the gateway down writes nothing beside seahorse.db either (./pass-noop.ts). */
  quietRead?: boolean;
  /** Called with the plan once it is made, and what else decides whether an apply has work (./pass-noop.ts). */
  onPlanned?: (p: {
    plan: Plan;
    owed: OwedVacuum | null;
    seahorse: 'absent' | 'open' | 'error';
    home: PicoClawHome;
  }) => void;
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
    where: Whereabouts | null;
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
  const mode: 'apply' | 'dry-run' = o.apply ? 'apply' : 'dry-run';
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
    where: null as Whereabouts | null,
  };
  assertPicoClawHome(home);
  const where = (base.where = whereOrRefuse(home, o.apply && !!o.refuseOutsideHome));
  const archiving = values.archive_dir ? await import('./apply/archive-step.js') : null;
  if (archiving && values.archive_dir) archiving.refuseArchiveInSessions(values.archive_dir, home);
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
  const quiet = !o.apply && !!o.quietRead && gateway.state === 'down';

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
    const early = await recoverInterrupted(o, home, online, env);
    if (early.refusal) return skipped(withGw, early.refusal.message, early.refusal.exitCode);
    const inv = buildInventory(home, { quietSeahorse: quiet });
    const warnings: string[] = [...early.notes];
    // seahorse: read-only for the plan; read-write (and checked) for apply.
    const sh = prepareSeahorse(inv, {
      apply: o.apply,
      online,
      forceVacuum: !!o.forceVacuum,
      values,
      env,
      warnings,
      quiet,
    });
    db = sh.db;
    const dbFacts = sh.dbFacts;
    // The pass refused before deleting anything: the report of the inventory, no plan.
    const refuse = (skipped: string, exitCode: ExitCodeValue) =>
      buildReportOf({ ...withGw, inventory: inv, plan: null, result: null, skipped, exitCode, warnings, dbFacts });
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
      if (why) return refuse(`${why}; nothing was deleted anywhere`, ExitCode.SKIPPED);
    }
    if (values.max_age_days > 0 && now.getTime() < USABLE_SINCE_MS) {
      warnings.push(
        `the clock reads ${now.toISOString()}, before 2024: the age check is skipped until it is set (NTP)`,
      );
    }
    if (inv.storeErrors.length > 0) for (const e of inv.storeErrors) warnings.push(e.error);

    // Sessions put back by restore are kept until their hold ends.
    // A holds file that cannot be read may hide a hold: when in doubt the data is kept, so an
    // apply deletes nothing until it can be read again (the dry-run warns).
    // Pins likewise: a pins file that cannot be read may hide a pin.
    let holds: Hold[] = [];
    let pins: Pin[] = [];
    let holdsProblem: string | null = null;
    if (o.stateDir) {
      try {
        holds = activeHolds(o.stateDir, realpathSync(home.home), now.getTime());
      } catch (err) {
        holdsProblem = `the restore holds in ${holdsPath(o.stateDir)} cannot be read (${errorMessage(err)})`;
      }
      try {
        pins = homePins(o.stateDir, realpathSync(home.home));
      } catch (err) {
        holdsProblem ??= `the pins in ${pinsPath(o.stateDir)} cannot be read (${errorMessage(err)})`;
      }
    }
    if (holdsProblem && o.apply) {
      return refuse(
        `${holdsProblem}; nothing was deleted, since a restored or pinned session could be among the victims: ` +
          `fix or remove that file`,
        ExitCode.SKIPPED,
      );
    }
    if (holdsProblem) warnings.push(`${holdsProblem}: --apply would skip the pass`);
    let bootstrap: BootstrapInput | null = null;
    if (values.max_bootstrap_seconds > 0) {
      const { bootstrapInput } = await import('./bootstrap-input.js');
      bootstrap = await bootstrapInput(
        home,
        o.modelStateDir ?? o.stateDir,
        values.max_bootstrap_seconds,
        now.getTime(),
        o.apply,
        warnings,
      );
    }
    // A VACUUM an earlier online pass deferred: counted on by the size check, run at the next offline pass.
    const { key: dbKey, legacy: dbLegacyKey } = dbKeyOf(inv.seahorse.path);
    let owedBefore: OwedVacuum | null = null;
    let estimateBefore: SizeEstimate | null = null;
    if (o.stateDir && inv.seahorse.state === 'open') {
      owedBefore = readOwedVacuum(o.stateDir, dbKey) ?? readOwedVacuum(o.stateDir, dbLegacyKey);
      estimateBefore = readSizeEstimate(o.stateDir, dbKey);
    }
    // While the file cannot shrink to its true size this pass (VACUUM deferred online, or off), the plan
    // counts the size from the estimate an earlier pass left (src/state/size-estimate.ts), as the apply does.
    const noShrinkNow = !values.vacuum || (online && !o.forceVacuum);
    const kept =
      estimateBefore ??
      (owedBefore && owedBefore.estimated_bytes_after !== null
        ? { estimated_bytes_after: owedBefore.estimated_bytes_after, content_bytes: owedBefore.content_bytes ?? 0 }
        : null);
    if (kept && noShrinkNow && dbFacts.contentBytes) {
      let content = 0;
      for (const b of dbFacts.contentBytes.values()) content += b;
      dbFacts.owedEstimateBytes = Math.min(dbFacts.usedBytes, scaledEstimate(kept, content));
    }
    // Aliases serve the seahorse mapping (done) and the alias groups; an archive reads them from the meta it stores.
    const agentIds = home.agents.map((a) => a.id);
    const planInput: PlanInput = {
      // Taken over by the planner, which lets them go once its own groups are made.
      aliasGroups: groupSessions(inv.sessions, agentIds),
      holds,
      pins,
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
    // Before anything else reads the plan: the one group asked for, or a refusal naming it.
    if (o.only) selectForDelete(plan, o.only, home.home);
    o.onPlanned?.({ plan, owed: owedBefore, seahorse: inv.seahorse.state, home });
    // The planner's indexes are dead; the report or the deletions come next.
    releaseGarbage();
    warnings.push(...planWarnings(plan, { skipAgeCheck: o.skipAgeCheck, apply: o.apply, now }));
    // The archive folder is checked once, before anything is deleted: one message, not one per session.
    const archiveProblem =
      archiving && values.archive_dir
        ? archiving.archiveDirProblem(values.archive_dir, {
            apply: o.apply,
            freeSpace: o.freeSpace ?? statfsFreeSpace,
            plan,
          })
        : null;
    if (archiveProblem && o.apply)
      return refuse(
        `${archiveProblem}; nothing was deleted anywhere (every deletion needs its archive)`,
        ExitCode.SKIPPED,
      );
    if (archiveProblem) warnings.push(`${archiveProblem}: --apply would skip the pass`);
    // SQLite's quick_check just before the first deletion, when there is one: damaged, nothing is deleted (exit 3).
    const damaged = o.apply && db && planDeletes(plan) ? quickCheck(db) : null;
    if (damaged) return refuse(damagedRefusal(inv.seahorse.path, damaged), ExitCode.DATA);
    let result: ApplyResult | null = null;
    const budget = memoryBudget(env, o.rss);
    const ask = o.apply && o.confirm ? confirmInput(plan, where, warnings, dbBytesOf(inv)) : null;
    // Answered no: the report of a skipped pass (the prompt showed the plan).
    if (ask && !(await o.confirm!(ask))) return skipped(withGw, NOT_CONFIRMED, ExitCode.OK);
    if (o.apply) {
      const { applyPlan } = await import('./apply/apply.js');
      result = applyPlan({
        vacuumOwed: owedBefore,
        sizeEstimate: estimateBefore,
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
        keepNow: o.stateDir ? keptByPinSince(o.stateDir, realpathSync(home.home), pins) : undefined,
        journal: o.stateDir ? journalPath(o.stateDir, realpathSync(home.home)) : null,
        onStep: o.onStep,
        onConversationStep: o.onConversationStep,
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
      exitCode: result?.fault ? result.fault.exitCode : partial ? ExitCode.PARTIAL : ExitCode.OK,
      warnings: result?.fault
        ? [...warnings, `the pass stopped: ${result.fault.why}; what is left is kept for the next pass`]
        : warnings,
      dbFacts,
      consume: true,
      noArchivePaths: o.noArchivePaths,
    });
    if (result && o.stateDir && db && JSON.stringify(result.owed) !== JSON.stringify(owedBefore)) {
      try {
        writeOwedVacuum(o.stateDir, dbKey, result.owed, dbLegacyKey);
      } catch (err) {
        report.warnings.push(
          `could not record the owed VACUUM in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`,
        );
        noteStateFault(report, err);
      }
    }
    if (result && o.stateDir && db && JSON.stringify(result.sizeEstimate) !== JSON.stringify(estimateBefore)) {
      try {
        writeSizeEstimate(o.stateDir, dbKey, result.sizeEstimate);
      } catch (err) {
        report.warnings.push(
          `could not record the size estimate in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`,
        );
        noteStateFault(report, err);
      }
    }
    const overBudget = budget.why();
    if (overBudget) report.warnings.push(overBudget);
    if (result?.size.unmet) report.warnings.push(`seahorse.db stays over max_db_size_mb: ${result.size.unmet}`);
    if (o.apply && o.stateDir && o.trustClock) {
      try {
        recordClockConfirmed(o.stateDir, o.clock().getTime());
      } catch (err) {
        report.warnings.push(
          `could not record the confirmed clock in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`,
        );
      }
    }
    if (o.apply && o.stateDir) {
      try {
        appendHistory(o.stateDir, {
          at: o.clock().toISOString(),
          home: home.home,
          mode: 'apply',
          outcome: partial ? 'partial' : 'ok',
          deleted_sessions: report.totals.deleted_sessions,
          deleted_orphans: report.totals.deleted_orphan_conversations,
          freed_bytes: report.totals.freed_bytes,
          sessions_before: report.totals.sessions,
          sessions_after: report.totals.sessions - report.totals.deleted_sessions,
          duration_ms: report.duration_ms,
          reason: o.stopReason?.() ?? null,
          undated_sessions: plan.undated.groups,
          displaced_by_undated: plan.undated.displaced,
          size_limit_unmet: result?.size.unmet ?? null,
          vacuum_owed_since: result?.owed?.since ?? null,
        });
      } catch (err) {
        report.warnings.push(`could not record the pass in ${o.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`);
        noteStateFault(report, err);
      }
    }
    return report;
  } catch (err) {
    // A full or damaged disk met outside the deletions: one line and its exit code, never a stack.
    throw diskFaultError(err, home);
  } finally {
    if (db) db.close();
    if (lock?.ok) lock.lock.release();
  }
}
