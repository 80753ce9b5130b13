import { realpathSync } from 'node:fs';
import { systemClock } from '../io/clock.js';
import { resolveStateDir } from '../io/statedir.js';
import { answerQuiet, quietCheck } from '../prune/pass-quiet.js';

/**
 * `prune --apply --pre-start` answered from the last quiet pass's record (src/prune/pass-quiet.ts says
 * when and why that is safe): its exit code, or null for the full path. Loaded before the heavy modules.
 */
export async function quietPreStart(opts: Record<string, unknown>): Promise<number | null> {
  const t0 = performance.now();
  const stateDir = resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined);
  const now = systemClock();
  const a = quietCheck(opts, process.env, stateDir, now.getTime(), (h) => realpathSync(h.home));
  if (!a) return null;
  // The startup-time model's sample, as every pre-start pass with the gateway down records it.
  const { recordPreStartSample } = await import('./pre-start-sample.js');
  const w = recordPreStartSample('down', typeof opts.home === 'string' ? opts.home : undefined, stateDir);
  if (w) a.record = { ...a.record, warnings: [...a.record.warnings, w] };
  return answerQuiet(
    a,
    stateDir,
    now,
    () => performance.now() - t0,
    (s) => process.stdout.write(s),
  );
}
