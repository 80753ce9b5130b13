import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markerPath } from '../../src/state/marker.js';
import { HISTORY_FILE } from '../../src/state/history.js';
import { integrity, writeSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import {
  countingVcgencmd,
  fakeGateway,
  metric,
  PROMTOOL,
  promtoolCheckMetrics,
  refreshes,
  sampleHome,
  startDaemon,
  until,
  writeConfig,
} from './support.js';

/**
 * The real daemon (`node dist/src/cli.js run`) against a sample home on a fixture board,
 * with a fake gateway served by this process. Intervals are shortened with
 * PICOGUARD_INTERVAL_SECONDS (tests only; check_interval_minutes is in minutes).
 */
const ENABLED = { prune: { enabled: true, max_age_days: 30 } };
const HEALTH_KEYS = [
  'status',
  'problems',
  'collected_at',
  'collect_duration_seconds',
  'board',
  'temperature',
  'throttle',
  'cpufreq',
  'resources',
  'filesystem',
  'storage',
  'picoclaw',
  'thresholds',
];

/** An old session (a victim for the next pass) written straight into the main sessions folder. */
function addOldSession(sessionsDir: string, key: string): void {
  // 45 days old: past max_age_days, and no long silence before the cutoff (which would make the age check doubt
  // the clock: docs/bad-input.md#the-clock).
  const t = new Date(Date.now() - 45 * 86_400_000).toISOString();
  writeSession(sessionsDir, { key, updated: t, created: t, lines: 3 });
}

describe('picoclaw-guard run: the endpoints', () => {
  it('serves /health, /metrics, /startup and /prune from its cache; promtool accepts /metrics', async () => {
    const gw = await fakeGateway(200);
    const h = sampleHome({ gatewayPort: gw });
    const vcg = countingVcgencmd(h.root);
    const d = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      config: writeConfig(h.root, ENABLED),
      vcgencmd: vcg.path,
      env: { PICOGUARD_INTERVAL_SECONDS: '3600' },
    });

    // /health: the health report, as `health --json` prints it; 0x50000 = under-voltage and throttling since boot →
    // WARN → 200.
    const health = await d.get('/health');
    expect(health.status).toBe(200);
    expect(health.headers['content-type']).toBe('application/json; charset=utf-8');
    const hj = JSON.parse(health.body);
    expect(Object.keys(hj)).toEqual(HEALTH_KEYS);
    expect(hj).toMatchObject({
      status: 'WARN',
      throttle: { get_throttled: '0x50000', under_voltage: { since_boot: true } },
      picoclaw: { available: true, gateway: { state: 'ready' } },
    });
    expect(hj.picoclaw.last_bootstrap_gap_seconds).toBeGreaterThan(0);
    expect(health.body).not.toContain('sampletoken');

    // The first pass runs about a second after the start.
    const pass = await d.waitForLog((l) => l.msg === 'prune pass');
    expect(pass).toMatchObject({ outcome: 'ok', exit_code: 0, gateway: 'ready' });
    expect(pass.deleted_sessions).toBeGreaterThan(0);

    // /prune: that pass's report.
    const prune = await d.json('/prune');
    expect(prune.status).toBe(200);
    expect(prune.body).toMatchObject({ mode: 'apply', skipped: null, exit_code: 0, home: h.home });
    expect(prune.body.totals.deleted_sessions).toBe(pass.deleted_sessions);
    // A bounded summary: the totals of every session, the first entries, where the lasting record is.
    expect(prune.body.sessions_total).toBe(prune.body.totals.sessions);
    expect(prune.body.sessions_shown).toBe(Math.min(prune.body.totals.sessions, 100));
    expect(prune.body.sessions).toHaveLength(prune.body.sessions_shown);
    expect(prune.body.history_file).toBe(join(h.root, 'state', HISTORY_FILE));

    // /startup: the restarts of the sample gateway.log.
    const startup = await d.json('/startup');
    expect(startup.status).toBe(200);
    expect(startup.body.source.state).toBe('ok');
    expect(startup.body.summary.restarts).toBe(4);
    expect(startup.body.summary.latest_gap.seconds).toBe(hj.picoclaw.last_bootstrap_gap_seconds);

    // /metrics: Prometheus text 0.0.4 with the readings and the pass.
    const m = await d.get('/metrics');
    expect(m.status).toBe(200);
    expect(m.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(metric(m.body, 'picoclaw_guard_cpu_temperature_celsius')).toBe(52.582);
    expect(metric(m.body, 'picoclaw_guard_under_voltage', { period: 'since_boot' })).toBe(1);
    expect(metric(m.body, 'picoclaw_guard_under_voltage', { period: 'now' })).toBe(0);
    expect(metric(m.body, 'picoclaw_guard_throttle_flag', { condition: 'throttled', period: 'since_boot' })).toBe(1);
    expect(metric(m.body, 'picoclaw_guard_gateway_ready')).toBe(1);
    expect(metric(m.body, 'picoclaw_guard_prune_passes_total', { outcome: 'ok' })).toBe(1);
    expect(metric(m.body, 'picoclaw_guard_prune_deleted_sessions_total')).toBe(pass.deleted_sessions);
    expect(metric(m.body, 'picoclaw_guard_bootstrap_gap_seconds')).toBe(hj.picoclaw.last_bootstrap_gap_seconds);
    expect(metric(m.body, 'picoclaw_guard_sessions', { agent: 'main' })).not.toBeNull();
    if (PROMTOOL) expect(promtoolCheckMetrics(m.body)).toEqual({ code: 0, output: '' });

    // The rest of HTTP: unknown paths, other methods, HEAD.
    expect((await d.get('/nope')).status).toBe(404);
    expect((await d.get('/health', {}, 'POST')).status).toBe(405);
    const head = await d.get('/metrics', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');

    const r = await d.stop();
    expect(r.code).toBe(0);
    // One line for a person beside the JSON log, and nothing else.
    expect(d.stderr()).toBe(
      `picoclaw-guard: listening on http://127.0.0.1:${d.port}/ (the status page; JSON log on stdout)\n`,
    );
  });

  it(
    '/health answers 503 when CRITICAL (gateway down); /prune is 404 until ' +
      'a pass ran; /startup 404 without gateway.log',
    async () => {
      const h = sampleHome();
      const { rmSync } = await import('node:fs');
      rmSync(join(h.home, 'logs', 'gateway.log'));
      const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state') });
      const health = await d.json('/health');
      expect(health.status).toBe(503);
      expect(health.body.status).toBe('CRITICAL');
      const prune = await d.json('/prune');
      expect(prune.status).toBe(404);
      expect(prune.body).toMatchObject({
        error: 'no prune pass has run since the daemon started',
        enabled: false,
        next_run_at: null,
      });
      const startup = await d.json('/startup');
      expect(startup.status).toBe(404);
      expect(startup.body.error).toMatch(/no gateway\.log yet/);
      expect(d.logs.find((l) => l.msg.startsWith('scheduled prune passes are off'))).toBeTruthy();
      expect((await d.stop()).code).toBe(0);
    },
  );
});

describe('picoclaw-guard run: the schedule', () => {
  it(
    'a scheduled pass runs every interval and its counters move; the marker ' + 'keeps a restart from repeating it',
    async () => {
      const gw = await fakeGateway(200);
      const h = sampleHome({ gatewayPort: gw, sessions: 30 });
      const state = join(h.root, 'state');
      const config = writeConfig(h.root, { ...ENABLED, metrics: { refresh_seconds: 1 } });
      const d = await startDaemon({ home: h.home, stateDir: state, config, env: { PICOGUARD_INTERVAL_SECONDS: '2' } });
      const first = await d.waitForLog((l) => l.msg === 'prune pass');
      expect(first.outcome).toBe('ok');
      const deleted1 = Number(first.deleted_sessions);
      expect(existsSync(markerPath(state, h.home))).toBe(true);

      // Two sessions go stale; the next scheduled pass deletes them and the counters move.
      const sessionsDir = join(h.home, 'workspace', 'sessions');
      addOldSession(sessionsDir, 'telegram:old-1');
      addOldSession(sessionsDir, 'telegram:old-2');
      const second = await d.waitForLog(
        (l) => l.msg === 'prune pass' && l.deleted_sessions !== 0,
        15_000,
        d.logs.indexOf(first) + 1,
      );
      expect(second.outcome).toBe('ok');
      expect(second.deleted_sessions).toBe(2);
      expect(existsSync(join(sessionsDir, 'telegram_old-1.meta.json'))).toBe(false);
      const m = await until(async () => {
        const t = (await d.get('/metrics')).body;
        return (metric(t, 'picoclaw_guard_prune_passes_total', { outcome: 'ok' }) ?? 0) >= 2 ? t : null;
      });
      expect(metric(m, 'picoclaw_guard_prune_deleted_sessions_total')).toBe(deleted1 + 2);
      expect(metric(m, 'picoclaw_guard_prune_interval_seconds')).toBe(2);
      expect(metric(m, 'picoclaw_guard_prune_last_success_timestamp_seconds')! * 1000).toBeGreaterThan(
        Date.now() - 10_000,
      );
      expect(metric(m, 'picoclaw_guard_prune_next_run_timestamp_seconds')! * 1000).toBeGreaterThan(Date.now() - 1000);
      expect((await d.stop()).code).toBe(0);

      // A restart with a 10-minute interval: the pass that just finished is not repeated.
      const d2 = await startDaemon({
        home: h.home,
        stateDir: state,
        config,
        env: { PICOGUARD_INTERVAL_SECONDS: '600' },
      });
      const listening = d2.logs.find((l) => l.msg === 'listening')!;
      const next = Date.parse((listening.prune as { next_run: string }).next_run);
      expect(next).toBeGreaterThan(Date.now() + 500_000);
      // Three refreshes (1 s apart) outlast the earliest moment a pass could be armed for (1 s after start).
      const m2 = await refreshes(d2, 3);
      expect(metric(m2, 'picoclaw_guard_prune_running')).toBe(0);
      expect(d2.logs.some((l) => l.msg === 'prune pass')).toBe(false);
      expect((await d2.json('/prune')).status).toBe(404);
      expect((await d2.stop()).code).toBe(0);
    },
  );

  it(
    'a pass that outlasts its interval: the pass that came due is skipped with ' + 'a warning, never run beside it',
    async () => {
      const h = sampleHome({ sessions: 60, seed: 3 });
      // Each deleted session is followed by a 250 ms hold (tests only): the pass outlasts its 1 s interval.
      const env = { PICOGUARD_INTERVAL_SECONDS: '1', PICOGUARD_TEST_STEP_DELAY_MS: '250' };
      const d = await startDaemon({
        home: h.home,
        stateDir: join(h.root, 'state'),
        config: writeConfig(h.root, ENABLED),
        env,
      });
      const skipped = 'a scheduled prune pass is due while the last one still runs: skipped';
      const warned = await d.waitForLog((l) => l.msg === skipped);
      expect(warned.level).toBe(40);
      expect(d.logs.some((l) => l.msg === 'prune pass')).toBe(false);
      expect((await d.stop()).code).toBe(0);
      expect(d.logs.filter((l) => l.msg === 'prune pass')).toHaveLength(1);
      expect(d.logs.find((l) => l.msg === 'prune pass')).toMatchObject({ stopped_early: true });
    },
  );

  it(
    'SIGHUP re-reads the configuration: disabling stops the schedule; a broken ' + 'file keeps the running one',
    async () => {
      const h = sampleHome();
      const config = writeConfig(h.root, ENABLED);
      const d = await startDaemon({
        home: h.home,
        stateDir: join(h.root, 'state'),
        config,
        env: { PICOGUARD_INTERVAL_SECONDS: '3600' },
      });
      await d.waitForLog((l) => l.msg === 'prune pass');
      expect(metric((await d.get('/metrics')).body, 'picoclaw_guard_prune_enabled')).toBe(1);

      writeFileSync(config, JSON.stringify({ prune: { enabled: false } }));
      const n = d.logs.length;
      d.child.kill('SIGHUP');
      await d.waitForLog((l) => l.msg === 'configuration reloaded', 10_000, n);
      const m = (await d.get('/metrics')).body;
      expect(metric(m, 'picoclaw_guard_prune_enabled')).toBe(0);
      expect(metric(m, 'picoclaw_guard_prune_next_run_timestamp_seconds')).toBeNull();

      writeFileSync(config, JSON.stringify({ server: { prot: 1 } }));
      const n2 = d.logs.length;
      d.child.kill('SIGHUP');
      const failed = await d.waitForLog(
        (l) => l.msg === 'reload failed: keeping the running configuration',
        10_000,
        n2,
      );
      expect(String(failed.error)).toContain('unknown key "server.prot"');
      expect((await d.get('/health')).status).toBeLessThan(600);
      expect((await d.stop()).code).toBe(0);
    },
  );
});

describe('picoclaw-guard run: stopping', () => {
  it('SIGTERM when idle: exit 0 within 1 s', async () => {
    const h = sampleHome();
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state') });
    await d.get('/metrics');
    const r = await d.stop('SIGTERM');
    expect(r.code).toBe(0);
    // Generous for a loaded machine: test/daemon/measure-idle.mjs measures the stop time.
    expect(r.ms).toBeLessThan(10_000);
    expect(d.logs.at(-1)).toMatchObject({ msg: 'stopped', signal: 'SIGTERM', pass_abandoned: false });
  });

  it(
    'SIGTERM in the middle of a pass: the pass stops between sessions, the ' + 'database is intact, exit 0 within 2 s',
    async () => {
      const h = sampleHome({ sessions: 60, seed: 3 });
      const state = join(h.root, 'state');
      // Each deleted session is followed by a 250 ms hold (tests only), so the pass lasts several seconds.
      const d = await startDaemon({
        home: h.home,
        stateDir: state,
        config: writeConfig(h.root, ENABLED),
        env: { PICOGUARD_INTERVAL_SECONDS: '3600', PICOGUARD_TEST_STEP_DELAY_MS: '250' },
      });
      await until(async () => metric((await d.get('/metrics')).body, 'picoclaw_guard_prune_running') === 1, 10_000, 50);
      const sessionsDir = join(h.home, 'workspace', 'sessions');
      const metas = () => readdirSync(sessionsDir).filter((f) => f.endsWith('.meta.json')).length;
      const before = metas();
      await until(async () => metas() < before, 20_000, 50); // a session deleted
      // The main thread keeps answering while the pass runs in its worker thread (the pass is
      // still running: it is stopped early below). A blocked main thread would answer only
      // after the pass, 250 ms per session; the bound is generous for a loaded machine.
      const t0 = performance.now();
      expect((await d.get('/health')).status).toBeLessThan(600);
      expect(performance.now() - t0).toBeLessThan(5000);
      const r = await d.stop('SIGINT');
      expect(r.code).toBe(0);
      // Generous for a loaded machine: that the pass stopped between sessions, not abandoned
      // after the grace period, is checked below (pass_abandoned: false).
      expect(r.ms).toBeLessThan(10_000);
      const pass = d.logs.find((l) => l.msg === 'prune pass')!;
      expect(pass).toMatchObject({ stopped_early: true, outcome: 'partial', exit_code: 7 });
      expect(Number(pass.deleted_sessions)).toBeGreaterThan(0);
      expect(d.logs.at(-1)).toMatchObject({ msg: 'stopped', pass_abandoned: false });
      expect(integrity(h.seahorsePath!)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
      // Interrupted is not completed: no marker, so the next start prunes again.
      expect(existsSync(markerPath(state, h.home))).toBe(false);
      // Every session is whole: a .jsonl never outlives its .meta.json or the other way round.
      for (const a of h.agents) {
        const names = readdirSync(a.sessionsDir);
        for (const n of names.filter((x) => x.endsWith('.meta.json')))
          expect(names).toContain(n.replace(/\.meta\.json$/, '.jsonl'));
      }
    },
  );
});

describe('picoclaw-guard run: two instances, one home', () => {
  it('a second daemon does not prune while the first one holds the lock; their passes never overlap', async () => {
    const h = sampleHome({ sessions: 60, seed: 5 });
    const state = join(h.root, 'state');
    const config = writeConfig(h.root, ENABLED);
    const env = { PICOGUARD_INTERVAL_SECONDS: '3600', PICOGUARD_TEST_STEP_DELAY_MS: '200' };
    const a = await startDaemon({ home: h.home, stateDir: state, config, env });
    await until(async () => metric((await a.get('/metrics')).body, 'picoclaw_guard_prune_running') === 1, 10_000, 50);
    // B has its own state folder (no marker from A), so it starts with a pass of its own.
    const b = await startDaemon({ home: h.home, stateDir: join(h.root, 'state-b'), config, env });
    const bPass = await b.waitForLog((l) => l.msg === 'prune pass');
    expect(bPass).toMatchObject({ outcome: 'locked', exit_code: 4, deleted_sessions: 0 });
    expect(String(bPass.skipped)).toMatch(/another prune pass holds the lock/);
    expect(metric((await b.get('/metrics')).body, 'picoclaw_guard_prune_passes_total', { outcome: 'locked' })).toBe(1);
    const aPass = await a.waitForLog((l) => l.msg === 'prune pass', 30_000);
    expect(aPass.outcome).toBe('ok');
    expect(a.logs.find((l) => l.msg === 'prune pass' && l.outcome === 'locked')).toBeUndefined();
    expect((await a.stop()).code).toBe(0);
    expect((await b.stop()).code).toBe(0);
    // The history records each pass that ran with its duration: the intervals must not overlap.
    const lines = readFileSync(join(state, HISTORY_FILE), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { at: string; duration_ms: number });
    expect(existsSync(join(h.root, 'state-b', HISTORY_FILE))).toBe(false);
    expect(lines.length).toBe(1);
    expect(integrity(h.seahorsePath!).ok).toBe('ok');
  });
});

describe('picoclaw-guard run: the network', () => {
  it('a non-loopback --host without a token is refused with exit 2', async () => {
    const h = sampleHome();
    const d = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      args: ['--host', '0.0.0.0'],
      noWait: true,
    });
    const r = await d.exited;
    expect(r.code).toBe(2);
    expect(d.stderr()).toMatch(/refusing to serve on 0\.0\.0\.0 without a bearer token/);
    expect(d.stderr()).toMatch(/PICOCLAW_GUARD_TOKEN/);
    expect(d.stdout()).toBe('');
  });

  it('with a token every endpoint needs it; the token is never printed', async () => {
    const h = sampleHome();
    const token = 'tok-' + 'a1b2c3d4'.repeat(4);
    const d = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      args: ['--host', '0.0.0.0'],
      env: { PICOCLAW_GUARD_TOKEN: token },
    });
    expect((await d.get('/metrics')).status).toBe(401);
    expect((await d.get('/health', { authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
    const ok = await d.get('/metrics', { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect((await d.stop()).code).toBe(0);
    expect(d.stdout()).not.toContain(token);
    expect(d.stderr()).not.toContain(token);
    expect(d.logs.find((l) => l.msg === 'listening')!.auth).toBe('bearer (env)');
  });

  it('a short token, a bad --port or a missing home is a usage error (exit 2)', async () => {
    const h = sampleHome();
    const d1 = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      env: { PICOCLAW_GUARD_TOKEN: 'short' },
      noWait: true,
    });
    expect((await d1.exited).code).toBe(2);
    expect(d1.stderr()).not.toContain('short\n');
    const d2 = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      args: ['--port', '99999'],
      noWait: true,
    });
    expect((await d2.exited).code).toBe(2);
    expect(d2.stderr()).toMatch(/--port takes a port number/);
    const d3 = await startDaemon({ home: join(h.root, 'no-home'), stateDir: join(h.root, 'state'), noWait: true });
    expect((await d3.exited).code).toBe(2);
    expect(d3.stderr()).toMatch(/no PicoClaw home at/);
  });
});

