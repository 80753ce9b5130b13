import { readSection, readValue, reject, sectionError, type Field, type Naming } from '../config/section.js';
import { cronProblem, timezoneProblem } from '../config/schedule-values.js';

/**
 * The retention policy: PicoClaw's own keys (`session.prune`; docs/configuration.md#where-values-come-from),
 * plus `archive_dir`. 0 disables a check.
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
  /**
   * The guard's own keys beyond PicoClaw's (./plan/cron.ts, src/startup-model/): 0 / true = PicoClaw's behaviour.
   */
  cron_keep_runs: number;
  cron_max_age_days: number;
  max_sessions_counts_cron: boolean;
  max_bootstrap_seconds: number;
  /**
   * The daemon's passes on a cron schedule (src/daemon/schedule.ts) instead of every
   * check_interval_minutes; null: the interval. Read in schedule_timezone (null: the system's).
   */
  schedule: string | null;
  schedule_timezone: string | null;
  /** To auto_vacuum INCREMENTAL at an offline VACUUM, then space given back online (src/prune/apply/shrink.ts). */
  shrink_online: boolean;
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
  'schedule',
  'schedule_timezone',
  'shrink_online',
];

/**
 * Keys PicoClaw's policy does not have that the text report leaves out at their defaults: they change
 * nothing there (shrink_online changes only when space comes back, which the report says when it does).
 */
export const GUARD_ONLY_KEYS: ReadonlySet<PolicyKey> = new Set([
  'cron_keep_runs',
  'cron_max_age_days',
  'max_sessions_counts_cron',
  'max_bootstrap_seconds',
  'schedule',
  'schedule_timezone',
  'shrink_online',
]);

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
  schedule: null,
  schedule_timezone: null,
  shrink_online: true,
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

type Kind = 'bool' | 'count' | 'path' | 'text';
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
  schedule: 'text',
  schedule_timezone: 'text',
  shrink_online: 'bool',
};

/** PicoClaw's session.prune has no archive_dir; the guard config and flags do. */
const PICOCLAW_KEYS = new Set<PolicyKey>([
  'enabled',
  'max_age_days',
  'max_sessions',
  'max_db_size_mb',
  'check_interval_minutes',
  'vacuum',
]);

export function envName(key: PolicyKey): string {
  return `PICOCLAW_SESSION_PRUNE_${key.toUpperCase()}`;
}

const HINT = 'nothing was read or deleted; fix that value (0 disables a check; booleans are true or false)';
const KNOWN = `known: ${POLICY_KEYS.join(', ')}`;

/** Messages read `WHERE: key ...`. An unknown key lists the known ones (`known`), except in PicoClaw's own block. */
function naming(where: string, path: string | null, known: string | null): Naming {
  return {
    where,
    path,
    key: (k) => k,
    unknownKey: (k) => ({
      message: `${where}: ${k} is not a known prune key${known ? ` (${known})` : ''}`,
      hint: HINT,
    }),
    hint: HINT,
  };
}

const isNumberText = (v: unknown): v is string => typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v);

