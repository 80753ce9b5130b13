import fc from 'fast-check';
import { Readable } from 'node:stream';
import { appendFileSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  analyzeStartupLog,
  lastBootstrapGapSeconds,
  markPrunes,
  settleLatest,
  type StartupReport,
} from '../../src/startup/index.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import type { SampleRestart } from '../../dev/sample/gateway-events.js';
import { renderConsoleLog, renderGatewayLog, renderRedirectedLog } from '../../dev/sample/gatewaylog.js';
import { tempDir } from '../support/tmp.js';
import { ANCHOR, RESTARTS, scenario } from './scenario.js';

const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));

async function analyzeText(
  text: string | Buffer,
  opts: Parameters<typeof analyzeStartupLog>[1] = {},
): Promise<StartupReport> {
  const dir = tempDir('pcg-startup-');
  const path = join(dir, 'gateway.log');
  writeFileSync(path, text);
  return analyzeStartupLog({ path }, { dateAnchor: ANCHOR, ...opts });
}

/** What a restart looks like, without the incidental fields. */
const shape = (r: StartupReport) =>
  r.restarts.map((x) => ({
    end: x.end,
    gap: x.bootstrap_gap?.seconds ?? null,
    lb: x.bootstrap_gap?.lower_bound ?? false,
    ready: x.time_to_ready?.seconds ?? null,
    ingest: x.gap.ingest_lines,
    warnings: x.gap.warnings,
    reloads: x.reloads,
  }));

