import { SMALL_FILE_CAPS } from '../io/smallfile.js';
import { instantMs } from '../picoclaw/time.js';
import { isRecord, jsonState } from './store.js';

/**
 * The startup-time model's samples: the volume the gateway found at a start (the default
 * agent's sessions, their JSONL bytes, seahorse.db + WAL), paired with that restart's
 * bootstrap gap once gateway.log shows it. Kept in the guard's state folder (never a
 * sessions folder), the newest 50 per PicoClaw home.
 */
export interface BootstrapSample {
  home: string;
  /** When the volume was measured. */
  recorded_at: string;
  /**
   * `pre-start`: measured by the pre-start pass just before the gateway started; `daemon`: when the daemon first saw
   * the restart.
   */
  source: 'pre-start' | 'daemon';
  sessions: number;
  jsonl_bytes: number;
  db_bytes: number | null;
  /** The restart it belongs to (its start time from gateway.log); null until paired. */
  restart_started_at: string | null;
  /** That restart's bootstrap gap; null until the log shows a complete one. */
  gap_seconds: number | null;
}

export const SAMPLES_FILE = 'bootstrap-samples.json';
export const MAX_SAMPLES_PER_HOME = 50;

function valid(x: unknown): x is BootstrapSample {
  const s = x as BootstrapSample;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.home === 'string' &&
    typeof s.recorded_at === 'string' &&
    Number.isFinite(instantMs(s.recorded_at)) &&
    (s.source === 'pre-start' || s.source === 'daemon') &&
    Number.isInteger(s.sessions) &&
    s.sessions >= 0 &&
    Number.isFinite(s.jsonl_bytes) &&
    s.jsonl_bytes >= 0 &&
    (s.restart_started_at === null || typeof s.restart_started_at === 'string') &&
    (s.gap_seconds === null || (Number.isFinite(s.gap_seconds) && s.gap_seconds >= 0))
  );
}

/** The file: `{ "version": 1, "samples": [...] }`; a sample of the wrong shape is dropped. */
export const samplesFile = jsonState<BootstrapSample[]>(SAMPLES_FILE, {
  what: 'a list of bootstrap samples',
  validate: (v) => (isRecord(v) && Array.isArray(v.samples) ? v.samples.filter(valid) : null),
  empty: () => [],
  serialize: (samples) => JSON.stringify({ version: 1, samples }, null, 1) + '\n',
  // 50 samples for each home: far under this cap, which is the history's.
  maxBytes: SMALL_FILE_CAPS.history,
  remedy: 'move it away (the startup-time model then starts learning afresh)',
});

/**
 * Every readable sample (all homes); a missing, damaged or unreadable file reads as none (the model then says it has
 * no samples), and the next write replaces it.
 */
export function readAllSamples(stateDir: string): BootstrapSample[] {
  return samplesFile.read(stateDir).value;
}

export function readSamples(stateDir: string, home: string): BootstrapSample[] {
  return readAllSamples(stateDir).filter((s) => s.home === home);
}

/** Replace this home's samples (the newest 50 are kept), leaving other homes' alone; throws StateWriteError. */
export function writeSamples(stateDir: string, home: string, samples: BootstrapSample[]): void {
  const mine = [...samples]
    .sort((a, b) => instantMs(a.recorded_at) - instantMs(b.recorded_at))
    .slice(-MAX_SAMPLES_PER_HOME);
  samplesFile.update(stateDir, (all) => [...all.filter((s) => s.home !== home), ...mine], { overwriteDamaged: true });
}
