import { statfsFreeSpace, type FreeSpaceReader } from '../io/freespace.js';

/**
 * `health` on a disk that is not full, shown as it would be on one that is: for an operator trying thresholds
 * and for the health command's own tests. PICOGUARD_FAKE_FREE_BYTES="<path-prefix>=<bytes>[,<prefix>=<bytes>]"
 * overrides the available bytes of any path under that prefix.
 *
 * Only src/commands/health.ts imports this, and health deletes nothing. No deleting path (prune --apply, the
 * daemon and its pass child, delete, restore, logs cut) may reach it: they would skip the free-space checks
 * before an archive or a VACUUM on a disk that has no room (test/repo/layers.test.ts walks the imports).
 */
export function rehearsedFreeSpace(env: NodeJS.ProcessEnv = process.env): FreeSpaceReader {
  const spec = env.PICOGUARD_FAKE_FREE_BYTES;
  if (!spec) return statfsFreeSpace;
  const rules = spec.split(',').map((part) => {
    const eq = part.lastIndexOf('=');
    return { prefix: part.slice(0, eq), bytes: Number(part.slice(eq + 1)) };
  });
  return (path) => {
    const real = statfsFreeSpace(path);
    const rule = rules.find((r) => path.startsWith(r.prefix));
    return rule && Number.isFinite(rule.bytes) ? { ...real, availableBytes: rule.bytes } : real;
  };
}
