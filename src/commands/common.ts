import { existsSync } from 'node:fs';
import { ExitCode, GuardError } from '../errors.js';
import { discoverHome, type PicoClawHome } from '../picoclaw/home.js';

/** Find PicoClaw from the command's --home (else $PICOCLAW_HOME, else ~/.picoclaw). */
export function homeFromOpts(opts: Record<string, unknown>, requireExisting = true): PicoClawHome {
  const home = discoverHome({ home: typeof opts.home === 'string' ? opts.home : undefined });
  if (requireExisting && !existsSync(home.home)) {
    const how = home.homeSource === 'flag' ? '--home' : home.homeSource === 'env' ? '$PICOCLAW_HOME' : 'the default ~/.picoclaw';
    throw new GuardError(`no PicoClaw home at ${home.home} (from ${how})`, {
      exitCode: ExitCode.USAGE,
      path: home.home,
      hint: 'pass --home <dir> or set PICOCLAW_HOME to the folder that holds config.json and workspace/',
    });
  }
  return home;
}
