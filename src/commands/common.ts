import { ExitCode, GuardError } from '../errors.js';
import { assertPicoClawHome, discoverHome, type PicoClawHome } from '../picoclaw/home.js';

/** Find PicoClaw from the command's --home (else $PICOCLAW_HOME, else ~/.picoclaw). */
export function homeFromOpts(opts: Record<string, unknown>, requireExisting = true): PicoClawHome {
  const home = discoverHome({ home: typeof opts.home === 'string' ? opts.home : undefined });
  if (requireExisting) assertPicoClawHome(home);
  return home;
}

/** Parse a whole non-negative number given on the command line. */
export function parseCount(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const s = String(value);
  if (!/^\d+$/.test(s)) {
    throw new GuardError(`${flag} takes a whole number of 0 or more, not "${s}"`, { exitCode: ExitCode.USAGE });
  }
  return Number(s);
}
