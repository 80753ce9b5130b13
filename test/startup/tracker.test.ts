import { describe, expect, it } from 'vitest';
import {
  Level,
  LineFormat,
  Marker,
  type LevelValue,
  type MarkerValue,
  type ParsedLine,
} from '../../src/picoclaw/gatewaylog/gatewaylog.js';
import { Phase } from '../../src/startup/restart.js';
import { toEntry } from '../../src/startup/spans.js';
import type { LineTime } from '../../src/startup/times.js';
import { RestartTracker } from '../../src/startup/tracker.js';

/**
 * The restart tracker driven directly with markers: no bytes, no framing, no clock. Each
 * marker is a parsed line at a time (seconds after T0), as the analysis would hand it over.
 */
const T0 = Date.UTC(2026, 5, 1, 6, 0, 0);
const at = (s: number): LineTime => ({ ms: T0 + s * 1000, floating: false, offsetMin: 0, precisionMs: 1000 });

function parsed(message: string, level: LevelValue, fields: Record<string, unknown> = {}, s = 0): ParsedLine {
  const t = at(s);
  const time = { kind: 'instant' as const, ms: t.ms, offsetMin: 0, precisionMs: 1000 };
  return { format: LineFormat.JSON, level, message, fields, time, journald: null };
}

type Fields = Record<string, unknown>;

/** Feed one line: it counts for the current process, then (as a marker) moves the tracker. */
function feed(tr: RestartTracker, kind: MarkerValue, message: string, level: LevelValue, s: number, f: Fields = {}) {
  tr.countLine(level);
  tr.marker(kind, parsed(message, level, f, s), level, at(s));
}

const same = (t: LineTime | null) => t;
const STALE_PID = 'not running (PID: 7) so will remove the pid file: /h/.picoclaw.pid';

