/**
 * Shapes shared by the health sources. Every source returns its reading or a typed
 * "no data" (a VM without thermal zones, a Duo without cpufreq): missing hardware is
 * not an error (node_exporter's rule).
 *
 * The report is built directly in its public JSON shape (snake_case, the unit in the
 * name: _celsius, _hertz, _bytes, _seconds) so `health --json`, the daemon's /health
 * and the golden files are one and the same object.
 */
export interface NoData {
  available: false;
  /** Why there is nothing: no path, no machine-dependent value (goldens compare it). */
  reason: string;
}

export type Section<T extends object> = ({ available: true } & T) | NoData;

export function noData(reason: string): NoData {
  return { available: false, reason };
}

/** The level a condition maps to; `ok` means "report it but it is not a problem". */
export type Level = 'ok' | 'warn' | 'critical';
export const LEVELS: readonly Level[] = ['ok', 'warn', 'critical'];

export type Status = 'OK' | 'WARN' | 'CRITICAL';

export interface Problem {
  level: Exclude<Level, 'ok'>;
  /** Stable identifier for dashboards and alert rules. */
  code: string;
  message: string;
}
