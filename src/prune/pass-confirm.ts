import { ExitCode, GuardError } from '../errors.js';
import { placePaths, type PicoClawHome, type Whereabouts } from '../picoclaw/home.js';
import type { Inventory } from '../picoclaw/inventory/inventory.js';
import type { Plan } from './plan/plan.js';
import { planVerdicts, type VerdictCount } from './report/summary.js';

/**
 * What a pass shows before it deletes: the prompt's summary (the same the report starts with) and the
 * refusal of an apply outside an explicit --home.
 */
/** What the prompt before an apply shows: the same summary the report starts with. */
export interface ConfirmInput {
  where: Whereabouts;
  verdicts: VerdictCount[];
  /** Orphan conversations the plan deletes. */
  orphans: number;
  warnings: string[];
  undated: { sessions: number; displaced: number };
  /** Why max_db_size_mb cannot be met by any deletion, or null. */
  limitUnmet: string | null;
  /** seahorse.db (+ WAL) now, and the size check's estimate after the plan and a VACUUM; null: no database. */
  db: DbSummary | null;
}

export interface DbSummary {
  bytes: number;
  /** Estimated size after the plan (and a VACUUM), when the size check ran. */
  estimatedAfter: number | null;
  limitBytes: number;
}

/** The `skipped` of a pass whose prompt was answered no. */
export const NOT_CONFIRMED = 'not confirmed: nothing was deleted';

/** The one line an apply outside an explicit --home is refused with (exit 2). */
export function outsideHomeRefusal(w: Whereabouts): string | null {
  const out = w.paths.filter((p) => !p.inside);
  if (out.length === 0) return null;
  const first = out[0]!;
  return (
    `refused: ${first.kind === 'seahorse.db' ? 'seahorse.db' : 'the sessions folder'} ${first.real}` +
    `${first.kind === 'sessions' ? ` (agent ${first.agents.join(', ')})` : ''} lies outside --home ${w.home_real}` +
    `${out.length > 1 ? ` (and ${out.length - 1} more)` : ''}, as config.json names it; nothing was deleted. ` +
    `Pass --allow-outside-home to prune there anyway`
  );
}

/** The prompt's summary of a plan, or null when the plan deletes nothing (then nothing is asked). */
export function confirmInput(
  plan: Plan,
  where: Whereabouts,
  warnings: string[],
  dbBytes: number | null,
): ConfirmInput | null {
  const verdicts = planVerdicts(plan);
  const orphans = plan.orphans.filter((x) => x.action === 'delete').length;
  if (!verdicts.some((v) => v.action === 'delete') && orphans === 0) return null;
  return {
    where,
    verdicts,
    orphans,
    warnings,
    undated: { sessions: plan.undated.groups, displaced: plan.undated.displaced },
    limitUnmet: plan.size.shortfall?.startsWith('the limit cannot be met') ? plan.size.shortfall : null,
    db:
      dbBytes === null
        ? null
        : {
            bytes: dbBytes,
            estimatedAfter: plan.size.checked ? plan.size.projectedBytesAfter : null,
            limitBytes: plan.size.limitBytes,
          },
  };
}

/**
 * Where the pass works; with `refuse` (an apply of `prune`), a GuardError (exit 2, one line) when a home given by
 * --home (`homeSource` 'flag') has sessions folders or seahorse.db outside it. $PICOCLAW_HOME and the default home
 * (the units, the daemon) are never refused.
 */
export function whereOrRefuse(home: PicoClawHome, refuse: boolean): Whereabouts {
  const where = placePaths(home);
  if (refuse && home.homeSource === 'flag') {
    const why = outsideHomeRefusal(where);
    if (why) throw new GuardError(why, { exitCode: ExitCode.USAGE, path: home.home });
  }
  return where;
}

/** seahorse.db and its WAL as the inventory measured them, or null without an open database. */
export function dbBytesOf(inv: Inventory): number | null {
  return inv.seahorse.state === 'open' ? inv.seahorse.bytes.total : null;
}
