import { ExitCode, GuardError } from '../errors.js';

/**
 * The retention policy: PicoClaw's own keys (`session.prune`; README.md,
 * "picoclaw-guard prune"), plus `archive_dir`. 0 disables a check.
 *
 * Where each value comes from, highest first: command-line flags; environment
 * PICOCLAW_SESSION_PRUNE_<KEY>; the guard's config file (`prune` section); a
 * `session.prune` block in PicoClaw's config.json (newer PicoClaw versions; the
 * guard never writes it: older versions refuse to start on unknown keys); defaults.
 * A wrong value anywhere is an error naming the source and the key, raised before
 * any session is read.
 */
export interface Policy {
  enabled: boolean;
  max_age_days: number;
  max_sessions: number;
  max_db_size_mb: number;
  check_interval_minutes: number;
  vacuum: boolean;
  archive_dir: string | null;
  /** The guard's own keys beyond PicoClaw's (src/prune/cron.ts, src/startup-model/): 0 / true = PicoClaw's behaviour. */
  cron_keep_runs: number;
  cron_max_age_days: number;
  max_sessions_counts_cron: boolean;
  max_bootstrap_seconds: number;
}

export type PolicyKey = keyof Policy;
export const POLICY_KEYS: PolicyKey[] = [
  'enabled',
  'max_age_days',
  'max_sessions',
  'max_db_size_mb',
  'check_interval_minutes',
  'vacuum',
  'archive_dir',
  'cron_keep_runs',
  'cron_max_age_days',
  'max_sessions_counts_cron',
  'max_bootstrap_seconds',
];

/** Keys PicoClaw's policy does not have: at their defaults they change nothing, and the text report leaves them out. */
export const GUARD_ONLY_KEYS: ReadonlySet<PolicyKey> = new Set(['cron_keep_runs', 'cron_max_age_days', 'max_sessions_counts_cron', 'max_bootstrap_seconds']);

export const DEFAULT_POLICY: Readonly<Policy> = Object.freeze({
  enabled: false,
  max_age_days: 30,
  max_sessions: 100,
  max_db_size_mb: 128,
  check_interval_minutes: 60,
  vacuum: true,
  archive_dir: null,
  cron_keep_runs: 0,
  cron_max_age_days: 0,
  max_sessions_counts_cron: true,
  max_bootstrap_seconds: 0,
});

export type Source = 'flag' | 'env' | 'guard-config' | 'picoclaw-config' | 'default';

export interface ResolvedValue<T> {
  value: T;
  source: Source;
  /** The file or variable it came from (for the report). */
  from: string | null;
}

export type ResolvedPolicy = { [K in PolicyKey]: ResolvedValue<Policy[K]> };

export interface PolicyInputs {
  flags?: Partial<Record<PolicyKey, unknown>>;
  env?: NodeJS.ProcessEnv;
  guardConfig?: { path: string; values: Record<string, unknown> } | null;
  picoclawConfig?: { path: string; values: Record<string, unknown> } | null;
}

type Kind = 'bool' | 'count' | 'path';
const KIND: Record<PolicyKey, Kind> = {
  enabled: 'bool',
  max_age_days: 'count',
  max_sessions: 'count',
  max_db_size_mb: 'count',
  check_interval_minutes: 'count',
  vacuum: 'bool',
  archive_dir: 'path',
  cron_keep_runs: 'count',
  cron_max_age_days: 'count',
  max_sessions_counts_cron: 'bool',
  max_bootstrap_seconds: 'count',
};

/** PicoClaw's session.prune has no archive_dir; the guard config and flags do. */
const PICOCLAW_KEYS = new Set<PolicyKey>(['enabled', 'max_age_days', 'max_sessions', 'max_db_size_mb', 'check_interval_minutes', 'vacuum']);

export function envName(key: PolicyKey): string {
  return `PICOCLAW_SESSION_PRUNE_${key.toUpperCase()}`;
}

function fail(where: string, key: string, what: string, path: string | null): never {
  throw new GuardError(`${where}: ${key} ${what}`, {
    exitCode: ExitCode.USAGE,
    path: path ?? undefined,
    hint: 'nothing was read or deleted; fix that value (0 disables a check; booleans are true or false)',
  });
}

