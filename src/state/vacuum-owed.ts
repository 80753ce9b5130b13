import { isRecord, jsonState } from './store.js';

/**
 * A VACUUM that an online pass deferred (the gateway was running: VACUUM would block its
 * writes), remembered in the guard's state folder until an offline pass (the pre-start
 * unit, or the daemon while the gateway is down) runs it.
 *
 * Why it must be remembered: while it is owed, seahorse.db does not shrink and its page
 * count still holds the FTS tombstones of what was deleted, so a size check that only
 * measures the file would delete again, every pass, for an excess already paid for.
 * The record keeps the estimate of the size after the VACUUM and the content it was
 * made from, so the next online pass can tell new growth from the old excess.
 */
export interface OwedVacuum {
  /** seahorse.db the record is for (one state folder may serve several homes). */
  db: string;
  /** When it was first owed (ISO). */
  since: string;
  /** Estimated seahorse.db size after the VACUUM, when the record was last updated (null: not estimated). */
  estimated_bytes_after: number | null;
  /** Stored message, part and summary text left at that moment: later growth scales the estimate. */
  content_bytes: number | null;
  /** Why it was deferred. */
  reason: string;
}

export const OWED_FILE = 'vacuum-owed.json';

/**
 * A damaged or unreadable file reads as nothing owed: the safe reading (the next offline pass decides
 * on its own measurements), and the next write replaces it.
 */
export const owedFile = jsonState<OwedVacuum[]>(OWED_FILE, {
  what: 'a list of owed VACUUMs',
  validate: (v) =>
    Array.isArray(v) ? v.filter((x): x is OwedVacuum => isRecord(x) && typeof x.db === 'string') : null,
  empty: () => [],
  serialize: (v) => JSON.stringify(v, null, 2) + '\n',
  remedy: 'move it away (an offline pass then decides on its own measurements)',
});

const readAll = (stateDir: string) => owedFile.read(stateDir).value;

export function readOwedVacuum(stateDir: string, dbPath: string): OwedVacuum | null {
  return readAll(stateDir).find((x) => x.db === dbPath) ?? null;
}

/**
 * Record (or, with null, clear) what is owed for one database (`also`: an older key of the same database,
 * dropped); throws StateWriteError (src/state/store.ts).
 */
export function writeOwedVacuum(stateDir: string, dbPath: string, record: OwedVacuum | null, also?: string): void {
  owedFile.update(
    stateDir,
    (all) => {
      const rest = all.filter((x) => x.db !== dbPath && x.db !== also);
      if (record) rest.push({ ...record, db: dbPath });
      return rest;
    },
    { overwriteDamaged: true },
  );
}
