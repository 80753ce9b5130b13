import { isAbsolute } from 'node:path';
import { ExitCode, GuardError } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { parseHealthConfig, type HealthThresholds } from '../health/config.js';
import { resolveStateDir } from '../io/statedir.js';
import { isLoopback } from './server.js';
import { discoverHome, type PicoClawHome } from '../picoclaw/home.js';
import { policyValues, resolvePolicy, type Policy, type ResolvedPolicy } from '../prune/policy.js';

/**
 * Everything `picoclaw-guard run` needs, resolved from its flags, the guard's config file
 * (sections `server` and `metrics`, owned and validated here; `prune` and `health` by
 * their own code) and the environment. Resolved again on SIGHUP.
 */
export interface ServerConfig {
  /** Address to serve on. Anything but loopback needs a token. */
  host: string;
  /** TCP port; 0 takes any free port (tests). */
  port: number;
  /** Bearer token; PICOCLAW_GUARD_TOKEN overrides it. null: none (loopback only). */
  token: string | null;
}

export const DEFAULT_SERVER: Readonly<ServerConfig> = Object.freeze({
  host: '127.0.0.1',
  port: 9109,
  token: null,
});

export interface MetricsConfig {
  /** node_exporter textfile collector folder; null: no textfile output. */
  textfile_dir: string | null;
  /** Board, gateway and seahorse readings (health) are refreshed this often. */
  refresh_seconds: number;
  /** Sessions folders are counted this often (and after each prune pass). */
  sessions_refresh_seconds: number;
  /** gateway.log is re-read at most this often, and only when it changed. */
  startup_refresh_seconds: number;
}

export const DEFAULT_METRICS: Readonly<MetricsConfig> = Object.freeze({
  textfile_dir: null,
  refresh_seconds: 30,
  sessions_refresh_seconds: 300,
  startup_refresh_seconds: 60,
});

export const TOKEN_ENV = 'PICOCLAW_GUARD_TOKEN';
/** For tests only: scheduled passes every N seconds instead of check_interval_minutes. */
export const INTERVAL_ENV = 'PICOGUARD_INTERVAL_SECONDS';
export const MIN_TOKEN_LENGTH = 16;

type Check = { ok: (v: unknown) => boolean; what: string };
const posInt = (max: number): Check => ({ ok: (v) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max, what: `a whole number from 1 to ${max}` });

