import type { PicoClawHome } from '../picoclaw/home.js';
import { trustFor } from '../startup-model/fit.js';
import { bootstrapDir, learn } from '../startup-model/learn.js';
import type { BootstrapInput } from './plan/bootstrap-cap.js';

/**
 * The planner's input for max_bootstrap_seconds: the model learnt from the samples in the
 * state folder and gateway.log. A pass that applies also writes back newly paired gaps; a
 * dry-run writes nothing. Without a state folder there are no samples: nothing is deleted
 * for this key, and the plan says so.
 */
export async function bootstrapInput(
  home: PicoClawHome,
  stateDir: string | null,
  budgetSeconds: number,
  nowMs: number,
  write: boolean,
  warnings: string[],
): Promise<BootstrapInput> {
  if (!stateDir) {
    const fit = { model: null, why: "no state folder to keep the restarts' samples in" } as const;
    return { budgetSeconds, dir: bootstrapDir(home), model: null, trust: trustFor(fit, 0, budgetSeconds) };
  }
  const l = await learn(home, stateDir, { nowMs, write });
  warnings.push(...l.warnings);
  return {
    budgetSeconds,
    dir: bootstrapDir(home),
    model: l.fit.model,
    trust: trustFor(l.fit, l.measured, budgetSeconds),
  };
}
