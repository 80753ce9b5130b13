import { errnoCode, errorMessage } from '../errors.js';
import { discoverHome } from '../picoclaw/home.js';
import type { PruneReport } from '../prune/report/report.js';
import type { SessionList } from '../prune/report/sessions.js';
import { recordPreStart } from '../startup-model/learn.js';

/**
 * After the pre-start pass (`prune --apply --pre-start`), which runs right before the gateway
 * starts: the volume the gateway is about to bootstrap. Recorded whether or not the pass was
 * enabled (the model learns before anyone relies on it), but not when a gateway is already
 * up: then no start follows. Returns a warning, or null.
 */
export function recordPreStartSample(
  report: PruneReport<SessionList>,
  homeFlag: string | undefined,
  stateDir: string,
): string | null {
  const gw = report.gateway?.state;
  if (gw === 'ready' || gw === 'starting' || gw === 'hung') return null;
  try {
    recordPreStart(discoverHome({ home: homeFlag }), stateDir, Date.now());
    return null;
  } catch (err) {
    return `cannot record the volume before this start in ${stateDir}: ${errnoCode(err) ?? errorMessage(err)}`;
  }
}