describe('restarts and their spans, per log level (sample generator)', () => {
  // The generator's timeline (dev/sample/gateway-events.ts): agents registered at start t, short_expand at
  // t+200 ms, the next core tool at t+200+gapMs, Agent initialized 300 ms later, ready 520 ms after that,
  // and gateway.Run began 40 ms before t.
  const complete = RESTARTS.map((r, i) => ({ r, i })).filter(
    ({ r }) => r.end !== 'failed' && r.crashPhase !== 'bootstrap',
  );

  it('info: the info-level gap is agent registration → Agent initialized, ±1 s', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', false)));
    expect(rep.restarts.map((x) => x.end)).toEqual([
      'stopped',
      'crashed',
      'failed',
      'crashed',
      'stopped',
      'failed',
      'running',
    ]);
    for (const { r, i } of complete) {
      const gap = rep.restarts[i]!.bootstrap_gap!;
      expect(gap.from).toBe('Registered agent');
      expect(gap.to).toBe('Agent initialized');
      expect(gap.precision_seconds).toBe(1);
      expect(Math.abs(gap.seconds - (r.gapMs + 500) / 1000)).toBeLessThanOrEqual(1);
    }
    expect(rep.content_level).toBe('info');
    expect(rep.advice.map((a) => a.kind)).toEqual(['enable_events']);
  });

  it('debug: the gap is short_expand → the next core tool, ±1 s', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('debug', false)));
    for (const { r, i } of complete) {
      const gap = rep.restarts[i]!.bootstrap_gap!;
      expect(gap.from).toBe('Registered core tool short_expand');
      expect(gap.to).toBe('Registered core tool web_search');
      expect(Math.abs(gap.seconds - r.gapMs / 1000)).toBeLessThanOrEqual(1);
    }
    // -d: no `Log level set to`; `wrote pid file` marks each start (docs/picoclaw.md#recognising-a-restart).
    expect(rep.restarts[0]!.start_markers).toEqual(['wrote pid file']);
  });

  it('events: time to ready is gateway.ready duration_ms, to the millisecond', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', true)));
    for (const { r, i } of complete) {
      const ready = rep.restarts[i]!.time_to_ready!;
      expect(ready.precision_seconds).toBe(0.001);
      expect(ready.to).toBe('Runtime event: gateway.ready duration_ms');
      expect(ready.seconds).toBeCloseTo((r.gapMs + 1060) / 1000, 6);
      expect(rep.restarts[i]!.spans.gateway_start_event!.seconds).toBeCloseTo((r.gapMs + 200 + 280 + 40) / 1000, 6);
    }
    expect(rep.advice).toEqual([]);
  });

  it('warn: almost nothing, and the report says what to set', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('warn', true)));
    expect(rep.content_level).toBe('warn');
    expect(rep.restarts.every((r) => r.bootstrap_gap === null && r.time_to_ready === null)).toBe(true);
    // Only what warn shows: the config error, the crash restarts (stale PID file) and the refused instance.
    expect(rep.restarts.map((r) => r.end)).toEqual(['failed', 'crashed', 'running', 'failed']);
    const advice = rep.advice.find((a) => a.kind === 'enable_info')!;
    expect(advice.settings.join('\n')).toContain('"gateway": { "log_level": "info" }');
    expect(advice.settings.join('\n')).toContain('PICOCLAW_LOG_LEVEL=info');
    expect(advice.settings.join('\n')).toContain('"gateway.*"');
  });

  it('warn: every bootstrap warning text is cut to 160 characters, the first one too', async () => {
    const error = 'bootstrap: get messages: database is locked; ' + 'the rest of a long error '.repeat(10);
    const warn = (session: string, time: string) =>
      JSON.stringify({ level: 'warn', component: 'seahorse', session, error, time, message: 'bootstrap' });
    const stale = 'not running (PID: 4533) so will remove the pid file: /h/.picoclaw.pid';
    const log =
      [
        JSON.stringify({ level: 'warn', component: 'pid', time: '2026-06-04T09:00:00+02:00', message: stale }),
        warn('agent:a', '2026-06-04T09:00:30+02:00'),
        warn('agent:b', '2026-06-04T09:00:31+02:00'),
      ].join('\n') + '\n';
    const r = (await analyzeText(log)).restarts[0]!;
    expect(r.gap).toMatchObject({ warnings: 2, bootstrap_failures: 2, database_locked: 2 });
    expect(r.gap.warning_messages).toEqual([{ text: error.slice(0, 157) + '...', count: 2 }]);
  });

  it('a crash during the bootstrap gives a lower bound and says so', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', false)));
    const r = rep.restarts[3]!;
    expect(r.end).toBe('crashed');
    expect(r.reached).toBe('bootstrap');
    expect(r.end_detail).toMatch(/^killed during the bootstrap/);
    expect(r.bootstrap_gap!.lower_bound).toBe(true);
    expect(r.time_to_ready).toBeNull();
  });

  it('a refused second instance fails alone; the running one carries on and stops cleanly', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', false)));
    const [five, six] = [rep.restarts[4]!, rep.restarts[5]!];
    expect(six.end).toBe('failed');
    expect(six.end_detail).toMatch(/singleton check failed/);
    expect(five.end).toBe('stopped');
    expect(five.ended_at).toBe('2026-06-06T08:00:00+02:00'); // its stop comes after the refused start
    expect(five.gap.database_locked).toBe(2);
    expect(five.gap.warning_messages).toEqual([{ text: 'bootstrap: get messages: database is locked', count: 2 }]);
  });

  it('reloads repeat `Registered agent` but are not restarts, and runtime ingest lines are not counted', async () => {
    const restarts: SampleRestart[] = [
      { startMs: Date.UTC(2026, 0, 1), sessions: 10, gapMs: 3000, end: 'stopped', reloads: 3, traffic: 40 },
    ];
    const rep = await analyzeText(
      renderGatewayLog({ restarts, level: 'debug', events: false, seed: 1, home: '/h', agents: ['main', 'ops'] }),
    );
    expect(rep.restarts).toHaveLength(1);
    expect(rep.restarts[0]!.reloads).toBe(3);
    expect(rep.reloads).toBe(3);
    expect(rep.restarts[0]!.gap.ingest_lines).toBe(10);
  });

  it('without seahorse the gap holds no bootstrap and the fallback is reported', async () => {
    const restarts: SampleRestart[] = [{ startMs: Date.UTC(2026, 0, 1), sessions: 10, gapMs: 3000, end: 'running' }];
    const rep = await analyzeText(
      renderGatewayLog({ restarts, level: 'info', events: false, seed: 1, home: '/h', seahorse: false }),
    );
    expect(rep.restarts[0]!.seahorse_off).toBe(true);
    expect(rep.restarts[0]!.gap.ingest_lines).toBe(0);
    expect(rep.restarts[0]!.gap.warnings).toBe(1);
  });
});