/** The field for one key. Strings are accepted from the environment and flags (`fromText`). */
function policyField(key: PolicyKey, fromText: boolean): Field<Policy[PolicyKey]> {
  const kind = KIND[key];
  if (kind === 'bool') {
    return {
      what: 'true or false',
      types: fromText ? ['boolean', 'string'] : ['boolean'],
      read: (raw) => {
        if (typeof raw === 'boolean') return raw;
        if (fromText && typeof raw === 'string') {
          const s = raw.trim().toLowerCase();
          if (['true', '1', 'yes', 'on'].includes(s)) return true;
          if (['false', '0', 'no', 'off'].includes(s)) return false;
        }
        return reject();
      },
    };
  }
  if (kind === 'text') {
    // The cron expression and the time zone the daemon's schedule is read in (src/daemon/schedule.ts).
    const problem = key === 'schedule' ? cronProblem : timezoneProblem;
    return {
      what: key === 'schedule' ? 'null or a cron expression' : 'null or a time zone name',
      types: ['null', 'string'],
      read: (raw) => {
        if (raw === null) return null;
        if (typeof raw !== 'string') return reject();
        const t = raw.trim();
        if (t === '') return reject('is empty: give a value (or leave the key out)');
        const why = problem(t);
        return why === null ? t : reject(why);
      },
    };
  }
  if (kind === 'path') {
    return {
      what: 'a folder path',
      types: ['null', 'string'],
      read: (raw) => {
        if (raw === null) return null;
        if (typeof raw !== 'string') return reject();
        // " " would otherwise be a folder named by a space, next to wherever the guard runs.
        const t = raw.trim();
        return t === '' ? reject('is empty: give a folder path (or leave the key out to archive nothing)') : t;
      },
    };
  }
  return {
    what: 'a whole number of 0 or more',
    types: fromText ? ['number', 'string'] : ['number'],
    read: (raw) => {
      let n: number;
      if (typeof raw === 'number') n = raw;
      else if (fromText && isNumberText(raw)) n = Number(raw);
      else return reject();
      if (!Number.isFinite(n) || n < 0) return reject('must be 0 or more (a negative value would match everything)');
      if (!Number.isInteger(n)) return reject('must be a whole number');
      if (n > 1e9) return reject('is implausibly large (over 1000000000)');
      return n;
    },
  };
}

type Fields = Partial<Record<PolicyKey, Field<unknown>>>;
const FILE_FIELDS: Fields = Object.fromEntries(POLICY_KEYS.map((k) => [k, policyField(k, false)]));
const PICOCLAW_FIELDS: Fields = Object.fromEntries([...PICOCLAW_KEYS].map((k) => [k, FILE_FIELDS[k]]));

export function resolvePolicy(inputs: PolicyInputs): ResolvedPolicy {
  const env = inputs.env ?? {};
  const out = {} as Record<PolicyKey, ResolvedValue<unknown>>;
  for (const k of POLICY_KEYS) out[k] = { value: DEFAULT_POLICY[k], source: 'default', from: null };

  // Lowest to highest, so that later sources override.
  const pc = inputs.picoclawConfig;
  if (pc) {
    const read = readSection(PICOCLAW_FIELDS, pc.values, naming(`${pc.path} (session.prune)`, pc.path, null));
    for (const [k, value] of Object.entries(read)) {
      out[k as PolicyKey] = { value, source: 'picoclaw-config', from: pc.path };
    }
  }
  const gc = inputs.guardConfig;
  if (gc) {
    const read = readSection(FILE_FIELDS, gc.values, naming(`${gc.path} (prune)`, gc.path, KNOWN));
    for (const [k, value] of Object.entries(read)) {
      out[k as PolicyKey] = { value, source: 'guard-config', from: gc.path };
    }
  }
  for (const k of POLICY_KEYS) {
    const name = envName(k);
    const v = env[name];
    if (v === undefined || (v === '' && KIND[k] !== 'path')) continue;
    const value = readValue(policyField(k, true), k, v, naming(`environment ${name}`, null, KNOWN));
    out[k] = { value, source: 'env', from: name };
  }
  // An unknown PICOCLAW_SESSION_PRUNE_* variable is most likely a typo that would silently do nothing.
  for (const name of Object.keys(env)) {
    if (name.startsWith('PICOCLAW_SESSION_PRUNE_') && !POLICY_KEYS.some((k) => envName(k) === name)) {
      const u = naming(`environment ${name}`, null, KNOWN);
      throw sectionError(u, u.unknownKey(name.slice('PICOCLAW_SESSION_PRUNE_'.length).toLowerCase()).message);
    }
  }
  for (const [k, v] of Object.entries(inputs.flags ?? {})) {
    if (v === undefined) continue;
    const flag = `--${k.replace(/_/g, '-')}`;
    const value = readValue(policyField(k as PolicyKey, true), k, v, naming(flag, null, KNOWN));
    out[k as PolicyKey] = { value, source: 'flag', from: flag };
  }
  return out as ResolvedPolicy;
}

export function policyValues(p: ResolvedPolicy): Policy {
  const o = {} as Record<PolicyKey, unknown>;
  for (const k of POLICY_KEYS) o[k] = p[k].value;
  return o as unknown as Policy;
}
