import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HtmlValidate } from 'html-validate';
import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/index.js';
import { analyzeStartupLog } from '../../src/startup/index.js';
import {
  capacityFor,
  downsample,
  fillSynthetic,
  FLAG_THROTTLED,
  ReadingHistory,
  type Sample,
} from '../../src/daemon/history.js';
import { renderStatusPage, MAX_CHART_POINTS, type PageInput } from '../../src/daemon/status-page.js';
import { predictionOf } from '../../src/daemon/status.js';
import type { StartupPrediction } from '../../src/startup-model/learn.js';
import { tokenMatches } from '../../src/daemon/server.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { tempDir } from '../support/tmp.js';

/**
 * The status page as a function of the cache: escaping, validity, size, and charts that
 * draw exactly the data they are given. The browser test (status-browser.test.ts) opens
 * the page the real daemon serves.
 */
const FIXTURES = join(import.meta.dirname, '../fixtures/boards');
const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'"`;
/**
 * The page is a monitor left open: the issue asks for a self-refresh, which this WCAG rule forbids for pages read once.
 */
const VALIDATOR = new HtmlValidate({ extends: ['html-validate:recommended'], rules: { 'meta-refresh': 'off' } });

function health(): HealthReport {
  return JSON.parse(readFileSync(join(FIXTURES, 'pi4/expected-with-home.json'), 'utf8')) as HealthReport;
}

async function startupOf(restarts: number) {
  const dir = join(tempDir(), '.picoclaw');
  const home = buildSampleHome({
    dir,
    sessions: 20,
    seed: 3,
    now: Date.now(),
    restarts,
    logLevel: 'info',
    logEvents: true,
    pidFile: 'none',
  });
  const report = await analyzeStartupLog({ path: join(home.home, 'logs', 'gateway.log') }, {});
  return { report, prunes: [], analyzed_at: new Date().toISOString() };
}

function input(over: Partial<PageInput> = {}): PageInput {
  const now = Date.now();
  const h = new ReadingHistory(capacityFor(30));
  fillSynthetic(h, 50, 30, now);
  return {
    nowMs: now,
    version: '0.0.0-test',
    startedAtMs: now - 3600e3,
    refreshSeconds: 30,
    health: health(),
    samples: h.all(),
    historyLength: h.length,
    historyCapacity: h.capacity,
    gateway: { state: 'down', since_ms: now - 600e3, seen_change: true },
    undated: { at_ms: now - 60e3, per_agent: { main: 2 } },
    policy: {
      enabled: { value: true, source: 'guard-config', from: '/etc/picoclaw-guard.json' },
      max_db_size_mb: { value: 128, source: 'default', from: null },
    },
    intervalSeconds: 3600,
    intervalSource: 'policy',
    passes: [{ at_ms: now - 60e3, outcome: 'ok', deleted_sessions: 7, freed_bytes: 123456, sessions_after: 13 }],
    schedule: { enabled: true, running: false, next_run_at_ms: now + 3540e3 },
    startup: null,
    startupMissing: null,
    sessionsAt: () => null,
    prediction: null,
    maxDbBytes: 128 * 1024 * 1024,
    ...over,
  };
}

/** Drawn points of one series: the coordinates of its polylines and dots. */
function drawn(html: string, chartId: string, series: string): number {
  const svg = new RegExp(`<svg class="chart" id="${chartId}"[\\s\\S]*?</svg>`).exec(html)?.[0] ?? '';
  const g = new RegExp(`<g class="s-${series}" data-series="${series}" data-n="(\\d+)">([\\s\\S]*?)</g>`).exec(svg);
  if (!g) return -1;
  const poly = [...g[2]!.matchAll(/points="([^"]*)"/g)].reduce((n, m) => n + m[1]!.trim().split(/\s+/).length, 0);
  const dots = (g[2]!.match(/<circle /g) ?? []).length;
  expect(poly + dots).toBe(Number(g[1]));
  return poly + dots;
}

