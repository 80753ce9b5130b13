import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assertSectionsValid,
  checkSections,
  SECTION_CHECKS,
  uncheckedSections,
} from '../../src/commands/config-sections.js';
import { GUARD_SECTIONS } from '../../src/guard-config.js';
import { parseHealthConfig } from '../../src/health/config.js';
import { parseMetricsConfig, parseServerConfig } from '../../src/daemon/settings.js';
import { parseLogsConfig } from '../../src/logs/config.js';
import { parseNotifyConfig } from '../../src/notify/config.js';
import { resolvePolicy } from '../../src/prune/policy.js';
import { tempDir } from '../support/tmp.js';

/**
 * The all-sections check. Invariant: for any config, `config check` accepts it exactly when every
 * section's own parser accepts it, reports every refused section (not only the first), and never
 * prints a secret; the check every command runs first refuses it exactly then too.
 */

const TOKEN = 'tok_0123456789abcdef_secret';
/** Per section: keys it has (with good and bad values) and a typo of one. */
const KEYS: Record<string, { key: string; values: unknown[] }[]> = {
  prune: [
    { key: 'max_age_days', values: [0, 14, -1, 'x', 1.5] },
    { key: 'enabled', values: [true, 'yes'] },
    { key: 'max_age_day', values: [3] },
  ],
  health: [
    { key: 'temp_warn_celsius', values: [70, -3, 'hot'] },
    { key: 'throttled_now', values: ['warn', 'loud'] },
    { key: 'temp_warn_celsiu', values: [70] },
  ],
  server: [
    { key: 'port', values: [9109, 70000] },
    { key: 'token', values: [TOKEN, 'short', null] },
    { key: 'prot', values: [1] },
  ],
  metrics: [
    { key: 'refresh_seconds', values: [30, 0] },
    { key: 'textfile_dir', values: ['/var/lib/node_exporter', 'relative'] },
    { key: 'refresh_second', values: [30] },
  ],
  logs: [
    { key: 'max_size_mb', values: [10, 0, -1, 'big'] },
    { key: 'keep_parts', values: [5, 0] },
    { key: 'max_size', values: [10] },
  ],
  notify: [
    {
      key: 'targets',
      values: [
        [],
        [{ type: 'ntfy', url: `https://ntfy.sh/${TOKEN}` }],
        [{ type: 'webhook', url: `https://example.net/hook?token=${TOKEN}` }],
        [{ type: 'pager' }],
      ],
    },
    { key: 'min_level', values: ['warn', 'loud'] },
    { key: 'min_levels', values: ['warn'] },
  ],
};

const sectionArb = (name: string) =>
  fc.subarray(KEYS[name]!).chain((keys) =>
    fc
      .tuple(...keys.map((k) => fc.constantFrom(...k.values).map((v) => [k.key, v] as const)))
      .map((kv) => Object.fromEntries(kv)),
  );

const configArb = fc.record(
  Object.fromEntries(GUARD_SECTIONS.map((s) => [s, sectionArb(s)])),
  { requiredKeys: [] },
);

function ownParserAccepts(
  section: string,
  values: Record<string, unknown>,
  all: Partial<Record<string, Record<string, unknown>>>,
  path: string,
): boolean {
  try {
    if (section === 'prune') resolvePolicy({ guardConfig: { path, values } });
    if (section === 'health') parseHealthConfig(values, path, all.prune);
    if (section === 'server') parseServerConfig(values, path);
    if (section === 'metrics') parseMetricsConfig(values, path);
    if (section === 'logs') parseLogsConfig(values, path);
    if (section === 'notify') parseNotifyConfig(values, path, {});
    return true;
  } catch {
    return false;
  }
}

describe('config check: every section', () => {
  it('has one check per section of the file format (a new section needs its line)', () => {
    expect(uncheckedSections()).toEqual([]);
    expect(SECTION_CHECKS.map((c) => c.section).sort()).toEqual([...GUARD_SECTIONS].sort());
  });

  it('accepts a config exactly when every owner accepts each section, lists each refused one, no secret', async () => {
    const dir = tempDir();
    const env = { HOME: dir };
    await fc.assert(
      fc.asyncProperty(configArb, async (cfg) => {
        const path = join(dir, 'c.json');
        writeFileSync(path, JSON.stringify(cfg));
        const r = await checkSections(path, env);
        const want = GUARD_SECTIONS.filter((s) => !ownParserAccepts(s, cfg[s] ?? {}, cfg, path));
        expect(r.sections.filter((s) => !s.ok).map((s) => s.section)).toEqual(want);
        expect(JSON.stringify(r)).not.toContain(TOKEN);
        let threw = false;
        try {
          await assertSectionsValid(path, env);
        } catch {
          threw = true;
        }
        expect(threw).toBe(want.length > 0);
      }),
      { numRuns: 200 },
    );
  });

  it('names the source of each value: default, guard config, env, PicoClaw config.json', async () => {
    const dir = tempDir();
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify({ prune: { max_age_days: 14 }, server: { token: TOKEN } }));
    const home = join(dir, 'home');
    mkdirSync(join(home, 'workspace', 'sessions'), { recursive: true });
    writeFileSync(join(home, 'config.json'), JSON.stringify({ session: { prune: { max_sessions: 50 } } }));
    const env = { HOME: dir, PICOCLAW_SESSION_PRUNE_VACUUM: 'false', PICOCLAW_GUARD_TOKEN: TOKEN + 'x' };
    const r = await checkSections(path, env, home);
    const prune = r.sections.find((s) => s.section === 'prune')!.values;
    const by = (k: string) => prune.find((v) => v.key === k)!;
    expect(by('max_age_days')).toMatchObject({ value: 14, source: 'guard config', from: path });
    expect(by('max_sessions')).toMatchObject({ value: 50, source: 'PicoClaw config.json' });
    expect(by('vacuum')).toMatchObject({ value: false, source: 'env', from: 'PICOCLAW_SESSION_PRUNE_VACUUM' });
    expect(by('enabled')).toMatchObject({ source: 'default' });
    const token = r.sections.find((s) => s.section === 'server')!.values.find((v) => v.key === 'token')!;
    expect(token).toEqual({ key: 'token', value: '(set)', source: 'env', from: 'PICOCLAW_GUARD_TOKEN' });
    expect(JSON.stringify(r)).not.toContain(TOKEN);
  });
  it('shows a cron schedule\'s next run times, and refuses one beside check_interval_minutes naming both', async () => {
    const dir = tempDir();
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify({ prune: { schedule: '30 3 * * *', schedule_timezone: 'Europe/Berlin' } }));
    const r = await checkSections(path, { HOME: dir });
    const next = r.sections.find((x) => x.section === 'prune')!.values.find((v) => v.key === 'schedule_next_runs');
    expect(next?.value).toHaveLength(3);
    for (const t of next!.value as string[]) {
      // 03:30 in Berlin is 01:30 or 02:30 UTC (summer or winter time).
      expect(t).toMatch(/T0[12]:30:00\.000Z$/);
      expect(Date.parse(t)).toBeGreaterThan(Date.now());
    }
    writeFileSync(path, JSON.stringify({ prune: { schedule: '30 3 * * *', check_interval_minutes: 60 } }));
    const both = await checkSections(path, { HOME: dir });
    const prune = both.sections.find((x) => x.section === 'prune')!;
    expect(prune.ok).toBe(false);
    expect(JSON.stringify(prune)).toMatch(/schedule.*check_interval_minutes/);
  });
});
