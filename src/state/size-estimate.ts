import { jsonState } from './store.js';

/**
 * What the size guard counts seahorse.db as while the file cannot show it: the estimated size
 * after full reclamation (FTS tombstones folded, every free page given back), kept in the guard's
 * state folder from the pass that deleted for an excess until a full VACUUM measures the truth.
 *
 * Why it must outlive the pass, whatever the reason the file cannot shrink (VACUUM deferred
 * while the gateway runs, `vacuum` off, no room for VACUUM, or online shrink, which gives back
 * free pages but not the FTS tombstones): the used pages still hold the deleted sessions' index
 * entries, so a pass that measured them would see the same excess and delete again for it
 * (with VACUUM off: 19 sessions, then 3, then 1 more on the same database).
 *
 * The record is the estimate and the content it was made from: later growth scales it, so new
 * growth is told from the old excess. An estimate can only be too low if the deleted sessions'
 * share was overestimated; then the guard deletes less than it could, never more.
 */
export interface SizeEstimate {
  /** seahorse.db the record is for (one state folder may serve several homes). */
  db: string;
  /** When it was first made (ISO). */
  since: string;
  /** Estimated seahorse.db size after full reclamation, when the record was last updated. */
  estimated_bytes_after: number;
  /** Stored message, part and summary text at that moment: later growth scales the estimate. */
  content_bytes: number;
  /** Why the file could not show it. */
  reason: string;
}

export const SIZE_ESTIMATE_FILE = 'size-estimate.json';

const isEstimate = (x: unknown): x is SizeEstimate =>
  typeof x === 'object' &&
  x !== null &&
  typeof (x as SizeEstimate).db === 'string' &&
  Number.isFinite((x as SizeEstimate).estimated_bytes_after) &&
  Number.isFinite((x as SizeEstimate).content_bytes);

/**
 * A damaged or unreadable file reads as no estimate, so the guard measures the used pages (it may then
 * delete for tombstones once more, as before this record existed; it never deletes what a VACUUM would
 * keep), and the next write replaces it.
 */
export const estimatesFile = jsonState<SizeEstimate[]>(SIZE_ESTIMATE_FILE, {
  what: 'a list of size estimates',
  validate: (v) => (Array.isArray(v) ? v.filter(isEstimate) : null),
  empty: () => [],
  serialize: (v) => JSON.stringify(v, null, 2) + '\n',
  remedy: 'move it away (the size guard then measures the used pages)',
});

const readAll = (stateDir: string) => estimatesFile.read(stateDir).value;

export function readSizeEstimate(stateDir: string, dbPath: string): SizeEstimate | null {
  return readAll(stateDir).find((x) => x.db === dbPath) ?? null;
}

/** Record (or, with null, clear) the estimate for one database; throws StateWriteError (src/state/store.ts). */
export function writeSizeEstimate(stateDir: string, dbPath: string, e: SizeEstimate | null): void {
  estimatesFile.update(
    stateDir,
    (all) => {
      const rest = all.filter((x) => x.db !== dbPath);
      if (e) rest.push({ ...e, db: dbPath });
      return rest;
    },
    { overwriteDamaged: true },
  );
}

/** The estimate scaled to today's content: growth since the record is new growth, not the old excess. */
export function scaledEstimate(e: { estimated_bytes_after: number; content_bytes: number }, content: number): number {
  return e.content_bytes > 0
    ? Math.round((e.estimated_bytes_after * content) / e.content_bytes)
    : e.estimated_bytes_after;
}
