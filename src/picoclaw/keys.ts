import { createHash } from 'node:crypto';

/* PicoClaw's session keys as text: pure, so that the planner may read them. */

/** sk_v1_ + sha256(text): PicoClaw's opaque key of a legacy key (pkg/session/key.go). */
export function opaqueKey(legacy: string): string {
  return 'sk_v1_' + createHash('sha256').update(legacy.toLowerCase()).digest('hex');
}

const MAIN_ALIAS = /^agent:[a-z0-9_-]+:main$/;
const mainOpaque = new Map<string, boolean>();

/**
 * Whether an alias is the shared main-session alias (`agent:<id>:main` or its
 * `sk_v1_` form). Many sessions list it; it never joins sessions into one group.
 */
export function isMainAlias(alias: string, agentIds: readonly string[]): boolean {
  if (MAIN_ALIAS.test(alias)) return true;
  if (!alias.startsWith('sk_v1_')) return false;
  let hit = mainOpaque.get(alias);
  if (hit === undefined) {
    hit = agentIds.some((id) => opaqueKey(`agent:${id}:main`) === alias);
    mainOpaque.set(alias, hit);
  }
  return hit;
}
