import { errorMessage, GuardError } from '../errors.js';
import { GUARD_SECTIONS, loadGuardConfig, type GuardConfig, type GuardSection } from '../guard-config.js';
import { discoverHome } from '../picoclaw/home.js';
import { resolvePolicy, type ResolvedPolicy } from '../prune/policy.js';

/**
 * Every section of the guard config, validated by its owner, in one list: `config check` runs them all
 * and prints each effective value with its source, and every command that reads the guard config runs
 * them first (cli.ts), so a wrong `health.*` key fails `prune` as it fails `health`. A new section is
 * one line in SECTION_CHECKS (its owner's parser, and `rowsOf` for the sources); a test checks that
 * every section of GUARD_SECTIONS has its line.
 */

/** One effective value: what it is and where it came from. Secrets are shown as "(set)", never as their value. */
export interface ValueRow {
  key: string;
  value: unknown;
  source: 'default' | 'guard config' | 'PicoClaw config.json' | 'flag' | 'env';
  from: string | null;
}

export interface CheckContext {
  config: GuardConfig;
  env: NodeJS.ProcessEnv;
  /** --home, for PicoClaw's config.json (session.prune). */
  home?: string;
}

export interface SectionCheck {
  section: GuardSection;
  /**
   * Validates the section (throws a GuardError naming the file and key); returns its effective values. Its
   * owner's module is imported when it runs: a command pays for a section's code only when the file sets it.
   */
  check: (c: CheckContext) => Promise<ValueRow[]> | ValueRow[];
}

/** Keys whose values are secrets: shown as set or not. */
const SECRET = /token|secret|password/i;

/** Rows of a parsed section: a key the file sets is from the guard config, any other the default. */
export function rowsOf(values: object, c: CheckContext, section: GuardSection): ValueRow[] {
  const raw = c.config.sections[section] ?? {};
  return Object.entries(values as Record<string, unknown>).map(([key, value]) => ({
    key,
    value: SECRET.test(key) ? (value === null || value === undefined ? null : '(set)') : value,
    source: Object.hasOwn(raw, key) ? 'guard config' : 'default',
    from: Object.hasOwn(raw, key) ? c.config.path : null,
  }));
}

const SOURCE: Record<ResolvedPolicy[keyof ResolvedPolicy]['source'], ValueRow['source']> = {
  default: 'default',
  'guard-config': 'guard config',
  'picoclaw-config': 'PicoClaw config.json',
  flag: 'flag',
  env: 'env',
};

async function pruneRows(c: CheckContext): Promise<ValueRow[]> {
  // PicoClaw's config.json is read only when there is a home to read it from: the check is about the guard's config.
  let picoclaw: { path: string; values: Record<string, unknown> } | null = null;
  try {
    const home = discoverHome({ home: c.home, env: c.env });
    if (home.sessionPrune) picoclaw = { path: home.configPath, values: home.sessionPrune };
  } catch (err) {
    if (c.home !== undefined) throw err;
  }
  const p = resolvePolicy({
    env: c.env,
    guardConfig:
      c.config.path && c.config.sections.prune ? { path: c.config.path, values: c.config.sections.prune } : null,
    picoclawConfig: picoclaw,
  });
  const rows: ValueRow[] = Object.entries(p).map(([key, v]) => ({
    key,
    value: v.value,
    source: SOURCE[v.source],
    from: v.from,
  }));
  // The next run times of a cron schedule (its errors, such as a schedule beside check_interval_minutes, too).
  // Its module (and croner) is loaded only for a schedule: most passes run every check_interval_minutes.
  const schedule = p.schedule.value === null ? null : (await import('../daemon/schedule.js')).scheduleOf(p);
  if (schedule)
    rows.push({
      key: 'schedule_next_runs',
      value: schedule.nextRuns(3, Date.now()).map((ms) => new Date(ms).toISOString()),
      source: SOURCE[p.schedule.source],
      from: p.schedule.from,
    });
  return rows;
}

