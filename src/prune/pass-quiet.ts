import { createHash } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, errorMessage } from '../errors.js';
import { processAlive } from '../io/process.js';
import { discoverHome, type PicoClawHome } from '../picoclaw/home.js';
import { readPidFile } from '../picoclaw/pidfile.js';
import { journalPath } from '../state/deletion-journal.js';
import { appendHistory } from '../state/history.js';
import { HOLDS_FILE } from '../state/holds.js';
import { PINS_FILE } from '../state/pins.js';
import { readQuietRecord, writeQuietRecord, type QuietRecord } from '../state/quiet-pass.js';
import { SIZE_ESTIMATE_FILE } from '../state/size-estimate.js';
import { OWED_FILE } from '../state/vacuum-owed.js';
import type { Plan } from './plan/plan.js';

/**
 * The pre-start pass on a home as the last quiet pass left it: "nothing to do" without the inventory.
 *
 * When the pre-start pass finds nothing to do (./pass-noop.ts) in the simple case (the age step applied
 * or off, no clock doubt, max_bootstrap_seconds off, no restore hold, no session kept as unsafe), it
 * records in the state folder what its plan depended on (src/state/quiet-pass.ts): a hash of the options
 * and environment variables that decide the policy, the home and the state folder; the stat (device,
 * inode, size, mtime and ctime in ns) of every path the plan reads or that changes when a session
 * appears or goes; the pass's clock; and `due_ms`, the earliest time a session it kept could become
 * deletable by age. The next pre-start pass (text report only: a JSON report stays complete) answers
 * from that record when every input and stat is the same, the gateway is not running, and the clock
 * lies in [at, due_ms). Anything else, an error included, takes the full path.
 *
 * Why that is safe: a pass deletes for
 * - age: nothing kept becomes old enough before due_ms (every kept, dated group and orphan counted,
 *   whatever its reason, with the shortest age limit that could apply to it), and a clock before the
 *   record's time takes the full path;
 * - count (max_sessions, cron_keep_runs): a new session creates files in a sessions folder, which moves
 *   that folder's mtime and ctime (PicoClaw writes metas by a temp file and a rename, which does too);
 * - size, orphans and shared conversations: seahorse.db, its -wal and -shm stats;
 * - pins, holds, an interrupted deletion, an owed VACUUM, the size estimate: their state files' stats;
 * - policy and config: the inputs key, the guard config's and config.json's stats.
 * An append to a .jsonl changes no folder, and only makes a session newer: that never makes anything
 * deletable (the count and the size are the same, and no kept session gets closer to its age limit).
 *
 * The limits: a meta rewritten in place (not PicoClaw's way) is not seen; nor is a change that keeps a
 * file's size and both its times (set back by hand). The next full pass sees them (the daemon's, or
 * a pre-start pass after any new session): the fast path can only delay a deletion, never cause one.
 *
 * This module is loaded before the heavy ones (no inventory, no plan, no SQLite): keep its imports light.
 */

const DAY_MS = 86_400_000;

/** Options that only change how the report is printed: not part of the inputs key. */
const OUTPUT_ONLY = new Set(['json', 'full', 'wide', 'width', 'color']);

/**
 * The environment variables the guard reads for the home, its config, its state folder and the policy.
 * Not SQLite's: src/io/sqlite.ts sets SQLITE_USE_URI in the process, and none of them changes a plan.
 */
const keyEnv = (name: string) =>
  /^(PICOCLAW_|PICOGUARD_)/.test(name) || ['HOME', 'STATE_DIRECTORY', 'XDG_STATE_HOME'].includes(name);

/** The guard config a pass reads (src/guard-config.ts loadGuardConfig). */
export const DEFAULT_GUARD_CONFIG_PATH = '/etc/picoclaw-guard/config.json';

export interface QuietInputs {
  home: PicoClawHome;
  key: string;
  stats: [string, string][];
}

export function inputsKey(opts: Record<string, unknown>, env: NodeJS.ProcessEnv): string {
  const o = Object.keys(opts)
    // An option set to undefined is one not given (a caller may add such keys on the way).
    .filter((k) => !OUTPUT_ONLY.has(k) && opts[k] !== undefined)
    .sort()
    .map((k) => [k, opts[k]]);
  const e = Object.keys(env)
    .filter((k) => keyEnv(k) && env[k] !== undefined)
    .sort()
    .map((k) => [k, env[k]]);
  return createHash('sha256')
    .update(JSON.stringify([o, e]))
    .digest('hex');
}