describe('picoclaw-guard run: requests are cheap', () => {
  it(
    'requests never spawn a process or re-read anything: vcgencmd runs and ' +
      'refresh counters stay constant over 300 requests',
    async () => {
      const gw = await fakeGateway(200);
      const h = sampleHome({ gatewayPort: gw });
      const vcg = countingVcgencmd(h.root, '0x0');
      // A long refresh interval: only requests happen during the test.
      const d = await startDaemon({
        home: h.home,
        stateDir: join(h.root, 'state'),
        vcgencmd: vcg.path,
        config: writeConfig(h.root, { metrics: { refresh_seconds: 3600 } }),
      });
      const before = vcg.count();
      expect(before).toBe(1);
      const m0 = (await d.get('/metrics')).body;
      const refresh0 = ['health', 'sessions', 'startup'].map((s) =>
        metric(m0, 'picoclaw_guard_refresh_total', { source: s }),
      );
      const lat: number[] = [];
      for (let i = 0; i < 75; i++) {
        for (const p of ['/health', '/metrics', '/startup', '/prune']) {
          const t0 = performance.now();
          await d.get(p);
          lat.push(performance.now() - t0);
        }
      }
      expect(vcg.count()).toBe(before);
      const m1 = (await d.get('/metrics')).body;
      expect(
        ['health', 'sessions', 'startup'].map((s) => metric(m1, 'picoclaw_guard_refresh_total', { source: s })),
      ).toEqual(refresh0);
      expect(metric(m1, 'picoclaw_guard_http_requests_total', { endpoint: '/health', code: '200' })).toBe(75);
      // The child has no children of its own (no vcgencmd, no shell) after all those requests.
      const children = `/proc/${d.pid}/task/${d.pid}/children`;
      if (existsSync(children)) expect(readFileSync(children, 'utf8').trim()).toBe('');
      lat.sort((x, y) => x - y);
      // Generous for a loaded machine (the counters above are the proof that nothing is re-read);
      // test/daemon/measure-idle.mjs measures the latency.
      expect(lat[Math.floor(lat.length * 0.95)]).toBeLessThan(2000);
      expect((await d.stop()).code).toBe(0);
    },
  );
});

