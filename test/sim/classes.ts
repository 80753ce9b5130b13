import type { Fault, Shape, Share } from './scenario.js';

/**
 * The simulation's classes: one shape each (a fault, a way of sharing a folder, a kind of file, an
 * event forced into every scenario), so that each class's failure is certain, not left to chance.
 * `general` lets the generator choose everything.
 *
 * KNOWN_FAILING: the classes whose mechanism another change fixes (named in each entry). Their
 * properties stay in the suite as expected failures (vitest `it.fails`), so `npm test` is green
 * until the fix merges; the fix's author removes the class's line here (one line per class).
 */
export interface SimClass {
  name: string;
  shape: Omit<Shape, 'root'>;
  /** Needs root (mount, mknod): skipped with this reason otherwise. */
  root?: string;
}

export const CLASSES: SimClass[] = [
  { name: 'general', shape: {} },
  { name: 'fifo-jsonl', shape: { jsonl: 'fifo', tightCap: true } },
  { name: 'device-jsonl', shape: { jsonl: 'device', tightCap: true }, root: 'mknod needs root' },
  { name: 'wrong-type-meta', shape: { meta: 'wrong_type', tightCap: true } },
  { name: 'symlinked-workspace', shape: { share: 'symlink' } },
  { name: 'bind-mounted-folder', shape: { share: 'bind', tightCap: true }, root: 'a bind mount needs root' },
  { name: 'count-what-picoclaw-lists', shape: { tightCap: true } },
  { name: 'alias-added-mid-pass', shape: { event: 'alias' } },
  { name: 'append-mid-pass', shape: { event: 'append' } },
  { name: 'compaction-mid-pass', shape: { event: 'compact' } },
  { name: 'clock-ahead', shape: { fault: 'clock_ahead' } },
  { name: 'lock-held', shape: { fault: 'lock_held' } },
  { name: 'corrupt-page', shape: { fault: 'corrupt_page' } },
  { name: 'enospc-archive', shape: { fault: 'enospc_archive' }, root: 'a small tmpfs needs root' },
  { name: 'enospc-state', shape: { fault: 'enospc_state' }, root: 'a small tmpfs needs root' },
];

/** Class -> who fixes it. Remove a line when that fix merges. */
export const KNOWN_FAILING: Record<string, string> = {};

/** What the random pool of every class leaves out: the faults and shares of the classes known to fail. */
export function avoided(): { faults: Fault[]; shares: Share[] } {
  const faults: Fault[] = [];
  const shares: Share[] = [];
  for (const c of CLASSES) {
    if (!KNOWN_FAILING[c.name]) continue;
    if (c.shape.fault) faults.push(c.shape.fault);
    if (c.shape.share) shares.push(c.shape.share);
  }
  return { faults, shares };
}