/** Validate one value from one source. Strings are accepted from the environment and flags. */
function coerce(key: PolicyKey, raw: unknown, where: string, fromText: boolean, path: string | null): Policy[PolicyKey] {
  const kind = KIND[key];
  if (kind === 'bool') {
    if (typeof raw === 'boolean') return raw;
    if (fromText && typeof raw === 'string') {
      const s = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(s)) return true;
      if (['false', '0', 'no', 'off'].includes(s)) return false;
    }
    return fail(where, key, `must be true or false, not ${JSON.stringify(raw)}`, path);
  }
  if (kind === 'path') {
    if (raw === null) return null;
    if (typeof raw === 'string') {
      // " " would otherwise be a folder named by a space, next to wherever the guard runs.
      const t = raw.trim();
      if (t === '') fail(where, key, 'is empty: give a folder path (or leave the key out to archive nothing)', path);
      return t;
    }
    return fail(where, key, `must be a folder path, not ${JSON.stringify(raw)}`, path);
  }
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (fromText && typeof raw === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(raw)) n = Number(raw);
  else return fail(where, key, `must be a whole number of 0 or more, not ${JSON.stringify(raw)}`, path);
  if (!Number.isFinite(n) || n < 0) fail(where, key, `must be 0 or more, not ${n} (a negative value would match everything)`, path);
  if (!Number.isInteger(n)) fail(where, key, `must be a whole number, not ${n}`, path);
  if (n > 1e9) fail(where, key, `is implausibly large (${n})`, path);
  return n;
}

export function resolvePolicy(inputs: PolicyInputs): ResolvedPolicy {
  const env = inputs.env ?? {};
  const out = {} as Record<PolicyKey, ResolvedValue<unknown>>;
  for (const k of POLICY_KEYS) out[k] = { value: DEFAULT_POLICY[k], source: 'default', from: null };

  // Lowest to highest, so that later sources override.
  const pc = inputs.picoclawConfig;
  if (pc) {
    for (const [k, v] of Object.entries(pc.values)) {
      const where = `${pc.path} (session.prune)`;
      if (!PICOCLAW_KEYS.has(k as PolicyKey)) fail(where, k, 'is not a known prune key', pc.path);
      out[k as PolicyKey] = { value: coerce(k as PolicyKey, v, where, false, pc.path), source: 'picoclaw-config', from: pc.path };
    }
  }
  const gc = inputs.guardConfig;
  if (gc) {
    for (const [k, v] of Object.entries(gc.values)) {
      const where = `${gc.path} (prune)`;
      if (!POLICY_KEYS.includes(k as PolicyKey)) fail(where, k, `is not a known prune key (known: ${POLICY_KEYS.join(', ')})`, gc.path);
      out[k as PolicyKey] = { value: coerce(k as PolicyKey, v, where, false, gc.path), source: 'guard-config', from: gc.path };
    }
  }
  for (const k of POLICY_KEYS) {
    const name = envName(k);
    const v = env[name];
    if (v !== undefined && (v !== '' || KIND[k] === 'path')) out[k] = { value: coerce(k, v, `environment ${name}`, true, null), source: 'env', from: name };
  }
  // An unknown PICOCLAW_SESSION_PRUNE_* variable is most likely a typo that would silently do nothing.
  for (const name of Object.keys(env)) {
    if (name.startsWith('PICOCLAW_SESSION_PRUNE_') && !POLICY_KEYS.some((k) => envName(k) === name)) {
      fail(`environment ${name}`, name.slice('PICOCLAW_SESSION_PRUNE_'.length).toLowerCase(), `is not a known prune key (known: ${POLICY_KEYS.join(', ')})`, null);
    }
  }
  for (const [k, v] of Object.entries(inputs.flags ?? {})) {
    if (v === undefined) continue;
    out[k as PolicyKey] = { value: coerce(k as PolicyKey, v, `--${k.replace(/_/g, '-')}`, true, null), source: 'flag', from: `--${k.replace(/_/g, '-')}` };
  }
  return out as ResolvedPolicy;
}

export function policyValues(p: ResolvedPolicy): Policy {
  const o = {} as Record<PolicyKey, unknown>;
  for (const k of POLICY_KEYS) o[k] = p[k].value;
  return o as unknown as Policy;
}
