import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { renderConsoleLog } from '../../dev/sample/gatewaylog.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';
import { scenario } from './scenario.js';

const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));

function sampleHome(opts: Parameters<typeof buildSampleHome>[0] extends infer O ? Partial<O> : never = {}) {
  const root = tempDir('pcg-startup-cli-');
  const home = join(root, '.picoclaw');
  const sample = buildSampleHome({
    dir: home,
    sessions: 30,
    seed: 12,
    logLevel: 'info',
    logEvents: true,
    restarts: 6,
    ...opts,
  });
  return { root, home, sample, env: { HOME: root, STATE_DIRECTORY: join(root, 'state') } };
}

describe('picoclaw-guard startup', () => {
  it('prints the table, how the figures were measured, and the summary with the sessions now', () => {
    const { home, env } = sampleHome();
    const r = runCli(['startup', '--home', home, '--wide'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/#\s+STARTED\s+ENDED\s+READY IN\s+BOOTSTRAP GAP\s+INGEST\s+WARNINGS\s+NOTE/);
    expect(r.stdout.match(/^\s*\d+\s+20\d\d-\d\d-\d\d /gm)).toHaveLength(6);
    expect(r.stdout).toContain('Runtime event: gateway.ready duration_ms (1 ms)');
    // The sample home's log registers the implicit main agent (docs/picoclaw.md#startup-messages, step 5).
    expect(r.stdout).toContain('Registered agent → Agent initialized (±1 s, whole-second timestamps)');
    expect(r.stdout).toMatch(/sessions now: \d+ in 3 agent\(s\)/);
    expect(r.stdout).toMatch(/trend: .* rising/);
  });

  it('--json gives the same data; the PID file settles the latest restart', () => {
    const { home, env } = sampleHome();
    const r = runCli(['startup', '--home', home, '--json'], env);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(Object.keys(j)).toEqual(
      expect.arrayContaining([
        'version',
        'source',
        'lines',
        'levels',
        'content_level',
        'timestamps',
        'restarts',
        'summary',
        'notes',
        'advice',
        'sessions_now',
        'prunes',
        'shown_last',
      ]),
    );
    expect(j.restarts.map((x: { end: string }) => x.end)).toEqual([
      'stopped',
      'stopped',
      'crashed',
      'failed',
      'stopped',
      'crashed',
    ]);
    // The sample's PID file names a process that does not exist: the last "running" restart died.
    expect(j.restarts[5].end_detail).toMatch(/no gateway runs now/);
    expect(j.restarts[0].bootstrap_gap).toMatchObject({
      from: 'Registered agent',
      to: 'Agent initialized',
      precision_seconds: 1,
    });
    expect(j.restarts[0].time_to_ready).toMatchObject({ precision_seconds: 0.001 });
    expect(j.sessions_now).toMatchObject({ agents: 3, bootstrapped: { agent: 'main' } });
    expect(j.summary.latest_gap.restart).toBe(6);
  });

  it('--last N shows the last N restarts and sums up those', () => {
    const { home, env } = sampleHome();
    const j = JSON.parse(runCli(['startup', '--home', home, '--json', '--last', '2'], env).stdout);
    expect(j.restarts.map((x: { n: number }) => x.n)).toEqual([5, 6]);
    expect(j.summary.restarts).toBe(2);
    expect(j.shown_last).toBe(2);
    expect(j.restarts_found).toBe(6);
  });

  it("marks the restart after a prune from the guard's history", () => {
    const { home, env, sample } = sampleHome();
    const starts = JSON.parse(runCli(['startup', '--home', home, '--json'], env).stdout).restarts.map(
      (x: { started_at: string }) => Date.parse(x.started_at),
    );
    const at = new Date((starts[3] + starts[4]) / 2).toISOString();
    mkdirSync(env.STATE_DIRECTORY, { recursive: true });
    const entry = {
      at,
      home: sample.home,
      mode: 'apply',
      outcome: 'ok',
      deleted_sessions: 12,
      deleted_orphans: 0,
      freed_bytes: 2_000_000,
      sessions_before: 30,
      sessions_after: 18,
      duration_ms: 40,
      reason: null,
    };
    writeFileSync(join(env.STATE_DIRECTORY, 'prune-history.jsonl'), JSON.stringify(entry) + '\n');
    const j = JSON.parse(runCli(['startup', '--home', home, '--json'], env).stdout);
    expect(j.restarts[4].after_prune).toEqual({ at, deleted_sessions: 12, freed_bytes: 2_000_000 });
    expect(j.prunes[0]).toMatchObject({ deleted_sessions: 12, gap_before: { restart: 3 }, gap_after: { restart: 5 } });
    const text = runCli(['startup', '--home', home, '--state-dir', env.STATE_DIRECTORY, '--wide'], env).stdout;
    expect(text).toContain('after prune (-12 sessions)');
    expect(text).toMatch(/prune .*: deleted 12 sessions .* bootstrap gap \d+ s \(restart 3\) → \d+ s \(restart 5\)/);
  });

  it('--log - reads journald from standard input, with no PicoClaw home at all', () => {
    const root = tempDir();
    const input = renderConsoleLog(scenario('info', true), { journald: {} });
    const r = runCli(['startup', '--log', '-', '--json'], { HOME: root }, input);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.source.path).toBeNull();
    expect(j.timestamps.dates).toBe('journald');
    expect(j.restarts).toHaveLength(7);
    expect(j.sessions_now).toBeNull();
  });

  it('warn level: says plainly there is almost nothing to read and gives the exact settings', () => {
    const r = runCli(['startup', '--log', join(FIX, 'warn-only.log')], { HOME: tempDir() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('There is almost nothing to read');
    expect(r.stdout).toContain('"gateway": { "log_level": "info" }');
    expect(r.stdout).toContain('PICOCLAW_LOG_LEVEL=info');
    expect(r.stdout).toContain('"events": { "logging": { "include": ["agent.*", "gateway.*"] } }');
  });

  it('a missing log: a clear message and exit code 3', () => {
    const r = runCli(['startup', '--log', join(tempDir(), 'gone.log')], { HOME: tempDir() });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^picoclaw-guard: no log file at .*gone\.log\n/);
    const { home, env } = sampleHome();
    rmSync(join(home, 'logs', 'gateway.log'));
    const d = runCli(['startup', '--home', home], env);
    expect(d.code).toBe(3);
    expect(d.stderr).toContain('journalctl -u picoclaw -o short-iso | picoclaw-guard startup --log -');
  });

  it('bad flags: exit code 2', () => {
    const { home, env } = sampleHome();
    for (const bad of ['0', '-1', 'x', '1.5']) {
      const r = runCli(['startup', '--home', home, '--last', bad], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `picoclaw-guard: option '--last <n>' argument '${bad}' is invalid. Expected a whole number of 1 or more.\n`,
      );
    }
    expect(runCli(['startup', '--home', join(tempDir(), 'nohome')], { HOME: tempDir() }).code).toBe(2);
  });

  it('an empty log is a report, not an error', () => {
    const { home, env } = sampleHome();
    writeFileSync(join(home, 'logs', 'gateway.log'), '');
    const r = runCli(['startup', '--home', home], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/gateway\.log: empty/);
    expect(r.stdout).toContain('There is almost nothing to read');
    expect(readFileSync(join(home, 'logs', 'gateway.log'), 'utf8')).toBe('');
  });
});
