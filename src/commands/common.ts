import { assertPicoClawHome, discoverHome, type PicoClawHome } from '../picoclaw/home.js';

/** Find PicoClaw from the command's --home (else $PICOCLAW_HOME, else ~/.picoclaw). */
export function homeFromOpts(opts: Record<string, unknown>, requireExisting = true): PicoClawHome {
  const home = discoverHome({ home: typeof opts.home === 'string' ? opts.home : undefined });
  if (requireExisting) assertPicoClawHome(home);
  return home;
}
