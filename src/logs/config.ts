import { field, readSection, sectionNaming, type Field } from '../config/section.js';

/**
 * The guard config's `logs` section (docs/logs.md): how large PicoClaw's gateway.log and
 * gateway_panic.log may grow before the guard cuts their oldest lines off, and how many
 * compressed parts of what it cut it keeps beside each.
 */
export interface LogsConfig {
  /** Cut a log larger than this many MiB, down to about half of it; 0: never cut. */
  max_size_mb: number;
  /** Compressed parts kept per log (`gateway.log.<n>.gz`); the oldest beyond are deleted. */
  keep_parts: number;
}

/**
 * 10 MiB: at PicoClaw's info level a busy gateway writes a few MB a day, so a cut about every
 * few days, each part ~0.5-1 MB compressed; at most ~10 MiB + 5 parts on the card per log.
 */
export const DEFAULT_LOGS: Readonly<LogsConfig> = Object.freeze({ max_size_mb: 10, keep_parts: 5 });

const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

const LOGS_FIELDS: { [K in keyof LogsConfig]: Field<LogsConfig[K]> } = {
  max_size_mb: field(
    'a whole number of MiB from 0 (off) to 102400',
    ['number'],
    (v) => isWhole(v) && v >= 0 && v <= 102400,
  ),
  keep_parts: field('a whole number from 1 to 1000', ['number'], (v) => isWhole(v) && v >= 1 && v <= 1000),
};

export function parseLogsConfig(section: Record<string, unknown> | undefined, path: string | null): LogsConfig {
  const naming = sectionNaming('logs', path, Object.keys(LOGS_FIELDS));
  return { ...DEFAULT_LOGS, ...readSection(LOGS_FIELDS, section, naming) };
}

export const MIB = 1024 * 1024;
