import { loadGuardConfig } from '../guard-config.js';
import type { StartupReport } from '../startup/index.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { policyValues, resolvePolicy } from '../prune/policy.js';
import {
  DEFAULT_TARGET_SECONDS,
  learn,
  measureVolume,
  predictionFor,
  type StartupPrediction,
} from '../startup-model/learn.js';

/**
 * The next restart's predicted gap for `startup` (text and --json): the samples in the
 * state folder paired with this report's restarts, today's volume, and the policy's
 * max_bootstrap_seconds as the target (30 s when it is not set). Reads only.
 */
export async function predictNextStart(
  home: PicoClawHome,
  stateDir: string,
  report: StartupReport,
  env: NodeJS.ProcessEnv,
  configPath?: string,
): Promise<StartupPrediction | { error: string }> {
  try {
    let target = DEFAULT_TARGET_SECONDS;
    try {
      const cfg = loadGuardConfig(configPath, env);
      const p = policyValues(
        resolvePolicy({
          env,
          guardConfig: cfg.path && cfg.sections.prune ? { path: cfg.path, values: cfg.sections.prune } : null,
        }),
      );
      if (p.max_bootstrap_seconds > 0) target = p.max_bootstrap_seconds;
    } catch {
      // A bad guard config is reported by the commands that act on it; here it only sets the target.
    }
    const l = await learn(home, stateDir, { nowMs: Date.now(), write: false, report });
    return predictionFor(l, measureVolume(home), target);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}
