import { join } from 'node:path';
import { collectHealth } from '../../src/health/index.js';
import { analyzeStartupLog } from '../../src/startup/index.js';
import { newVcgencmdCache } from '../../src/health/vcgencmd.js';
import {
  emptyPruneStats,
  renderMetrics,
  REFRESH_SOURCES,
  type MetricsSnapshot,
} from '../../src/metrics/guard-metrics.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { board, BOARDS, type BoardName } from '../health/boards.js';
import { fakeGateway } from '../daemon/support.js';
import { tempDir } from '../support/tmp.js';

/**
 * A complete metrics snapshot the way the daemon builds it, in-process: a fixture board,
 * a sample home whose gateway (a fake one served here) is ready, its gateway.log, and a
 * prune history. Used to check every board's output with promtool and to know which
 * metric names the exporter really emits (the Grafana and alert tests).
 */
export async function snapshot(name: BoardName): Promise<MetricsSnapshot> {
  const b = board(name);
  const root = tempDir('pcg-metrics-');
  const port = await fakeGateway(200);
  buildSampleHome({
    dir: join(root, 'home'),
    seed: 2,
    sessions: 20,
    agents: 2,
    now: Date.now(),
    restarts: 4,
    logLevel: 'info',
    logEvents: true,
    pidFile: { pid: process.pid, port },
  });
  const home = discoverHome({ home: join(root, 'home'), env: {} });
  const startup = await analyzeStartupLog({ path: home.logPath }, {});
  const health = await collectHealth({
    sysRoot: b.sys,
    procRoot: b.proc,
    vcgencmd: b.vcgencmd,
    stateDir: join(root, 'state'),
    home,
    cache: newVcgencmdCache(),
    freeSpace: () => ({
      availableBytes: 50 * 1024 ** 3,
      totalBytes: 64 * 1024 ** 3,
      availableInodes: 1e6,
      totalInodes: 2e6,
    }),
    lastBootstrapGapSeconds: startup.summary.latest_gap?.seconds ?? null,
  });
  const prune = emptyPruneStats();
  Object.assign(prune, {
    enabled: true,
    interval_seconds: 3600,
    deleted_sessions: 12,
    freed_bytes: 345678,
    deleted_seahorse_messages: 99,
    deleted_orphan_conversations: 1,
    last_success_at_ms: Date.now() - 60_000,
    next_run_at_ms: Date.now() + 3_540_000,
  });
  prune.passes.ok = 3;
  prune.passes.locked = 1;
  prune.last = {
    finished_at_ms: Date.now() - 60_000,
    duration_seconds: 1.25,
    outcome: 'ok',
    longest_write_seconds: 0.012,
  };
  return {
    version: '0.1.0',
    health,
    startup,
    prune,
    seahorse_limit_bytes: 128 * 1024 * 1024,
    refresh: Object.fromEntries(
      REFRESH_SOURCES.map((s) => [s, { count: 5, last_duration_seconds: 0.004, last_at_ms: Date.now() }]),
    ) as MetricsSnapshot['refresh'],
  };
}

/** Every family name in a rendered text (its # TYPE lines). */
export function families(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
}

/** The union of the families emitted on every fixture board. */
export async function emittedNames(): Promise<Set<string>> {
  const all = new Set<string>();
  for (const name of BOARDS) for (const f of families(renderMetrics(await snapshot(name)))) all.add(f);
  // Added by the daemon to /metrics only (requests served): see httpRequestMetrics in src/daemon/routes.ts.
  all.add('picoclaw_guard_http_requests_total');
  return all;
}

/** The metric names in a PromQL expression: picoclaw_guard_* words outside string literals (label values). */
export function metricNames(expr: string): string[] {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set([...noStrings.matchAll(/\bpicoclaw_guard_[a-z0-9_]+\b/g)].map((m) => m[0]))];
}
