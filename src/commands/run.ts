import { resolve } from 'node:path';
import { runDaemon } from '../daemon/daemon.js';
import type { RunFlags } from '../daemon/settings.js';

/**
 * `picoclaw-guard run`: the sidecar daemon (src/daemon/daemon.ts). Returns 0 after a
 * clean stop (SIGTERM/SIGINT); a bad flag or configuration (including a non-loopback
 * --host without a token) throws a GuardError with exit code 2 before anything starts.
 */
function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const textfileDir = str(opts.textfileDir);
  const flags: RunFlags = {
    home: str(opts.home),
    config: str(opts.config),
    host: str(opts.host),
    port: str(opts.port),
    textfileDir: textfileDir === undefined ? undefined : resolve(textfileDir),
    stateDir: str(opts.stateDir),
    sysRoot: str(opts.sysRoot),
    procRoot: str(opts.procRoot),
    vcgencmd: str(opts.vcgencmd),
    schedule: str(opts.schedule),
  };
  return runDaemon({ flags });
}