describe('picoclaw-guard run: the textfile collector', () => {
  it('writes picoclaw_guard.prom atomically (promtool accepts it) and removes it at stop', async () => {
    const h = sampleHome();
    const dir = tempDir('pcg-textfile-');
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), args: ['--textfile-dir', dir] });
    const path = join(dir, 'picoclaw_guard.prom');
    expect(existsSync(path)).toBe(true);
    expect(readdirSync(dir)).toEqual(['picoclaw_guard.prom']);
    const text = readFileSync(path, 'utf8');
    expect(metric(text, 'picoclaw_guard_cpu_temperature_celsius')).toBe(52.582);
    expect(text).not.toContain('picoclaw_guard_http_requests_total');
    if (PROMTOOL) expect(promtoolCheckMetrics(text)).toEqual({ code: 0, output: '' });
    expect((await d.stop()).code).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a folder it cannot write is reported once, not at every refresh', async () => {
    const h = sampleHome();
    const missing = join(h.root, 'no-such-folder');
    const d = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      args: ['--textfile-dir', missing],
      config: writeConfig(h.root, { metrics: { refresh_seconds: 1 } }),
    });
    await refreshes(d, 3); // each one tries to write the file
    expect(d.logs.filter((l) => l.msg === 'cannot write the textfile collector file')).toHaveLength(1);
    expect(d.logs.find((l) => l.msg === 'cannot write the textfile collector file')).toMatchObject({
      error: 'ENOENT',
      dir: missing,
    });
    expect((await d.stop()).code).toBe(0);
  });
});
