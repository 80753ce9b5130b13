import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * `vcgencmd get_throttled`, the one process a health run may spawn
 * (docs/board-health.md#vcgencmd). Rules kept here:
 * - always exactly `get_throttled` and nothing after it: any extra argument clears the
 *   firmware's since-boot bits (raspberrypi/documentation#1341);
 * - execFile (no shell) with a timeout; ENOENT, exit 255 (`Can't open device file`, the
 *   user is not in `video`) and timeouts are states, not exceptions;
 * - answers are cached per path for `ttlMs`, and a call in flight is shared, so the
 *   daemon's requests never spawn.
 */
export type VcgencmdState = 'ok' | 'not_found' | 'not_used' | 'no_access' | 'timeout' | 'error';

export interface VcgencmdResult {
  state: VcgencmdState;
  /** The throttle word, when state is ok. */
  word: number | null;
  /** What went wrong, in a few words (never the whole output). */
  error: string | null;
}

export interface VcgencmdCache {
  entries: Map<string, { atMs: number; result: Promise<VcgencmdResult> }>;
}

export function newVcgencmdCache(): VcgencmdCache {
  return { entries: new Map() };
}

/** The process-wide cache used when the caller passes none. */
export const sharedVcgencmdCache: VcgencmdCache = newVcgencmdCache();

/** Legacy install paths, probed after PATH (/usr/bin first, /opt/vc/bin on old 32-bit images). */
const FALLBACK_PATHS = ['/usr/bin/vcgencmd', '/opt/vc/bin/vcgencmd'];

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** vcgencmd on PATH, else a legacy path; null when absent (every RISC-V board). */
export function findVcgencmd(env: NodeJS.ProcessEnv = process.env): string | null {
  const dirs = (env.PATH ?? '').split(delimiter).filter((d) => d !== '');
  for (const p of [...dirs.map((d) => join(d, 'vcgencmd')), ...FALLBACK_PATHS]) {
    if (executable(p)) return p;
  }
  return null;
}

/** `throttled=0x50005` → 0x50005 (the man page's format). */
export function parseGetThrottled(stdout: string): number | null {
  const m = /^\s*throttled=0x([0-9a-fA-F]+)\s*$/m.exec(stdout);
  return m ? parseInt(m[1]!, 16) : null;
}

function firstLine(s: string): string {
  return (s.split('\n').find((l) => l.trim() !== '') ?? '').trim().slice(0, 160);
}

function spawnOnce(path: string, timeoutMs: number): Promise<VcgencmdResult> {
  return new Promise((resolve) => {
    execFile(
      path,
      ['get_throttled'],
      { timeout: timeoutMs, encoding: 'utf8', maxBuffer: 64 * 1024, windowsHide: true },
      (err, stdout, stderr) => {
        if (!err) {
          const word = parseGetThrottled(stdout);
          resolve(
            word === null
              ? { state: 'error', word: null, error: `unexpected output: ${firstLine(stdout) || '(empty)'}` }
              : { state: 'ok', word, error: null },
          );
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: string | number };
        if (e.code === 'ENOENT') return resolve({ state: 'not_found', word: null, error: `${path} does not exist` });
        if (e.code === 'EACCES') return resolve({ state: 'error', word: null, error: `${path} is not executable` });
        if (e.killed) return resolve({ state: 'timeout', word: null, error: `no answer within ${timeoutMs} ms` });
        const out = `${stdout}\n${stderr}`;
        // The firmware device could not be opened (mailbox node mode 0660 root:video).
        if (/Can't open device file|VCHI initialization failed/.test(out)) {
          return resolve({
            state: 'no_access',
            word: null,
            error: `${firstLine(out)} (exit ${String(e.code)}; is this user in the video group?)`,
          });
        }
        resolve({
          state: 'error',
          word: null,
          error: `exit ${String(e.code ?? e.signal)}: ${firstLine(out) || '(no output)'}`,
        });
      },
    );
  });
}

export interface GetThrottledOptions {
  timeoutMs?: number;
  /** How long an answer is reused. The CLI asks once; the daemon polls. */
  ttlMs?: number;
  cache?: VcgencmdCache;
  nowMs?: () => number;
}

export function getThrottled(path: string, opts: GetThrottledOptions = {}): Promise<VcgencmdResult> {
  const cache = opts.cache ?? sharedVcgencmdCache;
  const nowMs = opts.nowMs ?? Date.now;
  const ttl = opts.ttlMs ?? 10_000;
  const hit = cache.entries.get(path);
  const t = nowMs();
  if (hit && t - hit.atMs < ttl && t >= hit.atMs) return hit.result;
  const result = spawnOnce(path, opts.timeoutMs ?? 2000);
  cache.entries.set(path, { atMs: t, result });
  return result;
}