/** Targets by their label only (an ntfy topic, a URL's path or query, a command's arguments may be secrets). */
async function notifyRows(c: CheckContext): Promise<ValueRow[]> {
  const { parseNotifyConfig } = await import('../notify/config.js');
  const { targetLabel } = await import('../notify/redact.js');
  const cfg = parseNotifyConfig(c.config.sections.notify, c.config.path, c.env);
  const rows = rowsOf(cfg, c, 'notify');
  const { NOTIFY_URL_ENV } = await import('../notify/config.js');
  const fromEnv = !!c.env[NOTIFY_URL_ENV];
  for (const r of rows)
    if (r.key === 'targets') {
      r.value = cfg.targets.map(targetLabel);
      if (fromEnv) Object.assign(r, { source: 'env' as const, from: NOTIFY_URL_ENV });
    }
  return rows;
}

async function serverRows(c: CheckContext): Promise<ValueRow[]> {
  const { parseServerConfig, TOKEN_ENV } = await import('../daemon/settings.js');
  const rows = rowsOf(parseServerConfig(c.config.sections.server, c.config.path), c, 'server');
  const t = c.env[TOKEN_ENV];
  if (t !== undefined && t !== '')
    for (const r of rows)
      if (r.key === 'token') Object.assign(r, { value: '(set)', source: 'env' as const, from: TOKEN_ENV });
  return rows;
}

/** One line a section. */
export const SECTION_CHECKS: SectionCheck[] = [
  { section: 'prune', check: pruneRows },
  {
    section: 'health',
    check: async (c) =>
      rowsOf(
        (await import('../health/config.js')).parseHealthConfig(
          c.config.sections.health,
          c.config.path,
          c.config.sections.prune,
        ),
        c,
        'health',
      ),
  },
  { section: 'server', check: serverRows },
  {
    section: 'metrics',
    check: async (c) =>
      rowsOf(
        (await import('../daemon/settings.js')).parseMetricsConfig(c.config.sections.metrics, c.config.path),
        c,
        'metrics',
      ),
  },
  {
    section: 'logs',
    check: async (c) =>
      rowsOf((await import('../logs/config.js')).parseLogsConfig(c.config.sections.logs, c.config.path), c, 'logs'),
  },
  { section: 'notify', check: notifyRows },
];

export interface SectionResult {
  section: GuardSection;
  ok: boolean;
  /** The error's message and hint when the section is refused. */
  error: { message: string; hint: string | null } | null;
  values: ValueRow[];
}

/**
 * Load the guard config (a file that cannot be read or parsed throws, exit 2) and check every section,
 * each on its own: one refused section does not hide the errors of the next.
 */
export async function checkSections(
  configFlag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  home?: string,
): Promise<{ path: string | null; sections: SectionResult[] }> {
  const config = loadGuardConfig(configFlag, env);
  const c: CheckContext = { config, env, home };
  const sections: SectionResult[] = [];
  for (const s of SECTION_CHECKS) {
    try {
      sections.push({ section: s.section, ok: true, error: null, values: await s.check(c) });
    } catch (err) {
      if (!(err instanceof GuardError)) throw err;
      const error = { message: errorMessage(err), hint: err.hint ?? null };
      sections.push({ section: s.section, ok: false, error, values: [] });
    }
  }
  return { path: config.path, sections };
}

/**
 * For every command that reads the guard config: the first refused section is the error (exit 2). A section
 * the file does not set is its defaults, valid by construction, and its code is not loaded; `prune` is always
 * checked (its environment variables and PicoClaw's session.prune are part of it).
 */
export async function assertSectionsValid(
  configFlag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  home?: string,
): Promise<void> {
  const c: CheckContext = { config: loadGuardConfig(configFlag, env), env, home };
  for (const s of SECTION_CHECKS) if (s.section === 'prune' || c.config.sections[s.section]) await s.check(c);
}

/** Sections of the file format without a line above: a test fails on them. */
export function uncheckedSections(): string[] {
  return GUARD_SECTIONS.filter((s) => !SECTION_CHECKS.some((c) => c.section === s));
}
