import { errnoCode, errorMessage } from '../errors.js';
import { discoverHome } from '../picoclaw/home.js';
import { recordPreStart } from '../startup-model/volume.js';

/**
 * After the pre-start pass (`prune --apply --pre-start`), which runs right before the gateway
 * starts: the volume the gateway is about to bootstrap. Recorded whether or not the pass was
 * enabled (the model learns before anyone relies on it), but not when a gateway is already
 * up (`gateway`: its state, as the pass saw it): then no start follows. Returns a warning, or null.
 */
export function recordPreStartSample(
  gateway: string | undefined,
  homeFlag: string | undefined,
  stateDir: string,
): string | null {
  if (gateway === 'ready' || gateway === 'starting' || gateway === 'hung') return null;
  try {
    recordPreStart(discoverHome({ home: homeFlag }), stateDir, Date.now());
    return null;
  } catch (err) {
    return `cannot record the volume before this start in ${stateDir}: ${errnoCode(err) ?? errorMessage(err)}`;
  }
}
