import { ExitCode, GuardError } from '../../errors.js';
import type { Plan, PlanGroup, Reason } from './plan.js';
import { resolveSessionKey } from '../../picoclaw/session-key.js';

/**
 * `picoclaw-guard delete KEY`: the plan of a pass narrowed to one alias group, for the one deleter
 * (src/prune/apply/apply.ts) to execute with its usual re-checks, archive and lock. Pure: it changes the
 * plan's verdicts and nothing else. The group asked for is deleted whole (reason `requested`); every
 * other group and orphan is kept (`not_selected`), the size rule is off (nothing else may go to meet
 * it), and a conversation the group shares with a kept session stays, as in any pass.
 */
export interface Selection {
  /** KEY as typed: full, a unique prefix, or the shortened form. */
  typed: string;
  agent?: string;
  /**
   * The members the operator confirmed (agent and file base, from the dry-run shown at the prompt):
   * if the group is not exactly these any more, nothing is deleted.
   */
  expectMembers?: { agent: string; file: string }[];
  /** Set by the pass: the members of the group selected (agent and file base), for the caller's report. */
  selected?: { agent: string; file: string }[];
}

/** Reasons the guard never lets an operator override here: the session cannot be handled safely, or is pinned. */
const REFUSED: Partial<Record<Reason, (g: PlanGroup, names: string) => string>> = {
  unreadable_meta: (_g, names) =>
    `${names}: a meta file cannot be read, and the guard never deletes what it cannot read`,
  not_regular_file: (_g, names) => `${names}: a .jsonl is a symlink or not a regular file: never touched`,
  pinned: (g, names) =>
    `${names}: ${g.pin ? `${g.pin.key} is pinned` : 'pinned'}; unpin it first (picoclaw-guard unpin ${g.pin?.key ?? 'KEY'})`,
};

/** The group a selection names in this plan (exit 2 when none or several). */
export function selectedGroup(plan: Plan, sel: Selection, where: string): PlanGroup {
  const candidates: { agent: string; key: string; group: PlanGroup }[] = [];
  for (const g of plan.groups)
    for (const m of g.members) if (m.key !== null) candidates.push({ agent: m.agent, key: m.key, group: g });
  return resolveSessionKey(sel.typed, candidates, {
    agent: sel.agent,
    where,
    listHint: 'picoclaw-guard sessions lists the keys',
  }).group;
}

/** How a refusal or a report names a group: its members, agent and key. */
export function groupNames(g: PlanGroup): string {
  const ms = g.members;
  const one = (m: PlanGroup['members'][number]) => `${m.agent} ${m.key ?? m.base}`;
  return ms.length === 1 ? one(ms[0]!) : `the alias group of ${ms.length} sessions (${ms.map(one).join(', ')})`;
}

/** Narrow `plan` (in place) to the selected group; returns it. Throws a GuardError naming the group when refused. */
export function selectForDelete(plan: Plan, sel: Selection, where: string): PlanGroup {
  const target = selectedGroup(plan, sel, where);
  const refuse = REFUSED[target.reason];
  if (refuse)
    throw new GuardError(`not deleted: ${refuse(target, groupNames(target))}`, {
      exitCode: target.reason === 'pinned' ? ExitCode.USAGE : ExitCode.DATA,
      hint: target.reason === 'pinned' ? 'unpin it, then delete it' : 'picoclaw-guard show KEY says what is wrong',
    });
  if (sel.expectMembers) {
    const now = target.members.map((m) => `${m.agent}\0${m.base}`).sort();
    const was = sel.expectMembers.map((m) => `${m.agent}\0${m.file}`).sort();
    if (now.length !== was.length || now.some((id, i) => id !== was[i]))
      throw new GuardError(
        `not deleted: ${groupNames(target)} is not the group that was confirmed (it changed meanwhile)`,
        { exitCode: ExitCode.PARTIAL, hint: 'run the command again to see the group as it is now' },
      );
  }
  sel.selected = target.members.map((m) => ({ agent: m.agent, file: m.base }));
  for (const g of plan.groups) {
    g.sizeEligible = false;
    if (g === target) {
      g.action = 'delete';
      g.reason = 'requested';
      g.detail = undefined;
    } else if (g.action === 'delete') {
      g.action = 'keep';
      g.reason = 'not_selected';
      g.detail = undefined;
    }
  }
  for (const o of plan.orphans)
    if (o.action === 'delete') {
      o.action = 'keep';
      o.reason = 'not_selected';
    }
  // What the policy's plan would have warned of is not this deletion's business.
  plan.everyDatedOld = false;
  plan.undated.displaced = 0;
  plan.pinned.displaced = 0;
  plan.size.checked = false;
  plan.size.shortfall = null;
  plan.bootstrap = null;
  return target;
}