describe('status page', () => {
  it('shows the status and each problem as health words them, with every section', async () => {
    const h = health();
    const html = renderStatusPage(input({ startup: await startupOf(5) }));
    expect(html).toContain(`<p class="status s-crit">CRITICAL</p>`);
    for (const p of h.problems)
      expect(html).toContain(
        p.message
          .replace(/&/g, '&amp;')
          .replace(/</g, '&lt;')
          .replace(/>/g, '&gt;')
          .replace(/"/g, '&quot;')
          .replace(/'/g, '&#39;'),
      );
    for (const id of ['status', 'board', 'gateway', 'sessions', 'prune', 'restarts'])
      expect(html).toContain(`<section id="${id}">`);
    expect(html).toMatch(/max_db_size_mb/);
  });

  it('the card: wear not reported by an SD card, an eMMC past its life marked, the bytes written', () => {
    const sd = renderStatusPage(input());
    expect(sd).toContain(
      '<th scope="row">Card wear</th><td><span class="muted">mmcblk0 (SD): not reported by this card',
    );
    expect(sd).toMatch(/<th scope="row">Written<\/th><td>1\.5 GiB since boot · 485 MiB a day<\/td>/);
    const h = health();
    const worn: HealthReport = {
      ...h,
      storage: {
        available: true,
        device: 'mmcblk0',
        partition: 'mmcblk0p2',
        card_type: 'MMC',
        emmc: {
          reported: true,
          source: 'life_time',
          life_time_est_typ_a: 10,
          life_time_est_typ_b: 11,
          life_used_percent_a: 100,
          life_used_percent_b: 100,
          life_exceeded: true,
          pre_eol_info: 3,
          pre_eol: 'urgent',
        },
        written_bytes: null,
        written_bytes_per_day: null,
      },
      problems: [
        ...h.problems,
        { level: 'critical', code: 'emmc_life', message: 'the eMMC mmcblk0 is past its rated life' },
      ],
    };
    const html = renderStatusPage(input({ health: worn }));
    expect(html).toContain('<b class="t-warn">mmcblk0: life used up to 100 % (past rated life), pre-EOL urgent</b>');
    expect(html).not.toContain('<th scope="row">Written</th>');
  });

  it('escapes every string that comes from the board, PicoClaw or the logs', async () => {
    const h = health();
    h.problems = [{ level: 'warn', code: 'x', message: HOSTILE }];
    if (h.board.available) h.board.model = HOSTILE;
    if (h.picoclaw.available) {
      h.picoclaw.sessions.stores[0]!.agents = [HOSTILE];
      h.picoclaw.sessions.stores[0]!.error = HOSTILE;
      h.picoclaw.gateway.reason = HOSTILE;
      h.picoclaw.seahorse.path = HOSTILE;
    }
    const st = await startupOf(3);
    for (const r of st.report.restarts) r.started_at_text = HOSTILE;
    const html = renderStatusPage(
      input({
        health: h,
        startup: st,
        policy: { archive_dir: { value: HOSTILE, source: 'env', from: HOSTILE } },
        passes: [{ at_ms: Date.now(), outcome: HOSTILE, deleted_sessions: 1, freed_bytes: 1, sessions_after: 1 }],
        prediction: { next_gap_seconds: 3, basis: HOSTILE },
      }),
    );
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toMatch(/[^&]"x"/);
    expect(html.split('&lt;script&gt;').length - 1).toBeGreaterThanOrEqual(8);
    const r = await VALIDATOR.validateString(html);
    expect(r.results.flatMap((x) => x.messages.map((m) => `${m.ruleId}: ${m.message}`))).toEqual([]);
  });

  it('passes html-validate, with and without readings', async () => {
    for (const p of [
      input({
        startup: await startupOf(6),
        prediction: { next_gap_seconds: 21.5, low_seconds: 18, high_seconds: 25, basis: 'fit on 6 restarts' },
      }),
      input({
        health: null,
        samples: [],
        gateway: null,
        undated: null,
        passes: [],
        startupMissing: { error: 'no gateway.log yet', path: '/x/gateway.log' },
      }),
    ]) {
      const r = await VALIDATOR.validateString(renderStatusPage(p));
      expect(r.results.flatMap((x) => x.messages.map((m) => `${m.ruleId}: ${m.message} (column ${m.column})`))).toEqual(
        [],
      );
    }
  });

  it('charts draw one point per reading and per restart; a full day stays under 100 KB', async () => {
    const st = await startupOf(6);
    const html = renderStatusPage(input({ startup: st }));
    expect(drawn(html, 'chart-temperature', 'temp')).toBe(50);
    expect(drawn(html, 'chart-freq-mem', 'freq')).toBe(50);
    expect(drawn(html, 'chart-freq-mem', 'mem')).toBe(50);
    const gaps = st.report.restarts.filter((r) => r.bootstrap_gap && r.started_at);
    expect(gaps.length).toBeGreaterThan(2);
    expect(drawn(html, 'chart-restarts', 'gap') + Math.max(0, drawn(html, 'chart-restarts', 'gap_lb'))).toBe(
      gaps.length,
    );
    // One prune pass that deleted something: one dashed mark.
    expect(
      (
        /<svg class="chart" id="chart-restarts"[\s\S]*?<\/svg>/
          .exec(html)![0]
          .match(/<line class="mark"[^>]*><title>/g) ?? []
      ).length,
    ).toBe(1);
    expect(html).not.toContain('id="prediction"');

    // A full buffer at the fastest refresh: thinned to MAX_CHART_POINTS, the page stays small.
    const full = new ReadingHistory(capacityFor(1));
    fillSynthetic(full, full.capacity, 1, Date.now());
    const big = renderStatusPage(
      input({
        startup: st,
        samples: full.all(),
        historyLength: full.length,
        historyCapacity: full.capacity,
        refreshSeconds: 1,
      }),
    );
    expect(drawn(big, 'chart-temperature', 'temp')).toBeLessThanOrEqual(MAX_CHART_POINTS);
    expect(drawn(big, 'chart-temperature', 'temp')).toBeGreaterThan(MAX_CHART_POINTS / 2);
    expect(Buffer.byteLength(big)).toBeLessThan(100 * 1024);
  });

  it('shows the startup model prediction only when the report carries one', async () => {
    const st = await startupOf(4);
    expect(predictionOf(st)).toBeNull();
    (st.report as unknown as { prediction: unknown }).prediction = {
      next_gap_seconds: 12.5,
      low_seconds: 10,
      high_seconds: 15,
      basis: 'least squares on sessions',
    };
    const pred = predictionOf(st);
    expect(pred).toEqual({
      next_gap_seconds: 12.5,
      low_seconds: 10,
      high_seconds: 15,
      basis: 'least squares on sessions',
    });
    const html = renderStatusPage(input({ startup: st, prediction: pred }));
    expect(html).toContain('id="prediction"');
    expect(drawn(html, 'chart-restarts', 'predicted')).toBe(1);
    (st.report as unknown as { prediction: unknown }).prediction = { next_gap_seconds: 'soon' };
    expect(predictionOf(st)).toBeNull();
  });

  it(
    "draws the daemon's startup model (src/startup-model) when it has a prediction," + ' and nothing while it has none',
    async () => {
      const st = await startupOf(4);
      const volume = { sessions: 212, jsonl_bytes: 31 * 1024 * 1024, db_bytes: null };
      const base = {
        why: null,
        rmse_seconds: 2,
        volume,
        target_seconds: 30,
        sessions_for_target: 120,
        model: null,
        samples: 9,
        measured_samples: 8,
        trust: {},
      };
      const model = { ...base, state: 'ok', predicted_seconds: 48, error_seconds: 9 } as unknown as StartupPrediction;
      const pred = predictionOf(st, model);
      expect(pred).toEqual({
        next_gap_seconds: 48,
        low_seconds: 39,
        high_seconds: 57,
        basis: '212 sessions / 31 MiB of the default agent, from 8 measured restarts',
      });
      expect(drawn(renderStatusPage(input({ startup: st, prediction: pred })), 'chart-restarts', 'predicted')).toBe(1);
      const none = {
        ...base,
        state: 'no_model',
        why: 'needs 3 restarts',
        predicted_seconds: null,
        error_seconds: null,
      } as unknown as StartupPrediction;
      expect(predictionOf(st, none)).toBeNull();
    },
  );
});

describe('reading history', () => {
  const s = (i: number): Sample => ({
    at_ms: i * 1000,
    temp_celsius: i,
    freq_mhz: 1000,
    flags: 0,
    mem_available_mib: 100,
    sessions: i,
  });

  it('is a bounded ring: the newest samples stay, oldest first', () => {
    const h = new ReadingHistory(5);
    for (let i = 0; i < 12; i++) h.push(s(i));
    expect(h.length).toBe(5);
    expect(h.all().map((x) => x.temp_celsius)).toEqual([7, 8, 9, 10, 11]);
    expect(
      h
        .resized(3)
        .all()
        .map((x) => x.temp_celsius),
    ).toEqual([9, 10, 11]);
    expect(
      h
        .resized(8)
        .all()
        .map((x) => x.temp_celsius),
    ).toEqual([7, 8, 9, 10, 11]);
    expect(h.sessionsAt(9400, 1000)).toBe(9);
    expect(h.sessionsAt(100, 1000)).toBeNull();
    expect(capacityFor(30)).toBe(2880);
  });

  it('thinning averages runs and keeps a short throttle visible', () => {
    const samples = Array.from({ length: 1000 }, (_, i) => ({ ...s(i), flags: i === 501 ? FLAG_THROTTLED : 0 }));
    const d = downsample(samples, 100);
    expect(d).toHaveLength(100);
    expect(d[0]!.temp_celsius).toBeCloseTo(4.5);
    expect(d.filter((x) => x.flags & FLAG_THROTTLED)).toHaveLength(1);
    expect(downsample(samples.slice(0, 10), 100)).toHaveLength(10);
    // The ring thins from its columns to the same points (Float32 columns: compare to a tenth).
    const ring = new ReadingHistory(1000);
    for (const x of samples) ring.push(x);
    const t = ring.thinned(100);
    expect(t).toHaveLength(100);
    t.forEach((x, i) => {
      expect(x.at_ms).toBe(d[i]!.at_ms);
      expect(x.temp_celsius).toBeCloseTo(d[i]!.temp_celsius, 1);
      expect(x.flags).toBe(d[i]!.flags);
      expect(x.sessions).toBe(d[i]!.sessions);
    });
  });
});

describe('HTTP Basic authentication with the token as the password', () => {
  const token = 'tok-' + 'a1b2c3d4'.repeat(4);
  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  it('accepts the token as the password of any user, and a bearer token; nothing else', () => {
    expect(tokenMatches(basic('admin', token), token)).toBe(true);
    expect(tokenMatches(basic('', token), token)).toBe(true);
    expect(tokenMatches(`Bearer ${token}`, token)).toBe(true);
    expect(tokenMatches(basic(token, 'wrong'), token)).toBe(false);
    expect(tokenMatches(basic('admin', token + 'x'), token)).toBe(false);
    expect(tokenMatches(`Basic ${Buffer.from(token).toString('base64')}`, token)).toBe(false);
    expect(tokenMatches(`Basic ${token}`, token)).toBe(false);
    expect(tokenMatches(undefined, token)).toBe(false);
  });
});

describe('a board without a temperature sensor', () => {
  /** Invariant: the temperature chart is drawn exactly when some reading has a temperature; else the page says why. */
  it('says "no sensor" instead of an empty 0-1 °C axis; the chart is back once a reading has a value', async () => {
    const base = input().samples;
    const fc = (await import('fast-check')).default;
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: base.length, maxLength: base.length }), (has) => {
        const samples = base.map((x, i) => ({ ...x, temp_celsius: has[i] ? x.temp_celsius : NaN }));
        const html = renderStatusPage(input({ samples }));
        const any = has.some(Boolean);
        expect(html.includes('id="chart-temperature"')).toBe(any);
        expect(html.includes('CPU temperature: no sensor')).toBe(!any);
      }),
      { numRuns: 30 },
    );
    const none = renderStatusPage(input({ samples: base.map((x) => ({ ...x, temp_celsius: NaN })) }));
    expect(none).not.toMatch(/°C<\/text>/);
    const report = await VALIDATOR.validateString(none);
    expect(report.valid, JSON.stringify(report.results)).toBe(true);
  });
});
