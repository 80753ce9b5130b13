import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolvePolicy, policyValues } from '../../src/prune/policy.js';
import {
  renderMetrics,
  emptyPruneStats,
  REFRESH_SOURCES,
  type MetricsSnapshot,
} from '../../src/metrics/guard-metrics.js';
import { runCli } from '../support/cli.js';
import { handHome, snapshot, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * The cron keys through the CLI: flags, environment, the dry-run table, `sessions`, and defaults that change nothing.
 */

const uuid = (n: number) => `0b8e2f8a-1c2d-4e5f-8a9b-${String(n).padStart(12, '0')}`;
const day = (d: number) => `2026-11-${String(d).padStart(2, '0')}T10:00:00Z`;

function board(): string {
  const home = join(tempDir(), '.picoclaw');
  const sessions: HandSession[] = [
    ...[1, 2, 3, 4, 5, 6].map((d) => ({ key: `agent:cron-3f9a1c2b7d4e5f60-${uuid(d)}`, updated: day(20 + d) })),
    ...[1, 2].map((d) => ({ key: `agent:cron-daily-backup-${uuid(10 + d)}`, updated: day(10 + d) })),
    { key: 'sk_v1_chat_old', updated: day(2) },
    { key: 'sk_v1_chat_mid', updated: day(5) },
    { key: 'sk_v1_chat_new', updated: day(29) },
  ];
  handHome(home, sessions, { seahorse: false });
  return home;
}

describe('cron keys on the command line', () => {
  it("--cron-keep-runs: the dry-run names each cron run's job and deletes the older runs of each job only", () => {
    const home = board();
    const before = snapshot(home);
    const r = runCli([
      'prune',
      '--home',
      home,
      '--cron-keep-runs',
      '2',
      '--max-age-days',
      '0',
      '--max-sessions',
      '0',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.policy.cron_keep_runs).toEqual({ value: 2, source: 'flag', from: '--cron-keep-runs' });
    const del = j.sessions.filter((s: { action: string }) => s.action === 'delete');
    expect(del.map((s: { key: string; reason: string; cron_job: string }) => [s.cron_job, s.reason])).toEqual([
      ['3f9a1c2b7d4e5f60', 'cron_keep_runs'],
      ['3f9a1c2b7d4e5f60', 'cron_keep_runs'],
      ['3f9a1c2b7d4e5f60', 'cron_keep_runs'],
      ['3f9a1c2b7d4e5f60', 'cron_keep_runs'],
    ]);
    expect(j.cron.jobs).toEqual([
      {
        job: '3f9a1c2b7d4e5f60',
        runs: 6,
        kept: 2,
        delete: 4,
        newest: '2026-11-26T10:00:00.000Z',
        bytes: expect.any(Number),
      },
      {
        job: 'daily-backup',
        runs: 2,
        kept: 2,
        delete: 0,
        newest: '2026-11-12T10:00:00.000Z',
        bytes: expect.any(Number),
      },
    ]);
    const text = runCli([
      'prune',
      '--home',
      home,
      '--cron-keep-runs',
      '2',
      '--max-age-days',
      '0',
      '--max-sessions',
      '0',
      '--wide',
    ]).stdout;
    expect(text).toMatch(/^ACTION .* BYTES +CRON JOB$/m);
    expect(text).toMatch(/DELETE +older run of its cron job \(cron_keep_runs\) .* 3f9a1c2b7d4e5f60$/m);
    expect(text).toMatch(/policy: .*cron_keep_runs=2 \(flag\)/);
    expect(text).toMatch(/cron runs: 8 of 2 job\(s\); keep the newest 2 run\(s\) per job; would delete 4/);
    expect(snapshot(home)).toEqual(before);
  });

  it(
    'PICOCLAW_SESSION_PRUNE_MAX_SESSIONS_COUNTS_CRON=false: max_sessions caps ' + 'the chats, and the cron runs stay',
    () => {
      const home = board();
      const env = { PICOCLAW_SESSION_PRUNE_MAX_SESSIONS_COUNTS_CRON: 'false' };
      const j = JSON.parse(
        runCli(['prune', '--home', home, '--max-sessions', '2', '--max-age-days', '0', '--json'], env).stdout,
      );
      expect(j.policy.max_sessions_counts_cron).toEqual({
        value: false,
        source: 'env',
        from: 'PICOCLAW_SESSION_PRUNE_MAX_SESSIONS_COUNTS_CRON',
      });
      expect(
        j.sessions.filter((s: { action: string }) => s.action === 'delete').map((s: { key: string }) => s.key),
      ).toEqual(['sk_v1_chat_old']);
      // PicoClaw's rule (the default): the runs count, and the chats go first.
      const pc = JSON.parse(
        runCli(['prune', '--home', home, '--max-sessions', '2', '--max-age-days', '0', '--json']).stdout,
      );
      expect(
        pc.sessions
          .filter((s: { key: string; action: string }) => s.action === 'delete' && s.key.startsWith('sk_v1_'))
          .map((s: { key: string }) => s.key),
      ).toEqual(['sk_v1_chat_old', 'sk_v1_chat_mid']);
    },
  );

  it('at the defaults the text report is what it was: no new policy entries, no job column, no cron line', () => {
    const home = board();
    const text = runCli(['prune', '--home', home, '--wide']).stdout;
    expect(text).toMatch(
      /^policy: max_age_days=30 {2}max_sessions=100 {2}max_db_size_mb=128 {2}vacuum=true {2}archive_dir=-$/m,
    );
    expect(text).toMatch(/^ACTION +REASON +AGENT +KEY +LAST ACTIVITY +AGE +BYTES$/m);
    expect(text).not.toMatch(/cron runs:|startup budget:|CRON JOB/);
  });

  it('rejects a bad value with the source and the key', () => {
    const r = runCli(['prune', '--home', board(), '--max-sessions-counts-cron', 'maybe']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-sessions-counts-cron: max_sessions_counts_cron must be true or false/);
    expect(() => resolvePolicy({ env: { PICOCLAW_SESSION_PRUNE_CRON_KEEP_RUNS: '-1' } })).toThrow(
      /PICOCLAW_SESSION_PRUNE_CRON_KEEP_RUNS.*cron_keep_runs/,
    );
    expect(
      policyValues(
        resolvePolicy({ guardConfig: { path: '/g.json', values: { cron_keep_runs: 5, max_bootstrap_seconds: 30 } } }),
      ),
    ).toMatchObject({ cron_keep_runs: 5, max_bootstrap_seconds: 30 });
    // PicoClaw's own session.prune has no such keys.
    expect(() => resolvePolicy({ picoclawConfig: { path: '/h/config.json', values: { cron_keep_runs: 5 } } })).toThrow(
      /cron_keep_runs is not a known prune key/,
    );
  });

  it('`sessions` groups cron runs by job: runs, newest, bytes', () => {
    const home = board();
    const j = JSON.parse(runCli(['sessions', '--home', home, '--json']).stdout);
    expect(j.cron_jobs.map((c: { job: string; runs: number; newest: string }) => [c.job, c.runs, c.newest])).toEqual([
      ['3f9a1c2b7d4e5f60', 6, '2026-11-26T10:00:00.000Z'],
      ['daily-backup', 2, '2026-11-12T10:00:00.000Z'],
    ]);
    expect(j.cron_jobs[0].bytes).toBeGreaterThan(0);
    const text = runCli(['sessions', '--home', home, '--wide']).stdout;
    expect(text).toMatch(
      /Cron jobs \(each agent-turn run is its own session\):\nJOB +RUNS +NEWEST RUN +AGE +BYTES\n[- ]+\n3f9a1c2b7d4e5f60 +6 +2026-11-26T10:00:00Z/,
    );
  });
});

describe('the prediction metric', () => {
  const snap = (prediction: MetricsSnapshot['prediction']): MetricsSnapshot => ({
    version: '0',
    health: null,
    startup: null,
    prune: emptyPruneStats(),
    seahorse_limit_bytes: null,
    refresh: Object.fromEntries(
      REFRESH_SOURCES.map((s) => [s, { count: 0, last_duration_seconds: null, last_at_ms: null }]),
    ) as MetricsSnapshot['refresh'],
    prediction,
  });
  it('exports the predicted gap and its ± when there is a model, and nothing when there is none', () => {
    const text = renderMetrics(snap({ predicted_seconds: 48.2, error_seconds: 9.1 }));
    expect(text).toContain('picoclaw_guard_bootstrap_predicted_seconds 48.2\n');
    expect(text).toContain('picoclaw_guard_bootstrap_prediction_error_seconds 9.1\n');
    expect(renderMetrics(snap({ predicted_seconds: null, error_seconds: null }))).not.toContain('bootstrap_predicted');
    expect(renderMetrics(snap(null))).not.toContain('bootstrap_predicted');
  });
});
