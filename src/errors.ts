/**
 * Typed errors and the one table of exit codes. Only src/cli.ts maps an error to
 * an exit code and calls process.exit; everything else throws a GuardError whose
 * message says what failed, which file, and what to do.
 */
export const ExitCode = {
  OK: 0,
  /** An unexpected failure (a bug, or an I/O error nobody planned for). */
  FAILURE: 1,
  /** Bad command line or configuration: nothing was read or deleted. */
  USAGE: 2,
  /** PicoClaw's data could not be read safely (seahorse.db not a database, no FTS5 ...). */
  DATA: 3,
  /** Another prune pass holds the lock for this PicoClaw home. */
  LOCKED: 4,
  /** The gateway is starting (bootstrap running): the pass was skipped. */
  GATEWAY_STARTING: 5,
  /** A store cannot delete (read-only, not writable, database locked): the pass was skipped, nothing deleted. */
  SKIPPED: 6,
  /** Prune finished but kept some sessions it had planned to delete (changed since planning, archive failed). */
  PARTIAL: 7,
  /** prune --apply: SIGINT or SIGTERM stopped it between two sessions (the rest is kept for the next run). */
  INTERRUPTED: 8,
  /**
   * prune --apply: the disk filled (ENOSPC, SQLite's "database or disk is full") during the pass: it stopped at
   * that step, with its report of what was deleted and what is left; the next pass goes on from there.
   */
  NO_SPACE: 9,
  /** health: at least one WARN. */
  HEALTH_WARN: 10,
  /** health: at least one CRITICAL. */
  HEALTH_CRITICAL: 11,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export class GuardError extends Error {
  readonly exitCode: ExitCodeValue;
  /** What the user should do about it (printed on its own line). */
  readonly hint?: string;
  /** The file or component the error is about, when there is one. */
  readonly path?: string;
  constructor(message: string, opts: { exitCode?: ExitCodeValue; hint?: string; path?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GuardError';
    this.exitCode = opts.exitCode ?? ExitCode.FAILURE;
    this.hint = opts.hint;
    this.path = opts.path;
  }
}

/** The message of any thrown value, without a stack. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Whether an error is the disk's, not the guard's: `no_space` (ENOSPC, EDQUOT, SQLITE_FULL) or `damaged`
 * (SQLITE_CORRUPT, SQLITE_NOTADB, an I/O error: SQLITE_IOERR, EIO). A pass meeting one stops at that
 * step: going on would delete against a database it cannot read right, or fail the same way.
 */
export function diskFault(err: unknown): 'no_space' | 'damaged' | null {
  // An error that wraps another (GuardError's cause) is that error's.
  for (let e = err, depth = 0; e instanceof Error && e.cause !== undefined && depth < 4; depth++) {
    const inner = diskFault(e.cause);
    if (inner) return inner;
    e = e.cause;
  }
  const code = errnoCode(err) ?? '';
  const msg = err instanceof Error ? err.message : '';
  if (code === 'ENOSPC' || code === 'EDQUOT' || code.startsWith('SQLITE_FULL') || /disk is full/i.test(msg))
    return 'no_space';
  if (
    code.startsWith('SQLITE_CORRUPT') ||
    code.startsWith('SQLITE_NOTADB') ||
    code.startsWith('SQLITE_IOERR') ||
    code === 'EIO' ||
    /database disk image is malformed/i.test(msg)
  )
    return 'damaged';
  return null;
}

/** The errno code of a Node system error, if any. */
export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}
