import { existsSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { ExitCode, GuardError } from '../errors.js';
import { fileId } from '../io/file-id.js';
import { SmallFileError, readSmallText } from '../io/smallfile.js';

/**
 * Where PicoClaw keeps its things, found the way PicoClaw finds them
 * (docs/picoclaw.md#where-things-are: pkg/config/envkeys.go GetHome, cmd/picoclaw/internal/helpers.go
 * GetConfigPath, pkg/agent/instance.go resolveAgentWorkspace, pkg/agent/discovery.go).
 *
 * config.json holds API keys and tokens. Only the keys below are read out of it;
 * the parsed object is dropped at once and no other value ever leaves this file,
 * not even inside an error message.
 */

export interface AgentInfo {
  id: string;
  workspace: string;
  sessionsDir: string;
  isDefault: boolean;
}

export interface GatewayConfig {
  host: string;
  port: number;
  logLevel: string;
}

export interface PicoClawHome {
  home: string;
  /** How the home was found: the --home flag, $PICOCLAW_HOME, or ~/.picoclaw. */
  homeSource: 'flag' | 'env' | 'default';
  configPath: string;
  /** False when config.json does not exist (PicoClaw then runs on its defaults). */
  configFound: boolean;
  defaultWorkspace: string;
  agents: AgentInfo[];
  /** Distinct sessions folders (main and a default:true agent share one). */
  sessionsDirs: { dir: string; agents: string[] }[];
  defaultAgent: string;
  contextManager: string;
  seahorsePath: string;
  pidPath: string;
  logPath: string;
  gateway: GatewayConfig;
  /** The raw `session.prune` block, if this PicoClaw version has one (validated by prune/). */
  sessionPrune: Record<string, unknown> | null;
}

export interface DiscoverOptions {
  home?: string;
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_PORT = 18790;
const DEFAULT_HOST = 'localhost';
const DEFAULT_LOG_LEVEL = 'warn';

function userHome(env: NodeJS.ProcessEnv): string {
  return env.HOME || homedir() || '.';
}

/** Expand a leading `~` as PicoClaw's expandHome does; relative paths are left as they are. */
export function expandHome(p: string, env: NodeJS.ProcessEnv): string {
  if (p === '~') return userHome(env);
  if (p.startsWith('~/')) return join(userHome(env), p.slice(2));
  return p;
}

/** pkg/routing/agent_id.go: lowercase, [a-z0-9_-], at most 64 characters, empty → main. */
export function normalizeAgentId(id: unknown): string {
  const s = typeof id === 'string' ? id.trim().toLowerCase() : '';
  const cleaned = s
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  return cleaned === '' ? 'main' : cleaned;
}

/** A folder's real path when it exists (symlinks resolved), else its resolved path. */
function realDir(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Read config.json; a missing file means PicoClaw's defaults. Errors never quote the file's text. */
export function readConfigJson(path: string): Record<string, unknown> | null {
  let text: string;
  try {
    text = readSmallText(path, 'config');
  } catch (err) {
    if (err instanceof SmallFileError && err.problem === 'absent') return null;
    throw new GuardError(
      `cannot read PicoClaw's config: ${err instanceof SmallFileError ? err.message : String(err)}`,
      {
        exitCode: ExitCode.USAGE,
        path,
        hint: 'config.json must be a readable regular file; check it, or point --home / PICOCLAW_CONFIG elsewhere',
      },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // V8's message quotes the text around the error, which may be an API key: say only where.
    throw new GuardError(`PicoClaw's config ${path} is not valid JSON`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'PicoClaw itself would refuse to start with it; fix the file (e.g. `python3 -m json.tool` shows where)',
    });
  }
  if (!isObject(parsed)) {
    throw new GuardError(`PicoClaw's config ${path} is not a JSON object`, { exitCode: ExitCode.USAGE, path });
  }
  return parsed;
}

/**
 * An existing folder that is not a PicoClaw home (no config.json, no workspace/, no
 * sessions folder: say the user's own home directory, given to --home by mistake):
 * the reason, else null. A fresh PicoClaw with only workspace/sessions/ is a home.
 * Checked before anything is written there (the prune lock, the history).
 */
export function notAPicoClawHome(h: PicoClawHome): string | null {
  if (h.configFound) return null;
  if (existsSync(join(h.home, 'workspace')) || existsSync(h.defaultWorkspace)) return null;
  if (h.sessionsDirs.some((d) => existsSync(d.dir))) return null;
  return `${h.home} is not a PicoClaw home: it has no config.json, no workspace/ and no sessions folder`;
}

/** Throw the usage error for a missing home or a folder that is not one. */
export function assertPicoClawHome(h: PicoClawHome): void {
  const how =
    h.homeSource === 'flag' ? '--home' : h.homeSource === 'env' ? '$PICOCLAW_HOME' : 'the default ~/.picoclaw';
  const hint = 'pass --home <dir> or set PICOCLAW_HOME to the folder that holds config.json and workspace/';
  if (!existsSync(h.home))
    throw new GuardError(`no PicoClaw home at ${h.home} (from ${how})`, {
      exitCode: ExitCode.USAGE,
      path: h.home,
      hint,
    });
  const why = notAPicoClawHome(h);
  if (why)
    throw new GuardError(`${why} (from ${how}); nothing was read or written`, {
      exitCode: ExitCode.USAGE,
      path: h.home,
      hint,
    });
}

export function discoverHome(opts: DiscoverOptions = {}): PicoClawHome {
  const env = opts.env ?? process.env;
  let home: string;
  let homeSource: PicoClawHome['homeSource'];
  if (opts.home) {
    home = resolve(expandHome(opts.home, env));
    homeSource = 'flag';
  } else if (env.PICOCLAW_HOME) {
    home = resolve(expandHome(env.PICOCLAW_HOME, env));
    homeSource = 'env';
  } else {
    home = join(userHome(env), '.picoclaw');
    homeSource = 'default';
  }
  const configPath = env.PICOCLAW_CONFIG ? resolve(expandHome(env.PICOCLAW_CONFIG, env)) : join(home, 'config.json');
  const raw = readConfigJson(configPath);

  // Only these keys are read. Nothing else of `raw` is kept.
  const agentsRaw = isObject(raw?.agents) ? raw.agents : {};
  const defaults = isObject(agentsRaw.defaults) ? agentsRaw.defaults : {};
  const list = Array.isArray(agentsRaw.list) ? agentsRaw.list.filter(isObject) : [];
  const gatewayRaw = isObject(raw?.gateway) ? raw.gateway : {};
  const sessionRaw = isObject(raw?.session) ? raw.session : {};
  const sessionPrune = isObject(sessionRaw.prune) ? { ...sessionRaw.prune } : null;

  let defaultWorkspace =
    typeof defaults.workspace === 'string' && defaults.workspace !== '' ? defaults.workspace : join(home, 'workspace');
  if (env.PICOCLAW_AGENTS_DEFAULTS_WORKSPACE) defaultWorkspace = env.PICOCLAW_AGENTS_DEFAULTS_WORKSPACE;
  defaultWorkspace = expandHome(defaultWorkspace, env);

  let contextManager =
    typeof defaults.context_manager === 'string' && defaults.context_manager !== ''
      ? defaults.context_manager
      : 'legacy';
  if (env.PICOCLAW_AGENTS_DEFAULTS_CONTEXT_MANAGER) contextManager = env.PICOCLAW_AGENTS_DEFAULTS_CONTEXT_MANAGER;

  const agents: AgentInfo[] = [];
  const seen = new Set<string>();
  const entries = list.length > 0 ? list : [{ id: 'main' }];
  for (const a of entries) {
    const id = normalizeAgentId(a.id);
    if (seen.has(id)) continue;
    seen.add(id);
    const explicit = typeof a.workspace === 'string' && a.workspace !== '' ? expandHome(a.workspace, env) : null;
    const isDefaultFlag = a.default === true;
    let workspace: string;
    if (explicit) workspace = explicit;
    else if (isDefaultFlag || id === 'main') workspace = defaultWorkspace;
    else workspace = join(dirname(defaultWorkspace), `workspace-${id}`);
    agents.push({ id, workspace, sessionsDir: join(workspace, 'sessions'), isDefault: false });
  }
  // pkg/agent/discovery.go defaultAgentIDLocked: main, else the first default:true, else the first.
  const flagged = entries.map((a, i) => ({ a, i })).find(({ a }) => a.default === true);
  const defaultAgent =
    agents.find((a) => a.id === 'main')?.id ?? (flagged ? normalizeAgentId(flagged.a.id) : agents[0]!.id);
  for (const a of agents) a.isDefault = a.id === defaultAgent;

  // One entry per folder on disk, not per path: an agent whose workspace is a symlink to another
  // agent's, a bind mount of it, or a second spelling of it reaches the same files, and each file
  // must be one session once (counted, deleted once). A folder is its device and inode; one that
  // does not exist yet is its real path.
  const byDir = new Map<string, { dir: string; agents: string[] }>();
  for (const a of agents) {
    const id = fileId(a.sessionsDir) ?? `path:${realDir(a.sessionsDir)}`;
    const e = byDir.get(id);
    if (e) e.agents.push(a.id);
    else byDir.set(id, { dir: a.sessionsDir, agents: [a.id] });
  }
  const sessionsDirs = [...byDir.values()];

  const defaultWs = agents.find((a) => a.id === defaultAgent)!.workspace;
  let host = typeof gatewayRaw.host === 'string' && gatewayRaw.host !== '' ? gatewayRaw.host : DEFAULT_HOST;
  if (env.PICOCLAW_GATEWAY_HOST) host = env.PICOCLAW_GATEWAY_HOST;
  let port = typeof gatewayRaw.port === 'number' && Number.isInteger(gatewayRaw.port) ? gatewayRaw.port : DEFAULT_PORT;
  if (env.PICOCLAW_GATEWAY_PORT && /^\d+$/.test(env.PICOCLAW_GATEWAY_PORT)) port = Number(env.PICOCLAW_GATEWAY_PORT);
  let logLevel =
    typeof gatewayRaw.log_level === 'string' && gatewayRaw.log_level !== '' ? gatewayRaw.log_level : DEFAULT_LOG_LEVEL;
  if (env.PICOCLAW_LOG_LEVEL) logLevel = env.PICOCLAW_LOG_LEVEL;

  return {
    home,
    homeSource,
    configPath,
    configFound: raw !== null,
    defaultWorkspace,
    agents,
    sessionsDirs,
    defaultAgent,
    contextManager,
    // pkg/agent/context_seahorse.go: agent.Workspace + "/sessions/seahorse.db" of the default agent.
    seahorsePath: join(defaultWs, 'sessions', 'seahorse.db'),
    pidPath: join(home, '.picoclaw.pid'),
    logPath: join(home, 'logs', 'gateway.log'),
    gateway: { host, port, logLevel: logLevel.toLowerCase() },
    sessionPrune,
  };
}

/** One folder (or seahorse.db) a prune pass reads and may delete from, and whether it lies inside the home. */
export interface PlacedPath {
  kind: 'sessions' | 'seahorse.db';
  /** The path as configured (config.json, `~` expanded). */
  path: string;
  /** Its real path: symlinks resolved (of the nearest existing folder above it, when it does not exist yet). */
  real: string;
  agents: string[];
  /** Under the home's real path, or below a folder that is the home itself by device and inode (a bind mount). */
  inside: boolean;
}

/** Where a pass works: the home's real path, and every sessions folder and seahorse.db, placed. */
export interface Whereabouts {
  home: string;
  home_real: string;
  paths: PlacedPath[];
  /** How many of `paths` lie outside the home. */
  outside: number;
}

/** The real path of p, or of its nearest existing ancestor with the rest appended (a folder not made yet). */
function realOrAncestor(p: string): string {
  const abs = resolve(p);
  let head = abs;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...rest.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return abs;
      rest.push(head.slice(up.length).replace(/^\/+/, ''));
      head = up;
    }
  }
}

function identity(p: string): string | null {
  try {
    const s = statSync(p, { bigint: true });
    return `${s.dev}:${s.ino}`;
  } catch {
    return null;
  }
}

/**
 * Whether `real` lies inside the home. Two tests, either enough: its real path starts with the
 * home's real path; or one of its real ancestors is the home's own folder by device and inode (the
 * home was given through a bind mount of the folder config.json names by its other path). A copy
 * (`cp -a`) of a home whose config.json names its workspace by an absolute path or by `~/...`
 * fails both: its sessions folders are the original's.
 */
export function insideHome(real: string, homeReal: string, homeId: string | null): boolean {
  if (real === homeReal || real.startsWith(homeReal.endsWith(sep) ? homeReal : homeReal + sep)) return true;
  if (homeId === null) return false;
  for (let d = real; ; d = dirname(d)) {
    if (identity(d) === homeId) return true;
    if (dirname(d) === d) return false;
  }
}

/** Every sessions folder and the seahorse.db of a home, by real path, each marked inside or outside the home. */
export function placePaths(h: PicoClawHome): Whereabouts {
  const homeReal = realOrAncestor(h.home);
  const homeId = identity(h.home);
  const paths: PlacedPath[] = [];
  const place = (kind: PlacedPath['kind'], path: string, agents: string[]) => {
    const real = realOrAncestor(path);
    paths.push({ kind, path, real, agents, inside: insideHome(real, homeReal, homeId) });
  };
  for (const d of h.sessionsDirs) place('sessions', d.dir, d.agents);
  place('seahorse.db', h.seahorsePath, [h.defaultAgent]);
  return { home: h.home, home_real: homeReal, paths, outside: paths.filter((p) => !p.inside).length };
}