describe('formats', () => {
  it('journald short-iso gives the same restarts as the file, dated by journald', async () => {
    const file = await analyzeText(renderGatewayLog(scenario('info', true)));
    const journal = await analyzeText(renderConsoleLog(scenario('info', true), { journald: {} }));
    expect(shape(journal)).toEqual(shape(file));
    expect(journal.restarts.map((r) => r.started_at)).toEqual(file.restarts.map((r) => r.started_at));
    expect(journal.timestamps.dates).toBe('journald');
  });

  it('journald with +02:00 offsets and short-iso-precise fractions: millisecond spans from journald', async () => {
    const restarts: SampleRestart[] = [{ startMs: Date.UTC(2026, 0, 1, 8), sessions: 5, gapMs: 4321, end: 'running' }];
    const rep = await analyzeText(
      renderConsoleLog(
        { restarts, level: 'info', events: false, seed: 2, home: '/h' },
        { journald: { precise: true, colonOffset: true } },
      ),
    );
    const gap = rep.restarts[0]!.bootstrap_gap!;
    expect(gap.precision_seconds).toBe(0.001);
    expect(gap.seconds).toBeCloseTo(4.821, 3); // agents at t → Agent initialized at t+200+4321+300
    expect(rep.restarts[0]!.started_at).toBe('2026-01-01T08:00:00Z');
  });

  it('a plain console redirect: same spans, days counted across midnight', async () => {
    const file = await analyzeText(renderGatewayLog(scenario('debug', false)));
    const consoleRep = await analyzeText(renderConsoleLog(scenario('debug', false)));
    expect(shape(consoleRep)).toEqual(shape(file));
    // The last start is at 23:59:20 and its bootstrap ends after midnight: the gap stays 45 s.
    expect(consoleRep.restarts[6]!.bootstrap_gap!.seconds).toBe(45);
    expect(consoleRep.timestamps.dates).toBe('anchored');
    const times = consoleRep.restarts.map((r) => Date.parse(r.started_at!));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('console times roll over midnight (hand-written)', async () => {
    const rep = await analyzeStartupLog({ path: join(FIX, 'rollover-console.log') }, { dateAnchor: ANCHOR });
    const r = rep.restarts[0]!;
    expect(r.bootstrap_gap!.seconds).toBe(35); // 23:59:50 → 00:00:25
    expect(r.started_at).toBe('2026-06-07T23:59:50+02:00');
    expect(r.ended_at).toBe('2026-06-08T09:12:01+02:00');
    expect(r.gap.database_locked).toBe(1);
  });

  it('without an anchor, console times have no date', async () => {
    const rep = await analyzeStartupLog({ path: join(FIX, 'rollover-console.log') }, { dateAnchor: null });
    expect(rep.restarts[0]!.started_at).toBeNull();
    expect(rep.restarts[0]!.started_at_text).toBe('day 1 23:59:50');
    expect(rep.restarts[0]!.bootstrap_gap!.seconds).toBe(35);
  });

  it('stdout redirected into gateway.log: every event twice, counted once', async () => {
    const file = await analyzeText(renderGatewayLog(scenario('info', true)));
    const both = await analyzeText(renderRedirectedLog(scenario('info', true)));
    expect(shape(both)).toEqual(shape(file));
    expect(both.restarts.map((r) => r.started_at)).toEqual(file.restarts.map((r) => r.started_at));
    expect(both.lines.duplicates_skipped).toBeGreaterThan(0);
  });

  it('a gateway.log with journald lines appended: both read', async () => {
    const rep = await analyzeStartupLog({ path: join(FIX, 'mixed.log') });
    expect(rep.restarts.map((r) => [r.end, r.bootstrap_gap?.seconds])).toEqual([
      ['stopped', 12],
      ['running', 20],
    ]);
    expect(rep.lines.json).toBe(5);
    expect(rep.lines.journald).toBe(6);
  });

  it(
    'the example log (test/fixtures/logs/facts-example.log): 41 s debug gap,' +
      ' 43.12 s to ready, one locked-database warning',
    async () => {
      const rep = await analyzeStartupLog({ path: join(FIX, 'facts-example.log') });
      const r = rep.restarts[0]!;
      expect(r.bootstrap_gap).toEqual({
        seconds: 41,
        precision_seconds: 1,
        from: 'Registered core tool short_expand',
        to: 'Registered core tool web_search',
      });
      expect(r.time_to_ready!.seconds).toBe(43.12);
      expect(r.spans.to_agent_initialized!.seconds).toBe(42);
      expect(r.gap).toMatchObject({ ingest_lines: 1, warnings: 1, database_locked: 1 });
      expect(r.end).toBe('stopped');
    },
  );
});

describe('robustness', () => {
  it('a missing file is "missing", not an exception', async () => {
    const rep = await analyzeStartupLog({ path: join(tempDir(), 'nope.log') });
    expect(rep.source.state).toBe('missing');
    expect(rep.restarts).toEqual([]);
  });

  it('a directory is "unreadable"', async () => {
    const rep = await analyzeStartupLog({ path: tempDir() });
    expect(rep.source.state).toBe('unreadable');
    expect(rep.source.error).toBe('a directory, not a regular file');
  });

  it('an empty file says so and gives the settings', async () => {
    const rep = await analyzeText('');
    expect(rep.source.state).toBe('empty');
    expect(rep.advice[0]!.kind).toBe('enable_info');
  });

  it('binary garbage, NUL runs, torn lines, CRLF and foreign text are counted and skipped', async () => {
    const rep = await analyzeStartupLog({ path: join(FIX, 'garbage.log') });
    expect(rep.lines).toMatchObject({ binary: 1, torn: 2, text: 2, json: 8 });
    expect(rep.restarts).toHaveLength(1);
    expect(rep.restarts[0]!.bootstrap_gap!.seconds).toBe(31);
    expect(rep.restarts[0]!.gap).toMatchObject({ ingest_lines: 1, warnings: 1 });
  });

  it(
    'property: any bytes, spliced into a real log at any chunk size, never ' + 'throw and every line is counted',
    async () => {
      const real = Buffer.from(readFileSync(join(FIX, 'facts-example.log')));
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ maxLength: 600 }),
          fc.nat({ max: real.length }),
          fc.integer({ min: 1, max: 700 }),
          async (junk, at, chunkBytes) => {
            const bytes = Buffer.concat([real.subarray(0, at), Buffer.from(junk), real.subarray(at)]);
            const pieces: Buffer[] = [];
            for (let i = 0; i < bytes.length; i += chunkBytes) pieces.push(bytes.subarray(i, i + chunkBytes));
            const rep = await analyzeStartupLog({ stream: Readable.from(pieces) }, { dateAnchor: null });
            const newlines = bytes.filter((b) => b === 10).length;
            const expected = newlines + (bytes.length > 0 && bytes[bytes.length - 1] !== 10 ? 1 : 0);
            expect(rep.lines.total).toBe(expected);
            expect(rep.restarts.length).toBeLessThanOrEqual(3);
          },
        ),
        { numRuns: 150 },
      );
    },
  );

  it('a line over 1 MiB is skipped without holding it in memory', async () => {
    const head = renderGatewayLog({
      restarts: [{ startMs: Date.UTC(2026, 0, 1), sessions: 3, gapMs: 2000, end: 'running' }],
      level: 'info',
      events: false,
      seed: 3,
      home: '/h',
    });
    const lines = head.split('\n');
    const text = [lines[0], 'x'.repeat(3 * 1024 * 1024), ...lines.slice(1)].join('\n');
    const rep = await analyzeText(text, { chunkBytes: 256 * 1024 });
    expect(rep.lines.overlong).toBe(1);
    expect(rep.restarts[0]!.bootstrap_gap!.seconds).toBeGreaterThanOrEqual(2);
  });

  it('a log that begins mid-run: the lines before the first start and a stop without a start are noted', async () => {
    const rep = await analyzeStartupLog({ path: join(FIX, 'midrun.log') });
    expect(rep.lines.before_first_restart).toBe(5);
    expect(rep.notes.join('\n')).toMatch(/1 clean stop\(s\) whose start is not in this log/);
    expect(rep.restarts[0]).toMatchObject({ end: 'running', reached: 'bootstrap' });
    expect(rep.restarts[0]!.bootstrap_gap).toMatchObject({ seconds: 34, lower_bound: true });
  });

  it('chunk boundaries do not change the result (every split of lines and of UTF-8 sequences)', async () => {
    const text =
      renderRedirectedLog(scenario('info', true)) + readFileSync(join(FIX, 'garbage.log')).toString('latin1');
    const whole = await analyzeText(Buffer.from(text, 'latin1'));
    for (const chunkBytes of [64, 97, 1000, 4099]) {
      const part = await analyzeText(Buffer.from(text, 'latin1'), { chunkBytes });
      expect({ ...part, source: null }).toEqual({ ...whole, source: null });
    }
  });

  it('a stop without a time in the bootstrap: its last progress line is read before its buffer is reused', async () => {
    const line = (time: string | null, message: string) =>
      JSON.stringify({ level: 'info', component: 'gateway', ...(time === null ? {} : { time }), message });
    const log =
      [
        line('2026-06-01T08:00:00+02:00', 'Log level set to "info"'),
        line('2026-06-01T08:00:01+02:00', 'Registered agent'),
        line('2026-06-01T08:00:09+02:00', 'ingest'),
        line(null, '✓ Gateway stopped'),
        ...Array.from({ length: 40 }, (_, i) => line(`2026-06-01T09:00:${10 + i}+02:00`, 'x'.repeat(i))),
      ].join('\n') + '\n';
    const to = 'last line before it died';
    const gap = { seconds: 8, precision_seconds: 1, from: 'Registered agent', to, lower_bound: true };
    for (let chunkBytes = 64; chunkBytes <= 1024; chunkBytes += 40) {
      const r = (await analyzeText(log, { chunkBytes })).restarts[0]!;
      expect({ chunkBytes, end: r.end, gap: r.bootstrap_gap }).toEqual({ chunkBytes, end: 'stopped', gap });
    }
  });

  it('standard input (a stream) gives the same report as the file', async () => {
    const text = renderGatewayLog(scenario('debug', true));
    const fromFile = await analyzeText(text);
    const bytes = Buffer.from(text);
    const pieces = [bytes.subarray(0, 1000), bytes.subarray(1000, 1001), bytes.subarray(1001)];
    const fromStream = await analyzeStartupLog({ stream: Readable.from(pieces) }, { dateAnchor: ANCHOR });
    expect(fromStream.source.path).toBeNull();
    expect(fromStream.source.bytes_read).toBe(bytes.length);
    expect({ ...fromStream, source: null }).toEqual({ ...fromFile, source: null });
  });

  it('copy-and-truncate while reading: detected and reported, what was read is analysed', async () => {
    const dir = tempDir();
    const path = join(dir, 'gateway.log');
    const text = renderGatewayLog(scenario('info', false));
    writeFileSync(path, text);
    let calls = 0;
    const rep = await analyzeStartupLog(
      { path },
      {
        chunkBytes: 4096,
        onChunk: () => {
          // logrotate copytruncate: the file is copied, emptied, and the gateway (O_APPEND) writes on.
          if (++calls === 3) {
            truncateSync(path, 0);
            appendFileSync(
              path,
              '{"level":"info","component":"gateway","time":"2026-06-09T00:00:00+02:00",' +
                '"caller":"/src/pkg/gateway/gateway.go:165","message":"Log level set to ' +
                '\\"info\\""}\n',
            );
          }
        },
      },
    );
    // The reader reads one chunk ahead: it stops after the third or the fourth chunk of the old content.
    const cut = rep.source.truncated_while_reading!;
    expect([3 * 4096, 4 * 4096]).toContain(cut.at_byte);
    expect(cut.size_after).toBeLessThan(4096);
    expect(rep.source.bytes_read).toBe(cut.at_byte);
    expect(rep.notes.join('\n')).toMatch(/copy-and-truncate/);
    expect(rep.restarts.length).toBeGreaterThanOrEqual(1);
    expect(rep.restarts[0]!.started_at).toBe('2026-06-01T08:00:00+02:00');
  });

  it('keeps only the latest restarts when there are very many, and says how many there were', async () => {
    const restarts: SampleRestart[] = Array.from({ length: 40 }, (_, i) => ({
      startMs: Date.UTC(2026, 0, 1) + i * 3_600_000,
      sessions: 1,
      gapMs: 1000,
      end: 'stopped',
      stopMs: Date.UTC(2026, 0, 1) + i * 3_600_000 + 600_000,
      traffic: 0,
    }));
    const rep = await analyzeText(renderGatewayLog({ restarts, level: 'info', events: false, seed: 4, home: '/h' }), {
      maxRestarts: 5,
    });
    expect(rep.restarts_found).toBe(40);
    expect(rep.restarts.length + rep.restarts_dropped).toBe(40);
    expect(rep.restarts[rep.restarts.length - 1]!.n).toBe(40);
  });
});

