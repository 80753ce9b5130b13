import type { PicoClawHome } from '../picoclaw/home.js';
import { countSessions } from '../health/picoclaw.js';
import { dbFileBytes } from '../picoclaw/seahorse.js';
import { readSamples, writeSamples, type BootstrapSample } from '../state/bootstrap-samples.js';

/**
 * The volume the gateway bootstraps, and the pre-start pass's sample of it. A module of its own,
 * apart from the model's fit and gateway.log's analysis (./learn.ts): the pre-start pass records a
 * sample before every gateway start and needs neither.
 */
export interface Volume {
  sessions: number;
  jsonl_bytes: number;
  db_bytes: number | null;
}

/** The default agent's sessions folder: the only one bootstrapped at start. */
export function bootstrapDir(home: PicoClawHome): string {
  return (home.agents.find((a) => a.id === home.defaultAgent) ?? home.agents[0]!).sessionsDir;
}

/** One readdir (+ an lstat per transcript) and two stats. */
export function measureVolume(home: PicoClawHome): Volume {
  const c = countSessions(bootstrapDir(home));
  const db = dbFileBytes(home.seahorsePath);
  return { sessions: c.sessions, jsonl_bytes: c.jsonl_bytes, db_bytes: db.db > 0 ? db.total : null };
}

/** The pre-start pass: the volume just before the gateway starts, paired with its restart later. */
export function recordPreStart(home: PicoClawHome, stateDir: string, nowMs: number): BootstrapSample {
  const s: BootstrapSample = {
    home: home.home,
    recorded_at: new Date(nowMs).toISOString(),
    source: 'pre-start',
    ...measureVolume(home),
    restart_started_at: null,
    gap_seconds: null,
  };
  writeSamples(stateDir, home.home, [...readSamples(stateDir, home.home), s]);
  return s;
}
