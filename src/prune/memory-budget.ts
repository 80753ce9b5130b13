import { readFileSync } from 'node:fs';
import { formatBytes, WHOLE_MIB } from '../io/bytes.js';

/**
 * The memory a pass may use before it stops between two sessions. The daemon's unit caps
 * the daemon and its pass child together (MemoryMax=256M, MemoryHigh=192M); a pass the
 * kernel kills mid-transaction is what this avoids: over the budget, the pass keeps the
 * remaining sessions for the next pass and says why. PICOGUARD_PASS_MEMORY_MB sets the
 * budget in MiB (unset or 0: none). The daemon gives its pass child DEFAULT_PASS_MEMORY_MB
 * unless the variable is set, and the pre-start unit sets it; a pass run by hand (or in
 * another program's process, such as a test runner's) has none unless asked.
 */
export const DEFAULT_PASS_MEMORY_MB = 160;

export interface MemoryBudget {
  limitBytes: number | null;
  /** The resident size that passed the budget (bytes), or null while within it. */
  exceededAt: number | null;
  /** True once the process is over its budget (and from then on). */
  over(): boolean;
  /** A sentence for the report, or null while within the budget. */
  why(): string | null;
}

/**
 * The resident size in bytes. process.memoryUsage.rss() reads /proc/self/stat, whose RSS field
 * some environments leave at 0 (qemu-user emulates that file with most fields zero); a budget
 * that reads 0 would never trip, so VmRSS from /proc/self/status is read instead when it does.
 */
export function residentBytes(
  fromStat: () => number = () => process.memoryUsage.rss(),
  status: () => string = () => readFileSync('/proc/self/status', 'utf8'),
): number {
  const r = fromStat();
  if (r > 0) return r;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status());
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function memoryBudget(env: NodeJS.ProcessEnv, rss: () => number = () => residentBytes()): MemoryBudget {
  const raw = env.PICOGUARD_PASS_MEMORY_MB;
  const n = raw === undefined || raw.trim() === '' ? 0 : Number(raw);
  // A value that is not a number of MiB falls back to the default rather than to no limit.
  const mb = Number.isFinite(n) && n >= 0 ? n : DEFAULT_PASS_MEMORY_MB;
  const limitBytes = mb > 0 ? mb * 1024 * 1024 : null;
  const b: MemoryBudget = {
    limitBytes,
    exceededAt: null,
    over() {
      if (b.exceededAt !== null) return true;
      if (limitBytes === null) return false;
      const r = rss();
      if (r > limitBytes) b.exceededAt = r;
      return b.exceededAt !== null;
    },
    why() {
      if (b.exceededAt === null || limitBytes === null) return null;
      const used = formatBytes(b.exceededAt, WHOLE_MIB);
      const budget = formatBytes(limitBytes, WHOLE_MIB);
      return (
        `the pass stopped between two sessions: its memory (${used} resident) passed its budget of ` +
        `${budget} (PICOGUARD_PASS_MEMORY_MB); the sessions not reached are kept for the ` +
        `next pass`
      );
    },
  };
  return b;
}
