import { isAbsolute } from 'node:path';
import { field, readSection, sectionNaming, type Field } from '../config/section.js';
import { ExitCode, GuardError } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { parseHealthConfig, type HealthThresholds } from '../health/config.js';
import { resolveStateDir } from '../io/statedir.js';
import { isLoopback } from './server.js';
import { scheduleOf, type PassSchedule } from './schedule.js';
import { parseLogsConfig, type LogsConfig } from '../logs/config.js';
import { discoverHome, type PicoClawHome } from '../picoclaw/home.js';
import { policyValues, resolvePolicy, type Policy, type ResolvedPolicy } from '../prune/policy.js';
import { parseNotifyConfig, type NotifyConfig } from '../notify/config.js';
import type { Rules } from '../notify/detect.js';
import { rulesOf } from '../notify/notifier.js';
import { DEFAULT_TARGET_SECONDS } from '../startup-model/learn.js';

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

const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const posInt = (max: number): Field<number> =>
  field(`a whole number from 1 to ${max}`, ['number'], (v) => isWhole(v) && v >= 1 && v <= max);

const SERVER_FIELDS: { [K in keyof ServerConfig]: Field<ServerConfig[K]> } = {
  host: field(
    'an address such as "127.0.0.1" or "::1"',
    ['string'],
    (v) => typeof v === 'string' && v.trim() !== '' && !/\s/.test(v),
  ),
  port: field('a port number from 0 to 65535', ['number'], (v) => isWhole(v) && v >= 0 && v <= 65535),
  token: field(
    `null or a string of at least ${MIN_TOKEN_LENGTH} characters without spaces`,
    ['null', 'string'],
    (v) => v === null || (typeof v === 'string' && v.length >= MIN_TOKEN_LENGTH && !/\s/.test(v)),
  ),
};

const METRICS_FIELDS: { [K in keyof MetricsConfig]: Field<MetricsConfig[K]> } = {
  textfile_dir: field(
    'null or an absolute folder path',
    ['null', 'string'],
    (v) => v === null || (typeof v === 'string' && isAbsolute(v)),
  ),
  refresh_seconds: posInt(3600),
  sessions_refresh_seconds: posInt(86400),
  startup_refresh_seconds: posInt(86400),
};

export function parseServerConfig(section: Record<string, unknown> | undefined, path: string | null): ServerConfig {
  const naming = sectionNaming('server', path, Object.keys(SERVER_FIELDS));
  return { ...DEFAULT_SERVER, ...readSection(SERVER_FIELDS, section, naming) };
}

export function parseMetricsConfig(section: Record<string, unknown> | undefined, path: string | null): MetricsConfig {
  const naming = sectionNaming('metrics', path, Object.keys(METRICS_FIELDS));
  return { ...DEFAULT_METRICS, ...readSection(METRICS_FIELDS, section, naming) };
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
  /** --schedule: prune.schedule from the command line. */
  schedule?: string;
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
  /** The `logs` section: when the daemon cuts gateway.log and gateway_panic.log (src/logs/). */
  logs: LogsConfig;
  thresholds: HealthThresholds;
  policy: Policy;
  /** The same values with where each came from (the status page shows them). */
  policySources: ResolvedPolicy;
  /** Seconds between scheduled passes; 0: none. */
  intervalSeconds: number;
  /** prune.schedule: passes on a cron schedule instead of every intervalSeconds; null: the interval. */
  schedule: PassSchedule | null;
  intervalSource: 'policy' | 'env';
  /** Push notifications (section `notify`, plus PICOCLAW_GUARD_NOTIFY_URL); no targets: off. */
  notify: NotifyConfig;
  notifyRules: Rules;
}

function parsePort(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535)
    throw new GuardError(`--port takes a port number from 0 to 65535, not "${v}"`, { exitCode: ExitCode.USAGE });
  return Number(v);
}

export function resolveSettings(flags: RunFlags, env: NodeJS.ProcessEnv = process.env): DaemonSettings {
  const cfg = loadGuardConfig(flags.config, env);
  const server = parseServerConfig(cfg.sections.server, cfg.path);
  const metrics = parseMetricsConfig(cfg.sections.metrics, cfg.path);
  const logs = parseLogsConfig(cfg.sections.logs, cfg.path);
  const thresholds = parseHealthConfig(cfg.sections.health, cfg.path, cfg.sections.prune);
  const notify = parseNotifyConfig(cfg.sections.notify, cfg.path, env);

  const home = discoverHome({ home: flags.home, env });
  const policySources = resolvePolicy({
    flags: flags.schedule !== undefined ? { schedule: flags.schedule } : undefined,
    env,
    guardConfig: cfg.path && cfg.sections.prune ? { path: cfg.path, values: cfg.sections.prune } : null,
    picoclawConfig: home.sessionPrune ? { path: home.configPath, values: home.sessionPrune } : null,
  });
  const policy = policyValues(policySources);

  const hostSource =
    flags.host !== undefined ? 'flag' : cfg.sections.server && 'host' in cfg.sections.server ? 'config' : 'default';
  const host = flags.host ?? server.host;
  if (flags.host !== undefined && (flags.host.trim() === '' || /\s/.test(flags.host)))
    throw new GuardError(`--host takes an address, not "${flags.host}"`, { exitCode: ExitCode.USAGE });
  const port = flags.port !== undefined ? parsePort(flags.port) : server.port;

  const envToken = env[TOKEN_ENV];
  let token: string | null = server.token;
  let tokenSource: DaemonSettings['tokenSource'] = token ? 'config' : null;
  if (envToken !== undefined && envToken !== '') {
    if (envToken.length < MIN_TOKEN_LENGTH || /\s/.test(envToken)) {
      throw new GuardError(`${TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters without spaces`, {
        exitCode: ExitCode.USAGE,
        hint: 'e.g. openssl rand -hex 24',
      });
    }
    token = envToken;
    tokenSource = 'env';
  }
  if (!isLoopback(host) && token === null) {
    throw new GuardError(
      `refusing to serve on ${host} without a bearer token: anything but loopback is reachable from the network`,
      {
        exitCode: ExitCode.USAGE,
        path: cfg.path ?? undefined,
        hint:
          `set ${TOKEN_ENV} (or server.token in the guard config) to a secret of at least ` +
          `${MIN_TOKEN_LENGTH} characters, or serve on 127.0.0.1`,
      },
    );
  }

  // A bad cron expression or time zone is an error here, at start and on SIGHUP, naming the key and the value.
  let schedule = scheduleOf(policySources);
  let intervalSeconds = policy.check_interval_minutes * 60;
  let intervalSource: DaemonSettings['intervalSource'] = 'policy';
  const testInterval = env[INTERVAL_ENV];
  if (testInterval !== undefined && testInterval !== '') {
    if (!/^\d+$/.test(testInterval))
      throw new GuardError(`${INTERVAL_ENV} takes a whole number of seconds, not "${testInterval}"`, {
        exitCode: ExitCode.USAGE,
      });
    intervalSeconds = Number(testInterval);
    intervalSource = 'env';
    schedule = null;
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
    logs,
    thresholds,
    policy,
    policySources,
    intervalSeconds,
    intervalSource,
    schedule,
    notify,
    notifyRules: rulesOf(notify, thresholds, policy.max_bootstrap_seconds, DEFAULT_TARGET_SECONDS),
  };
}
