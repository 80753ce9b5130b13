import { isRecord, jsonState } from './store.js';

/**
 * What the last pre-start pass with nothing to do saw (src/prune/pass-quiet.ts): one record per home.
 * The next pre-start pass answers "nothing to do" from it alone while every input and stat is the same,
 * the gateway is down, and the clock lies between the record's `at` and its `due_ms`.
 *
 * A damaged or unreadable file reads as no record: the safe reading (the next pass takes the full path,
 * which writes a good record again).
 */
export interface QuietRecord {
  /** The home's real path. */
  home: string;
  /** A hash of the options and environment variables that decide the policy, the home and the state folder. */
  key: string;
  /** Every path the plan depends on, with its stat tuple (dev:ino:size:mtimeNs:ctimeNs) or "absent". */
  stats: [string, string][];
  /** The pass's clock (ISO). */
  at: string;
  /** The earliest time a session now kept could become deletable by age; null when no age limit is on. */
  due_ms: number | null;
  sessions: number;
  /** The history line's undated_sessions and displaced_by_undated. */
  undated: number;
  displaced_by_undated: number;
  warnings: string[];
}

export const QUIET_FILE = 'quiet-pass.json';

const valid = (x: unknown): x is QuietRecord =>
  isRecord(x) &&
  typeof x.home === 'string' &&
  typeof x.key === 'string' &&
  Array.isArray(x.stats) &&
  x.stats.every((s) => Array.isArray(s) && s.length === 2 && s.every((v) => typeof v === 'string')) &&
  typeof x.at === 'string' &&
  (x.due_ms === null || typeof x.due_ms === 'number') &&
  typeof x.sessions === 'number' &&
  typeof x.undated === 'number' &&
  typeof x.displaced_by_undated === 'number' &&
  Array.isArray(x.warnings) &&
  x.warnings.every((w) => typeof w === 'string');

export const quietFile = jsonState<QuietRecord[]>(QUIET_FILE, {
  what: 'the records of the last quiet pre-start passes',
  validate: (v) => (Array.isArray(v) ? v.filter(valid) : null),
  empty: () => [],
  remedy: 'move it away (the next pre-start pass then takes the full path)',
  // A record only lets a pass skip its work when every recorded path still matches the home, so an old
  // record a power cut brought back answers only for the home it describes, and a lost one costs a full pass.
  cache: true,
});

export function readQuietRecord(stateDir: string, home: string): QuietRecord | null {
  return quietFile.read(stateDir).value.find((r) => r.home === home) ?? null;
}

/**
 * Record (or, with null, clear) this home's quiet pass; the file is not written when it would not change
 * but for a later time (a pass on an unchanged home writes nothing). Throws StateWriteError (src/state/store.ts).
 */
export function writeQuietRecord(stateDir: string, home: string, record: QuietRecord | null): void {
  quietFile.update(
    stateDir,
    (all) => {
      const cur = all.find((r) => r.home === home) ?? null;
      if (JSON.stringify(cur) === JSON.stringify(record)) return null;
      // The same record from a later pass: the earlier one still says the home is so since its time.
      if (
        cur &&
        record &&
        Date.parse(cur.at) <= Date.parse(record.at) &&
        JSON.stringify({ ...cur, at: record.at }) === JSON.stringify(record)
      )
        return null;
      const rest = all.filter((r) => r.home !== home);
      if (record) rest.push(record);
      return rest;
    },
    { overwriteDamaged: true },
  );
}