function statTuple(p: string): string {
  try {
    const s = statSync(p, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
    throw err;
  }
}

/** The paths a quiet pass's plan depends on (the module's comment says why each). */
export function quietPaths(
  home: PicoClawHome,
  homeReal: string,
  stateDir: string,
  configFlag: string | undefined,
  env: NodeJS.ProcessEnv,
): string[] {
  const guardConfig =
    configFlag ??
    (env.PICOCLAW_GUARD_CONFIG !== undefined && env.PICOCLAW_GUARD_CONFIG !== ''
      ? env.PICOCLAW_GUARD_CONFIG
      : DEFAULT_GUARD_CONFIG_PATH);
  return [
    guardConfig,
    home.configPath,
    // Not the home's root, nor the PID file: a gateway writes and removes its PID file on every run, which
    // moves the root's times, and neither is read by a plan (the agents and their folders come from
    // config.json; a folder that appears is a recorded path that was absent). Whether the gateway runs is
    // asked at the time of the answer.
    ...home.sessionsDirs.map((d) => d.dir),
    home.seahorsePath,
    `${home.seahorsePath}-wal`,
    `${home.seahorsePath}-shm`,
    join(stateDir, HOLDS_FILE),
    join(stateDir, PINS_FILE),
    join(stateDir, OWED_FILE),
    join(stateDir, SIZE_ESTIMATE_FILE),
    journalPath(stateDir, homeReal),
  ];
}

export function quietInputs(
  opts: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  stateDir: string,
  homeReal: (h: PicoClawHome) => string,
): QuietInputs {
  const home = discoverHome({ home: typeof opts.home === 'string' ? opts.home : undefined, env });
  const real = homeReal(home);
  const paths = quietPaths(home, real, stateDir, typeof opts.config === 'string' ? opts.config : undefined, env);
  return { home, key: inputsKey(opts, env), stats: paths.map((p) => [p, statTuple(p)]) };
}

/** The simple case a record is made for; null: none (the next pass takes the full path). */
export function dueOf(plan: Plan): { due: number | null } | null {
  if (plan.ageCheck !== 'applied' && plan.ageCheck !== 'disabled') return null;
  if (plan.clockDoubts.length > 0 || plan.bootstrap !== null) return null;
  const p = plan.policy;
  const limits = (cron: boolean) =>
    [p.max_age_days, cron ? p.cron_max_age_days : 0].filter((d) => d > 0).map((d) => d * DAY_MS);
  let due: number | null = null;
  const at = (last: number | null, cron: boolean) => {
    if (last === null) return;
    for (const l of limits(cron)) due = due === null ? last + l : Math.min(due, last + l);
  };
  for (const g of plan.groups) {
    if (g.action !== 'keep') return null;
    if (g.reason !== 'within_policy' && g.reason !== 'newest' && g.reason !== 'undated' && g.reason !== 'pinned')
      return null;
    at(g.lastActivityMs, true);
  }
  for (const o of plan.orphans) {
    if (o.action !== 'keep') return null;
    at(o.conversation.lastActivityMs, true);
  }
  return { due };
}

/** How long every recorded path must have been still before the pass: a change in the same clock tick is not seen. */
export const SETTLE_MS = 2000;

/** What a quiet pass saw before it read the home (taken before the inventory: a change during the pass is seen). */
export interface QuietBefore {
  opts: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  stateDir: string;
  homeReal: string;
  inputs: QuietInputs;
  /** The wall clock (ms) when the stats were taken. */
  takenMs: number;
  /** SETTLE_MS unless a test gives its own. */
  settleMs: number;
}

export function quietBefore(
  q: { opts: Record<string, unknown>; env: NodeJS.ProcessEnv; settleMs?: number },
  stateDir: string,
): QuietBefore | null {
  try {
    let homeReal = '';
    const inputs = quietInputs(q.opts, q.env, stateDir, (h) => (homeReal = realpathSync(h.home)));
    return { ...q, stateDir, homeReal, inputs, takenMs: Date.now(), settleMs: q.settleMs ?? SETTLE_MS };
  } catch {
    return null;
  }
}

/**
 * Every path still since before the settle time: a file system stamps a change with a coarse clock, so a
 * change made in the same tick as the stats, after them, could leave the same times (git's "racy" files).
 * A clock set back since the change also fails this: the full path then records later.
 */
function settled(b: QuietBefore): boolean {
  const limit = BigInt(b.takenMs - b.settleMs) * 1_000_000n;
  for (const [, t] of b.inputs.stats) {
    if (t === 'absent') continue;
    const [, , , m, c] = t.split(':');
    if (BigInt(m!) >= limit || BigInt(c!) >= limit) return false;
  }
  return true;
}

/** After a quiet pass's history line: its record, when the case is simple; a warning, or null. */
export function recordQuietPass(
  b: QuietBefore,
  plan: Plan,
  at: Date,
  sessions: number,
  warnings: string[],
): string | null {
  try {
    const d = dueOf(plan);
    // The same inputs after the pass as before it: nothing changed while the home was read.
    const after = quietInputs(b.opts, b.env, b.stateDir, () => b.homeReal);
    const same = after.key === b.inputs.key && JSON.stringify(after.stats) === JSON.stringify(b.inputs.stats);
    if (!d || !same || !settled(b)) {
      writeQuietRecord(b.stateDir, b.homeReal, null);
      return null;
    }
    writeQuietRecord(b.stateDir, b.homeReal, {
      home: b.homeReal,
      key: b.inputs.key,
      stats: b.inputs.stats,
      at: at.toISOString(),
      due_ms: d.due,
      sessions,
      warnings,
      undated: plan.undated.groups,
      displaced_by_undated: plan.undated.displaced,
    });
    return null;
  } catch (err) {
    return `could not record the quiet pass in ${b.stateDir}: ${errnoCode(err) ?? errorMessage(err)}`;
  }
}

/** The gateway is not running: no PID file, or its pid is not alive. */
function gatewayDown(home: PicoClawHome): boolean {
  const pf = readPidFile(home.pidPath);
  if (pf.state === 'absent') return true;
  return pf.state === 'present' && !processAlive(pf.info.pid);
}

export interface QuietAnswer {
  record: QuietRecord;
  home: PicoClawHome;
}

/** The record, when this pass can answer from it (the module's comment); null: the full path. */
export function quietCheck(
  opts: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  stateDir: string,
  nowMs: number,
  homeReal: (h: PicoClawHome) => string,
): QuietAnswer | null {
  if (opts.apply !== true || opts.preStart !== true || opts.json === true) return null;
  if (opts.forceVacuum === true || opts.trustClock === true) return null;
  try {
    const home = discoverHome({ home: typeof opts.home === 'string' ? opts.home : undefined, env });
    const real = homeReal(home);
    const record = readQuietRecord(stateDir, real);
    if (!record) return null;
    const inputs = quietInputs(opts, env, stateDir, () => real);
    if (inputs.key !== record.key || JSON.stringify(inputs.stats) !== JSON.stringify(record.stats)) return null;
    const at = Date.parse(record.at);
    if (!Number.isFinite(at) || nowMs < at) return null;
    if (record.due_ms !== null && nowMs >= record.due_ms) return null;
    if (!gatewayDown(home)) return null;
    return { record, home };
  } catch {
    return null;
  }
}

/** The fast path's report line and its history line; the exit code. */
export function answerQuiet(
  a: QuietAnswer,
  stateDir: string,
  now: Date,
  durationMs: () => number,
  out: (s: string) => void,
): number {
  const r = a.record;
  const warnings = [...r.warnings];
  try {
    appendHistory(stateDir, {
      at: now.toISOString(),
      home: a.home.home,
      mode: 'apply',
      outcome: 'ok',
      deleted_sessions: 0,
      deleted_orphans: 0,
      freed_bytes: 0,
      sessions_before: r.sessions,
      sessions_after: r.sessions,
      duration_ms: Math.round(durationMs()),
      reason: null,
      undated_sessions: r.undated,
      displaced_by_undated: r.displaced_by_undated,
      size_limit_unmet: null,
      vacuum_owed_since: null,
    });
  } catch (err) {
    warnings.push(`could not record the pass in ${stateDir}: ${errnoCode(err) ?? errorMessage(err)}`);
  }
  const due = r.due_ms === null ? 'no age limit' : `nothing due before ${new Date(r.due_ms).toISOString()}`;
  out(
    `nothing to do: the home is as the pass at ${r.at} left it (${r.sessions} sessions, ${due})\n` +
      warnings.map((w) => `warning: ${w}\n`).join(''),
  );
  return 0;
}
