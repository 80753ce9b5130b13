import { pino, type Logger } from 'pino';

/**
 * The daemon's log: pino, NDJSON on stdout for journald, no transports (a transport runs in a
 * worker thread, pinojs/pino/docs/transports.md, and a thread costs a small board memory). The default destination
 * is asynchronous and flushed at exit. No pid or hostname: journald records both.
 *
 * Nothing is logged while idle: one line at start, one per prune pass, one per reload
 * and one at stop, so an idle daemon costs journald (and the SD card) nothing.
 */
export type { Logger };

export function createLogger(level = process.env.PICOGUARD_LOG_LEVEL ?? 'info'): Logger {
  return pino({
    base: null,
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: the settings never reach a log call, but a token must not either.
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization'], censor: '[redacted]' },
  });
}
