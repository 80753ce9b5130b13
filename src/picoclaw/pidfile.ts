import { statSync } from 'node:fs';
import { SmallFileError, readSmallText } from '../io/smallfile.js';

/**
 * The gateway's PID file (`<home>/.picoclaw.pid`, pkg/pid/pidfile.go): JSON with
 * pid, token, version, port, host. The token authorises POST /reload: it is never
 * read into this object, so it cannot reach a report, a log line or a metric.
 */
export interface PidInfo {
  pid: number;
  version: string | null;
  host: string | null;
  port: number | null;
  /** When the file was written (its mtime): the gateway's start. */
  writtenAtMs: number;
}

export type PidFileRead =
  { state: 'absent' } | { state: 'invalid'; reason: string } | { state: 'present'; info: PidInfo };

export function readPidFile(path: string): PidFileRead {
  let text: string;
  let mtimeMs: number;
  try {
    // Capped and non-blocking: a FIFO or a symlink to /dev/zero here must not hang or exhaust memory.
    text = readSmallText(path, 'pid');
    mtimeMs = statSync(path).mtimeMs;
  } catch (err) {
    if (err instanceof SmallFileError && err.problem === 'absent') return { state: 'absent' };
    if (err instanceof SmallFileError) return { state: 'invalid', reason: err.message };
    return { state: 'invalid', reason: `cannot read ${path}: ${String(err)}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: 'invalid', reason: `${path} is not JSON` };
  }
  if (typeof raw !== 'object' || raw === null) return { state: 'invalid', reason: `${path} is not a JSON object` };
  const o = raw as Record<string, unknown>;
  if (typeof o.pid !== 'number' || !Number.isInteger(o.pid) || o.pid <= 0) {
    return { state: 'invalid', reason: `${path} has no valid pid` };
  }
  return {
    state: 'present',
    info: {
      pid: o.pid,
      version: typeof o.version === 'string' ? o.version : null,
      host: typeof o.host === 'string' && o.host !== '' ? o.host : null,
      port: typeof o.port === 'number' && Number.isInteger(o.port) ? o.port : null,
      writtenAtMs: mtimeMs,
    },
  };
}
