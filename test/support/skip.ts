import type { TestContext } from 'vitest';

/**
 * Skips the running test with its reason printed, not silently: vitest's default
 * reporter hides skipped tests, so the reason also goes to the test's stderr, which it
 * shows. Used by tests that need root (chown to another user, mount, dropping caches).
 */
export function skipWithReason(ctx: TestContext, reason: string): void {
  console.warn(`skipped "${ctx.task.name}": ${reason}`);
  ctx.skip(reason);
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Skips unless running as root, naming what the test needs root for. */
export function requireRoot(ctx: TestContext, forWhat: string): void {
  if (!isRoot()) skipWithReason(ctx, `needs root to ${forWhat} (running as uid ${process.getuid?.() ?? '?'})`);
}