const SERVER_KEYS: Record<keyof ServerConfig, Check> = {
  host: { ok: (v) => typeof v === 'string' && v.trim() !== '' && !/\s/.test(v), what: 'an address such as "127.0.0.1" or "::1"' },
  port: { ok: (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535, what: 'a port number from 0 to 65535' },
  token: { ok: (v) => v === null || (typeof v === 'string' && v.length >= MIN_TOKEN_LENGTH && !/\s/.test(v)), what: `null or a string of at least ${MIN_TOKEN_LENGTH} characters without spaces` },
};

const METRICS_KEYS: Record<keyof MetricsConfig, Check> = {
  textfile_dir: { ok: (v) => v === null || (typeof v === 'string' && isAbsolute(v)), what: 'null or an absolute folder path' },
  refresh_seconds: posInt(3600),
  sessions_refresh_seconds: posInt(86400),
  startup_refresh_seconds: posInt(86400),
};

function describe(v: unknown): string {
  // Never echo a string back: the key may be the token.
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? 'a string' : typeof v === 'object' ? 'an object' : String(v);
}

function parseSection<T extends object>(name: string, section: Record<string, unknown> | undefined, path: string | null, keys: Record<keyof T, Check>, defaults: Readonly<T>): T {
  const where = path ?? 'the guard config';
  const out = { ...defaults } as T;
  for (const [key, value] of Object.entries(section ?? {})) {
    const check = (keys as Record<string, Check>)[key];
    if (!check) {
      throw new GuardError(`${where}: unknown key "${name}.${key}"`, { exitCode: ExitCode.USAGE, path: path ?? undefined, hint: `known ${name} keys: ${Object.keys(keys).join(', ')}` });
    }
    if (!check.ok(value)) {
      throw new GuardError(`${where}: "${name}.${key}" must be ${check.what}, not ${describe(value)}`, { exitCode: ExitCode.USAGE, path: path ?? undefined });
    }
    (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

export function parseServerConfig(section: Record<string, unknown> | undefined, path: string | null): ServerConfig {
  return parseSection('server', section, path, SERVER_KEYS, DEFAULT_SERVER);
}

export function parseMetricsConfig(section: Record<string, unknown> | undefined, path: string | null): MetricsConfig {
  return parseSection('metrics', section, path, METRICS_KEYS, DEFAULT_METRICS);
}

export interface RunFlags {
  home?: string;
  config?: string;
  host?: string;
  port?: string;
  textfileDir?: string;
  stateDir?: string;
  sysRoot?: string;
  procRoot?: string;
  vcgencmd?: string;
}

export interface DaemonSettings {
  configPath: string | null;
  /** --config as given (the prune pass re-reads the file itself). */
  configFlag: string | undefined;
  home: PicoClawHome;
  stateDir: string;
  sysRoot: string;
  procRoot: string;
  vcgencmd: string | undefined;
  host: string;
  hostSource: 'flag' | 'config' | 'default';
  port: number;
  token: string | null;
  tokenSource: 'env' | 'config' | null;
  metrics: MetricsConfig;
  thresholds: HealthThresholds;
  policy: Policy;
  /** The same values with where each came from (the status page shows them). */
  policySources: ResolvedPolicy;
  /** Seconds between scheduled passes; 0: none. */
  intervalSeconds: number;
  intervalSource: 'policy' | 'env';
}

function parsePort(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new GuardError(`--port takes a port number from 0 to 65535, not "${v}"`, { exitCode: ExitCode.USAGE });
  return Number(v);
}

export function resolveSettings(flags: RunFlags, env: NodeJS.ProcessEnv = process.env): DaemonSettings {
  const cfg = loadGuardConfig(flags.config, env);
  const server = parseServerConfig(cfg.sections.server, cfg.path);
  const metrics = parseMetricsConfig(cfg.sections.metrics, cfg.path);
  const thresholds = parseHealthConfig(cfg.sections.health, cfg.path, cfg.sections.prune);

  const home = discoverHome({ home: flags.home, env });
  const policySources = resolvePolicy({
    env,
    guardConfig: cfg.path && cfg.sections.prune ? { path: cfg.path, values: cfg.sections.prune } : null,
    picoclawConfig: home.sessionPrune ? { path: home.configPath, values: home.sessionPrune } : null,
  });
  const policy = policyValues(policySources);

  const hostSource = flags.host !== undefined ? 'flag' : cfg.sections.server && 'host' in cfg.sections.server ? 'config' : 'default';
  const host = flags.host ?? server.host;
  if (flags.host !== undefined && (flags.host.trim() === '' || /\s/.test(flags.host))) throw new GuardError(`--host takes an address, not "${flags.host}"`, { exitCode: ExitCode.USAGE });
  const port = flags.port !== undefined ? parsePort(flags.port) : server.port;

  const envToken = env[TOKEN_ENV];
  let token: string | null = server.token;
  let tokenSource: DaemonSettings['tokenSource'] = token ? 'config' : null;
  if (envToken !== undefined && envToken !== '') {
    if (envToken.length < MIN_TOKEN_LENGTH || /\s/.test(envToken)) {
      throw new GuardError(`${TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters without spaces`, { exitCode: ExitCode.USAGE, hint: 'e.g. openssl rand -hex 24' });
    }
    token = envToken;
    tokenSource = 'env';
  }
  if (!isLoopback(host) && token === null) {
    throw new GuardError(`refusing to serve on ${host} without a bearer token: anything but loopback is reachable from the network`, {
      exitCode: ExitCode.USAGE,
      path: cfg.path ?? undefined,
      hint: `set ${TOKEN_ENV} (or server.token in the guard config) to a secret of at least ${MIN_TOKEN_LENGTH} characters, or serve on 127.0.0.1`,
    });
  }

  let intervalSeconds = policy.check_interval_minutes * 60;
  let intervalSource: DaemonSettings['intervalSource'] = 'policy';
  const testInterval = env[INTERVAL_ENV];
  if (testInterval !== undefined && testInterval !== '') {
    if (!/^\d+$/.test(testInterval)) throw new GuardError(`${INTERVAL_ENV} takes a whole number of seconds, not "${testInterval}"`, { exitCode: ExitCode.USAGE });
    intervalSeconds = Number(testInterval);
    intervalSource = 'env';
  }

  return {
    configPath: cfg.path,
    configFlag: flags.config,
    home,
    stateDir: resolveStateDir(flags.stateDir, env),
    sysRoot: flags.sysRoot ?? '/sys',
    procRoot: flags.procRoot ?? '/proc',
    vcgencmd: flags.vcgencmd,
    host,
    hostSource,
    port,
    token,
    tokenSource,
    metrics: { ...metrics, textfile_dir: flags.textfileDir ?? metrics.textfile_dir },
    thresholds,
    policy,
    policySources,
    intervalSeconds,
    intervalSource,
  };
}
