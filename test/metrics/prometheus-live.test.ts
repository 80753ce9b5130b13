import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TEXTFILE_NAME } from '../../src/metrics/textfile.js';
import { fakeGateway, sampleHome, startDaemon, writeConfig, type Daemon } from '../daemon/support.js';
import { skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * The fleet path with the real programs (Debian's `prometheus` and `prometheus-node-exporter`,
 * installed by .ci/run): two boards' daemons (`picoclaw-guard run` from dist/) are scraped by a
 * Prometheus started here on loopback, in a temporary folder of its own, with
 * config/prometheus-alerts.yml as its rules, unmodified. One board is under-powered (the
 * pi4-undervoltage fixture: throttled=0x50005) with its gateway down (a stale PID file); the
 * other is a pi4 with a gateway that answers. node_exporter serves the first daemon's textfile
 * (--textfile-dir) and Prometheus scrapes it too.
 *
 * Checked: the expected alerts are pending or firing for the sick board and for no other (the
 * rules keep their `for:` durations: an alert is pending from the first evaluation its
 * expression holds, which is what is waited for); the textfile's series reach Prometheus
 * through node_exporter; every PromQL expression of config/grafana-dashboard.json returns a
 * series with the board variable at "All". Scrape and evaluation intervals are 1 s, settings in
 * the generated config; every wait polls Prometheus' API with a bounded number of attempts.
 */

const PROMETHEUS = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p));
const NODE_EXPORTER = ['/usr/bin/prometheus-node-exporter', '/usr/local/bin/node_exporter'].find((p) => existsSync(p));
const RULES = fileURLToPath(new URL('../../config/prometheus-alerts.yml', import.meta.url));
const DASHBOARD = fileURLToPath(new URL('../../config/grafana-dashboard.json', import.meta.url));

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function fetchText(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

/** Poll `probe` (every 200 ms, at most `attempts` times) until it returns a value. */
async function poll<T>(
  what: string,
  attempts: number,
  probe: () => Promise<T | null>,
  last?: () => string,
): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await probe().catch(() => null);
    if (v !== null) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not seen after ${attempts} attempts${last ? `\n${last()}` : ''}`);
}

/** A program of ours, its output kept for the failure message. */
function start(cmd: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return { child, output: () => out };
}

interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing' | 'inactive';
}

function dashboardExprs(): { title: string; expr: string }[] {
  interface Panel {
    title: string;
    targets?: { expr?: string }[];
    panels?: Panel[];
  }
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const all = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...all(p.panels ?? [])]);
  return all(dash.panels).flatMap((p) =>
    (p.targets ?? []).filter((t) => t.expr).map((t) => ({ title: p.title, expr: t.expr! })),
  );
}

/** Grafana's substitution for the board variable at "All" (its allValue is `.*`). */
function substitute(expr: string): string {
  return expr.replace(/\$\{instance\}|\$instance\b/g, '.*');
}

describe('a real Prometheus scrapes the guard', () => {
  it('raises the under-voltage and gateway alerts, reads the textfile, answers every dashboard query', async (ctx) => {
    if (!PROMETHEUS || !NODE_EXPORTER) {
      const missing = [!PROMETHEUS && 'prometheus', !NODE_EXPORTER && 'prometheus-node-exporter'].filter(Boolean);
      return skipWithReason(
        ctx,
        `${missing.join(' and ')} not installed (apt-get install --no-install-recommends prometheus prometheus-node-exporter)`,
      );
    }
    const root = tempDir('pcg-prom-');
    const textfileDir = join(root, 'textfile');
    mkdirSync(textfileDir);

    // Board 1: under-voltage now and since boot, gateway down (stale PID file). Pruning on, so a pass
    // runs at start (the gateway being down is a safe window) and the prune series exist.
    const sick = sampleHome({ sessions: 12 });
    const cfg = { prune: { enabled: true, max_age_days: 30, max_db_size_mb: 64 }, metrics: { refresh_seconds: 1 } };
    const d1 = await startDaemon({
      home: sick.home,
      stateDir: join(sick.root, 'state'),
      config: writeConfig(sick.root, cfg),
      board: 'pi4-undervoltage',
      args: ['--textfile-dir', textfileDir],
    });
    // Board 2: a healthy pi4 whose gateway answers /ready.
    const gw = await fakeGateway(200);
    const well = sampleHome({ sessions: 12, gatewayPort: gw, seed: 8 });
    const d2 = await startDaemon({
      home: well.home,
      stateDir: join(well.root, 'state'),
      config: writeConfig(well.root, cfg),
      board: 'pi4',
    });
    const passed = (d: Daemon) => d.waitForLog((l) => l.msg === 'prune pass');
    await Promise.all([passed(d1), passed(d2)]);
    await poll('the textfile', 50, async () => (existsSync(join(textfileDir, TEXTFILE_NAME)) ? true : null));

    const nePort = await freePort();
    const ne = start(NODE_EXPORTER, [
      `--web.listen-address=127.0.0.1:${nePort}`,
      '--collector.disable-defaults',
      '--collector.textfile',
      `--collector.textfile.directory=${textfileDir}`,
    ]);
    await poll(
      'node_exporter /metrics',
      50,
      async () => ((await fetchText(nePort, '/metrics')).body.includes('picoclaw_guard_build_info') ? true : null),
      ne.output,
    );

    const promDir = join(root, 'prometheus');
    mkdirSync(promDir);
    const guard1 = `127.0.0.1:${d1.port}`;
    const guard2 = `127.0.0.1:${d2.port}`;
    writeFileSync(
      join(promDir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        '  evaluation_interval: 1s',
        'rule_files:',
        `  - ${JSON.stringify(RULES)}`,
        'scrape_configs:',
        '  - job_name: picoclaw-guard',
        `    static_configs: [{ targets: [${JSON.stringify(guard1)}, ${JSON.stringify(guard2)}] }]`,
        '  - job_name: node',
        `    static_configs: [{ targets: ["127.0.0.1:${nePort}"] }]`,
        '',
      ].join('\n'),
    );
    const promPort = await freePort();
    const prom = start(PROMETHEUS, [
      `--config.file=${join(promDir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(promDir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ]);
    const api = async (path: string): Promise<any> => {
      const r = await fetchText(promPort, path);
      const body = JSON.parse(r.body);
      if (body.status !== 'success') throw new Error(`${path}: ${r.body}`);
      return body.data;
    };
    await poll(
      'Prometheus ready',
      150,
      async () => ((await fetchText(promPort, '/-/ready')).status === 200 ? true : null),
      prom.output,
    );

    // The rules file loaded as it is.
    const groups = (await api('/api/v1/rules')).groups as { name: string; file: string; rules: unknown[] }[];
    expect(groups.map((g) => g.name)).toEqual(['picoclaw-guard']);
    expect(groups[0]!.rules.length).toBeGreaterThan(10);

    // All three targets scraped and up.
    await poll(
      'all targets up',
      100,
      async () => {
        const t = (await api('/api/v1/targets')).activeTargets as { health: string; scrapeUrl: string }[];
        return t.length === 3 && t.every((x) => x.health === 'up') ? t : null;
      },
      prom.output,
    );

    // The alerts of the sick board, pending or firing; none of them for the healthy one.
    const expected = [
      'PicoClawUnderVoltageNow',
      'PicoClawUnderVoltageSinceBoot',
      'PicoClawThrottledSinceBoot',
      'PicoClawGatewayNotReady',
    ];
    let alerts: PromAlert[] = [];
    await poll(
      'the expected alerts',
      100,
      async () => {
        alerts = (await api('/api/v1/alerts')).alerts as PromAlert[];
        const on = new Set(
          alerts.filter((a) => a.labels.instance === guard1 && a.state !== 'inactive').map((a) => a.labels.alertname),
        );
        return expected.every((e) => on.has(e)) ? true : null;
      },
      () => JSON.stringify(alerts, null, 1),
    );
    const forWell = alerts.filter((a) => a.labels.instance === guard2).map((a) => a.labels.alertname);
    expect(forWell).toEqual([]);
    expect(alerts.map((a) => a.labels.alertname)).not.toContain('PicoClawGuardDown');

    // The textfile's series, through node_exporter.
    const viaNode = (
      await api(`/api/v1/query?query=${encodeURIComponent('picoclaw_guard_under_voltage{job="node",period="now"}')}`)
    ).result as { value: [number, string] }[];
    expect(viaNode.map((r) => r.value[1])).toEqual(['1']);
    const textfileErrors = (await api(`/api/v1/query?query=${encodeURIComponent('node_textfile_scrape_error')}`))
      .result as {
      value: [number, string];
    }[];
    expect(textfileErrors.map((r) => r.value[1])).toEqual(['0']);

    // The board variable's query (label_values(picoclaw_guard_build_info, instance)) lists both daemons.
    const boards = (await api(
      `/api/v1/label/instance/values?${new URLSearchParams({ 'match[]': 'picoclaw_guard_build_info{job="picoclaw-guard"}' })}`,
    )) as string[];
    expect(boards.sort()).toEqual([guard1, guard2].sort());

    // Every dashboard query returns a series (increase() needs two samples in its range: polled).
    const empty: string[] = [];
    for (const q of dashboardExprs()) {
      const query = substitute(q.expr);
      expect(query).not.toMatch(/\$/);
      const got = await poll(`"${q.title}"`, 30, async () => {
        const r = (await api(`/api/v1/query?query=${encodeURIComponent(query)}`)).result as unknown[];
        return r.length > 0 ? r : null;
      }).catch(() => null);
      if (!got) empty.push(`${q.title}: ${query}`);
    }
    expect(empty).toEqual([]);

    expect((await d1.stop()).code).toBe(0);
    expect((await d2.stop()).code).toBe(0);
  });
});