describe('summary, prunes and the latest restart', () => {
  it('trend: first vs latest complete gap and a slope per day', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', true)));
    const t = rep.summary.trend!;
    expect(t.first).toMatchObject({ restart: 1, seconds: 6 });
    expect(t.latest).toMatchObject({ restart: 7, seconds: 45 });
    expect(t.direction).toBe('rising');
    expect(t.restarts_with_gap).toBe(4); // failed starts and the crash in the bootstrap have no complete gap
    expect(t.per_day_seconds).toBeGreaterThan(0);
    expect(rep.summary).toMatchObject({ restarts: 7, stopped: 2, crashed: 2, failed: 2, running: 1 });
    expect(lastBootstrapGapSeconds(rep)).toBe(45);
  });

  it('marks the restart after a prune and pairs the prune with the gaps around it', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', false)));
    const effects = markPrunes(rep, [
      { at: '2026-06-06T12:00:00.000Z', deleted_sessions: 510, freed_bytes: 9_000_000, outcome: 'ok' },
      { at: '2026-06-07T12:00:00.000Z', deleted_sessions: 0, freed_bytes: 0, outcome: 'ok' },
    ]);
    expect(rep.restarts.filter((r) => r.after_prune).map((r) => r.n)).toEqual([7]);
    expect(rep.restarts[6]!.after_prune).toEqual({
      at: '2026-06-06T12:00:00.000Z',
      deleted_sessions: 510,
      freed_bytes: 9_000_000,
    });
    expect(effects).toEqual([
      {
        at: '2026-06-06T12:00:00.000Z',
        deleted_sessions: 510,
        freed_bytes: 9_000_000,
        gap_before: { restart: 5, seconds: 95 },
        gap_after: { restart: 7, seconds: 45 },
      },
    ]);
  });

  it('settleLatest: a "running" restart whose gateway is gone becomes crashed', async () => {
    const rep = await analyzeText(renderGatewayLog(scenario('info', false)));
    settleLatest(rep, true);
    expect(rep.restarts[6]!.end).toBe('running');
    settleLatest(rep, false);
    expect(rep.restarts[6]!.end).toBe('crashed');
    expect(rep.summary.running).toBe(0);
  });

  it("the sample-home builder's log, for each level", async () => {
    for (const [level, events] of [
      ['warn', false],
      ['info', false],
      ['debug', false],
      ['info', true],
    ] as const) {
      const home = join(tempDir(), '.picoclaw');
      buildSampleHome({ dir: home, sessions: 20, seed: 8, logLevel: level, logEvents: events, restarts: 6 });
      const rep = await analyzeStartupLog({ path: join(home, 'logs', 'gateway.log') });
      if (level === 'warn') {
        expect(rep.content_level).toBe('warn');
        expect(rep.advice[0]!.kind).toBe('enable_info');
        continue;
      }
      expect(rep.restarts.map((r) => r.end)).toEqual(['stopped', 'stopped', 'crashed', 'failed', 'stopped', 'running']);
      expect(rep.restarts.filter((r) => r.bootstrap_gap).length).toBe(5);
      expect(
        rep.restarts.every(
          (r) =>
            r.end === 'failed' ||
            (events ? r.time_to_ready!.precision_seconds === 0.001 : r.time_to_ready!.precision_seconds === 1),
        ),
      ).toBe(true);
    }
  });
});
