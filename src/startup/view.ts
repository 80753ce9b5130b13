import { processAlive } from '../io/process.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { readPidFile } from '../picoclaw/pidfile.js';
import { markPrunes, type PruneEffect } from './prunes.js';
import { summarize } from './summary.js';
import type { StartupReport } from './types.js';

/**
 * The view the `startup` command and the daemon show: the report of the home's gateway.log,
 * its latest restart settled against the gateway's PID file, and the guard's prune passes
 * placed between the restarts.
 */

/**
 * The log alone cannot tell a running gateway from one that died after its last line.
 * Given whether the gateway is alive now (PID file + process, from the caller), settle the
 * latest restart: a `running` one whose process is gone becomes `crashed`. Mutates the
 * report and recomputes its summary.
 */
export function settleLatest(report: StartupReport, gatewayAlive: boolean): void {
  const latest = report.restarts[report.restarts.length - 1];
  if (!latest || latest.end !== 'running' || gatewayAlive) return;
  latest.end = 'crashed';
  const before = latest.end_detail ? latest.end_detail.replace(/^no closing line yet: /, '') + '; ' : '';
  latest.end_detail = before + 'no closing line, and no gateway runs now (PID file absent or stale)';
  if (latest.bootstrap_gap?.lower_bound) latest.bootstrap_gap.to = 'last line before it died';
  report.summary = summarize(report.restarts);
}

export interface ViewOptions {
  /** The guard's state folder, where the prune history is. */
  stateDir: string;
  /**
   * Whether the report is of this home's own log, so its PID file tells whether the latest
   * restart still runs. Another board's log (or standard input) is read as it is.
   */
  ownLog: boolean;
}

/**
 * Settle the latest restart (for the home's own log) and mark the prune passes of this home
 * from the guard's history. Mutates the report; returns each pass with the gaps around it.
 */
export async function settleAndMarkPrunes(
  report: StartupReport,
  home: PicoClawHome,
  opts: ViewOptions,
): Promise<PruneEffect[]> {
  if (opts.ownLog) {
    const pf = readPidFile(home.pidPath);
    settleLatest(report, pf.state === 'present' && processAlive(pf.info.pid));
  }
  // Loaded only when there is a home to mark: `startup --log FILE` without one never needs it.
  const { readHistory } = await import('../state/history.js');
  return markPrunes(report, readHistory(opts.stateDir, home.home));
}