describe('RestartTracker', () => {
  it('a clean start: start markers merge into one restart, the bootstrap gap is measured, the stop closes it', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.WROTE_PID, 'wrote pid file: /h/.picoclaw.pid success', Level.INFO, 1);
    feed(tr, Marker.AGENT_REGISTERED, 'Registered agent', Level.INFO, 2);
    expect(tr.inBootstrap()).toBe(true);
    for (let i = 0; i < 3; i++) feed(tr, Marker.INGEST, 'ingest', Level.INFO, 3 + i);
    feed(tr, Marker.AGENT_INITIALIZED, 'Agent initialized', Level.INFO, 12);
    feed(tr, Marker.CHANNELS_STARTED, 'Channel startup completed', Level.INFO, 13);
    feed(tr, Marker.GATEWAY_STOPPED, '✓ Gateway stopped', Level.INFO, 500);
    tr.finish();

    expect(tr.found).toBe(1);
    const r = tr.restarts[0]!;
    expect(r.startMarkers).toEqual(['Log level set to "info"', 'wrote pid file']);
    expect(r.phase).toBe(Phase.SERVING);
    expect(r.end).toBe('stopped');
    expect(r.gap.ingest_lines).toBe(3);
    const e = toEntry(r, same);
    expect(e.level).toBe('info');
    const gap = { seconds: 10, precision_seconds: 1, from: 'Registered agent', to: 'Agent initialized' };
    expect(e.bootstrap_gap).toEqual(gap);
    const ready = { seconds: 13, from: 'Log level set to "info"', to: 'Channel startup completed' };
    expect(e.time_to_ready).toMatchObject(ready);
    expect(e.ended_at).toBe('2026-06-01T06:08:20Z');
  });

  it('a new start while the previous one is in its bootstrap: the previous one was killed there', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.AGENT_REGISTERED, 'Registered agent', Level.INFO, 2);
    feed(tr, Marker.INGEST, 'ingest', Level.INFO, 7);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 100);
    feed(tr, Marker.PID_NOT_RUNNING, STALE_PID, Level.WARN, 100);
    feed(tr, Marker.NONE, 'an info line of the new process', Level.INFO, 101);
    tr.finish();

    expect(tr.restarts.map((r) => r.n)).toEqual([1, 2]);
    const [first, second] = tr.restarts;
    expect(first!.end).toBe('crashed');
    expect(first!.endDetail).toBe(
      'killed during the bootstrap; no closing line; the next start found its PID file stale',
    );
    expect(first!.endT).toEqual(at(7)); // its last line
    const e = toEntry(first!, same);
    expect(e.bootstrap_gap).toEqual({
      seconds: 5,
      precision_seconds: 1,
      from: 'Registered agent',
      to: 'last line before it died',
      lower_bound: true,
    });
    expect(second!.end).toBe('running');
    expect(second!.endDetail).toBe('no closing line yet: still starting when the log ends');
  });

  it('a second instance refused while the first serves is a failed restart of its own; the first still runs', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.AGENT_INITIALIZED, 'Agent initialized', Level.INFO, 5);
    feed(tr, Marker.CHANNELS_STARTED, 'Channel startup completed', Level.INFO, 6);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 60);
    feed(tr, Marker.FOUND_PID, 'found pid file (PID: 7, version: 0.2.7)', Level.INFO, 60);
    const error = 'gateway already running (PID 7)';
    feed(tr, Marker.STARTUP_FAILED, 'Gateway startup failed', Level.ERROR, 61, { error });
    feed(tr, Marker.RELOAD, '🔄 Config file changed, reloading...', Level.INFO, 90);
    tr.finish();

    const [first, refused] = tr.restarts;
    expect(refused!.end).toBe('failed');
    expect(refused!.endDetail).toBe('gateway already running (PID 7)');
    expect(refused!.startMarkers).toEqual(['Log level set to "info"', 'found pid file']);
    expect(first!.end).toBe('running');
    expect(first!.endDetail).toBeNull();
    expect(first!.reloads).toBe(1); // lines after the refusal belong to the first process again
    expect(tr.reloads).toBe(1);
  });

  it('one rule for warnings: cut to 160 characters, the first bootstrap warning at warn level too', () => {
    const tr = new RestartTracker(10);
    const long = 'bootstrap: get messages: database is locked ' + 'x'.repeat(200);
    feed(tr, Marker.PID_NOT_RUNNING, STALE_PID, Level.WARN, 0);
    // At warn level this line is the first sign of the bootstrap; the second is counted inside it.
    feed(tr, Marker.BOOTSTRAP_WARN, 'bootstrap', Level.WARN, 30, { error: long });
    feed(tr, Marker.BOOTSTRAP_WARN, 'bootstrap', Level.WARN, 31, { error: long });
    tr.finish();

    const e = toEntry(tr.restarts[0]!, same);
    expect(e.reached).toBe('bootstrap');
    expect(e.gap).toMatchObject({ warnings: 2, bootstrap_failures: 2, database_locked: 2 });
    expect(e.gap.warning_messages).toEqual([{ text: long.slice(0, 157) + '...', count: 2 }]);
  });

  it('at most 50 distinct warning texts are counted per restart; every warning still counts', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.AGENT_REGISTERED, 'Registered agent', Level.INFO, 1);
    for (let i = 0; i < 60; i++) feed(tr, Marker.NONE, `warning ${String(i).padStart(2, '0')}`, Level.WARN, 2);
    // A text first seen after the cap is not counted, however often it comes.
    for (let i = 0; i < 5; i++) feed(tr, Marker.NONE, 'warning 59', Level.WARN, 3);
    feed(tr, Marker.NONE, 'warning 00', Level.WARN, 3);
    const r = tr.restarts[0]!;
    expect(r.gap.warnings).toBe(66);
    expect(r.warnTexts!.size).toBe(50);
    expect(toEntry(r, same).gap.warning_messages[0]).toEqual({ text: 'warning 00', count: 2 });
  });

  it('a bootstrap progress line is kept by reference until the chunk is done, then copied', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.AGENT_REGISTERED, 'Registered agent', Level.INFO, 1);
    const line = '{"level":"info","component":"seahorse","time":"2026-06-01T06:00:42Z","message":"ingest"}';
    const chunk = Buffer.from(`xx${line}\n`);
    tr.countLine(Level.INFO);
    tr.progressLine(Marker.INGEST, chunk, 2, 2 + line.length);
    tr.chunkDone();
    chunk.fill(0x20); // the reader reuses its buffer for the next chunk
    tr.finish();
    const r = tr.restarts[0]!;
    expect(r.gap.ingest_lines).toBe(1);
    expect(r.lastT).toEqual(at(42));
    const gap = { seconds: 41, to: 'last line so far', lower_bound: true };
    expect(toEntry(r, same).bootstrap_gap).toMatchObject(gap);
  });

  it('a restart closed by a line without a time settles its progress line before the chunk is reused', () => {
    const tr = new RestartTracker(10);
    feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, 0);
    feed(tr, Marker.AGENT_REGISTERED, 'Registered agent', Level.INFO, 1);
    const line = '{"level":"info","component":"seahorse","time":"2026-06-01T06:00:42Z","message":"ingest"}';
    const chunk = Buffer.from(line);
    tr.countLine(Level.INFO);
    tr.progressLine(Marker.INGEST, chunk, 0, line.length);
    const stop = { ...parsed('✓ Gateway stopped', Level.INFO), time: null };
    tr.marker(Marker.GATEWAY_STOPPED, stop, Level.INFO, null);
    tr.chunkDone(); // copies only what open restarts point at
    chunk.fill(0x20);
    tr.finish();
    expect(tr.restarts[0]!.end).toBe('stopped');
    expect(tr.restarts[0]!.lastT).toEqual(at(42));
  });

  it('keeps the latest restarts and counts the dropped ones', () => {
    const tr = new RestartTracker(4);
    for (let i = 0; i < 12; i++) {
      feed(tr, Marker.LOG_LEVEL_SET, 'Log level set to "info"', Level.INFO, i * 100);
      feed(tr, Marker.GATEWAY_STOPPED, '✓ Gateway stopped', Level.INFO, i * 100 + 50);
    }
    tr.finish();
    expect(tr.found).toBe(12);
    expect(tr.restarts.length + tr.dropped).toBe(12);
    expect(tr.restarts.length).toBeLessThanOrEqual(5);
    expect(tr.restarts.at(-1)!.n).toBe(12);
  });
});
