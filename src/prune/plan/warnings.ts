import type { Plan } from './plan.js';

/** What a plan gives the operator to check before it acts: a skipped age check, a suspect clock, undated sessions. */
export function planWarnings(plan: Plan, o: { skipAgeCheck?: string | false; apply: boolean; now: Date }): string[] {
  const warnings: string[] = [];
  const values = plan.policy;
  if (plan.ageCheck === 'skipped_clock_jump')
    warnings.push(
      `${o.skipAgeCheck}: the age check is skipped this pass (nothing is deleted by age until ` +
        `two passes agree on the time)`,
    );
  if (plan.ageCheck === 'refused_clock')
    warnings.push(
      `the clock cannot be trusted (${plan.clockDoubts.join('; ')}): the age check refused to delete anything ` +
        `by age; if the clock (${o.now.toISOString()}) is right, run \`picoclaw-guard prune --apply --trust-clock\` once`,
    );
  if (plan.everyDatedOld) {
    const n = plan.groups.filter((g) => g.reason === 'max_age_days').length;
    warnings.push(
      `every session is older than max_age_days (${values.max_age_days} days) but the newest: is the clock right? ` +
        `${o.now.toISOString()} (${n} session(s) ${o.apply ? 'deleted' : 'would be deleted'}` +
        ` by age)`,
    );
  }
  if (plan.undated.displaced > 0) {
    warnings.push(
      `${plan.undated.groups} undated session(s) (no usable timestamp) count toward max_sessions=${values.max_sessions}` +
        ` and are never deleted (PicoClaw's rule): ` +
        (`they push out ${plan.undated.displaced} dated session(s) that would otherwise be kept; give them a timestamp ` +
          `or remove them by hand (picoclaw-guard sessions lists them)`),
    );
  }
  if (plan.pinned.displaced > 0) {
    warnings.push(
      `${plan.pinned.groups} pinned session(s) count toward max_sessions=${values.max_sessions} and are never ` +
        `deleted: they push out ${plan.pinned.displaced} other session(s) that would otherwise be kept ` +
        `(picoclaw-guard sessions lists the pins; unpin KEY ends one)`,
    );
  }
  return warnings;
}
