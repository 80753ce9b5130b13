import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ConsoleClock,
  MAX_STEP_BACK_MS,
  formatInstant,
  isJsonLineAt,
  jsonLevelByte,
  Level,
  LineFormat,
  Marker,
  jsonMessageStart,
  LIGHT_MARKERS,
  matchMarkerBytes,
  newLineScan,
  parseInstant,
  parseJsonLight,
  parseLine,
  scanLine,
  splitConsoleMessage,
} from '../../src/picoclaw/gatewaylog/gatewaylog.js';
import { sampleGatewayEvents } from '../../dev/sample/gateway-events.js';
import { renderConsoleLine, renderJsonLine } from '../../dev/sample/gatewaylog.js';
import { scenario } from './scenario.js';

const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const scan = (line: string) => {
  const s = latin1(line);
  const out = newLineScan();
  scanLine(s, 0, s.length, out);
  return out;
};

/**
 * Example lines in PicoClaw's file format (docs/picoclaw.md#line-format), with message strings and callers of the
 * upstream source.
 */
const FACTS = readFileSync(fileURLToPath(new URL('../fixtures/logs/facts-example.log', import.meta.url)), 'utf8')
  .trim()
  .split('\n');

describe('scanLine: the cheap look (JSON)', () => {
  it("recognises every marker in the facts document's example lines", () => {
    const kinds = FACTS.map((l) => scan(l).marker);
    expect(kinds.slice(0, 10)).toEqual([
      Marker.LOG_LEVEL_SET,
      Marker.FOUND_PID,
      Marker.PID_NOT_RUNNING,
      Marker.WROTE_PID,
      Marker.AGENT_REGISTERED,
      Marker.CORE_TOOL,
      Marker.INGEST,
      Marker.BOOTSTRAP_WARN,
      Marker.CORE_TOOL,
      Marker.AGENT_INITIALIZED,
    ]);
    expect(kinds).toContain(Marker.HTTP_LISTENING);
    expect(kinds).toContain(Marker.CHANNELS_STARTED);
    expect(kinds).toContain(Marker.GATEWAY_READY_EVENT);
    expect(kinds).toContain(Marker.SHUTTING_DOWN);
    expect(kinds).toContain(Marker.GATEWAY_STOPPED); // `✓` matched in its latin1 form
    expect(kinds[kinds.length - 1]).toBe(Marker.REMOVE_PID);
    expect(FACTS.map((l) => scan(l).format).every((f) => f === LineFormat.JSON)).toBe(true);
  });

  it('reads the level from the fixed position after {"level":"', () => {
    expect(scan(FACTS[2]!).level).toBe(Level.WARN);
    expect(scan(FACTS[3]!).level).toBe(Level.DEBUG);
    expect(scan('{"level":"error","component":"gateway","message":"x"}').level).toBe(Level.ERROR);
  });

  it('exact markers must end where the message ends', () => {
    const j = (m: string) =>
      scan(
        JSON.stringify({
          level: 'info',
          component: 'seahorse',
          time: '2026-06-13T18:19:58+02:00',
          caller: '/src/x.go:1',
          message: m,
        }),
      ).marker;
    expect(j('ingest')).toBe(Marker.INGEST);
    expect(j('ingest failed')).toBe(Marker.NONE);
    expect(j('bootstrap')).toBe(Marker.BOOTSTRAP_WARN);
    expect(j('bootstrap: history replaced, rebuilding')).toBe(Marker.BOOTSTRAP_INFO);
    expect(j('Agent initialized')).toBe(Marker.AGENT_INITIALIZED);
    expect(j('Agent initialized twice')).toBe(Marker.NONE);
    expect(j('Log level changing from current to "debug"')).toBe(Marker.LEVEL_CHANGING);
    expect(j('🔄 Config file changed, reloading...')).toBe(Marker.RELOAD);
  });

  it('only the top-level message counts (a nested "message" key is a field)', () => {
    const line =
      '{"level":"info","component":"events","payload":{"message":"Agent initialized"}' +
      ',"time":"2026-06-13T18:19:58+02:00","caller":"/src/x.go:1","message":"Runtime ' +
      'event: agent.turn"}';
    expect(scan(line).marker).toBe(Marker.NONE);
    const b = Buffer.from(line);
    const msgStart = jsonMessageStart(b, 0, b.length);
    expect(b.toString('utf8', msgStart, msgStart + 14)).toBe('Runtime event:'); // the last key, not the nested one
    expect(matchMarkerBytes(b, msgStart, b.length)).toBe(Marker.NONE);
  });

  it('jsonMessageStart: the last key only, escaped quotes, no message, not a message', () => {
    const at = (line: string) => {
      const b = Buffer.from(line);
      const msgStart = jsonMessageStart(b, 0, b.length);
      return msgStart < 0 ? null : b.toString('utf8', msgStart, b.length - 2);
    };
    expect(at(FACTS[0]!)).toBe('Log level set to \\"info\\"');
    expect(
      at(
        '{"level":"info","component":"x","time":"2026-06-13T18:19:35+02:00","caller":"/src/x.go:1","message":"a \\\\"}',
      ),
    ).toBe('a \\\\');
    // zerolog omits an empty message
    expect(at('{"level":"info","component":"x","time":"2026-06-13T18:19:35+02:00","caller":"/src/x.go:1"}')).toBeNull();
    expect(at('{"level":"info","component":"x","note":"\\"message\\":\\"Agent initialized"}')).toBeNull();
    expect(at('{"level":"info","message":"ok","n":1}')).toBeNull(); // message not last: not zerolog's shape
  });

  it('torn JSON, NUL holes, binary, empty, CRLF', () => {
    expect(scan('{"level":"info","component":"seahorse","conv_id":2,"messa')).toMatchObject({
      format: LineFormat.JSON,
      torn: true,
    });
    expect(scan('\u0000\u0000\u0000' + FACTS[0])).toMatchObject({
      format: LineFormat.JSON,
      marker: Marker.LOG_LEVEL_SET,
      nulPrefix: true,
    });
    expect(scan('\u0000\u0000').format).toBe(LineFormat.BINARY);
    expect(scan('\u001f\u008b\u0008binary').format).toBe(LineFormat.BINARY);
    expect(scan('').format).toBe(LineFormat.EMPTY);
    expect(scan(FACTS[0] + '\r')).toMatchObject({ format: LineFormat.JSON, marker: Marker.LOG_LEVEL_SET, torn: false });
    expect(scan('✓ Gateway started on 127.0.0.1:18790').format).toBe(LineFormat.TEXT);
  });

  it('the byte-level path agrees with the per-line string scan on every sample line', () => {
    const events = sampleGatewayEvents(scenario('debug', true)).filter((e) => !e.stdoutOnly);
    const buf = Buffer.from(events.map((e) => renderJsonLine(e, 120)).join('\n') + '\n');
    const text = buf.toString('latin1');
    let pos = 0;
    let checked = 0;
    const kinds = new Set<number>();
    while (pos < buf.length) {
      const nl = buf.indexOf(10, pos);
      expect(isJsonLineAt(buf, pos, nl)).toBe(true);
      const msgStart = jsonMessageStart(buf, pos, nl);
      const fast = msgStart >= 0 ? matchMarkerBytes(buf, msgStart, nl) : Marker.NONE;
      const slow = newLineScan();
      scanLine(text, pos, nl, slow);
      expect(fast).toBe(slow.marker);
      expect(jsonLevelByte(buf, pos)).toBe(slow.level);
      kinds.add(fast);
      checked++;
      pos = nl + 1;
    }
    expect(checked).toBe(events.length);
    expect(kinds.size).toBeGreaterThan(15);
  });
});

describe('parseJsonLight: marker lines read from their bytes', () => {
  it('gives the same time, message and name as a full parse, for every light marker line of a sample', () => {
    const events = sampleGatewayEvents(scenario('debug', true)).filter((e) => !e.stdoutOnly);
    let checked = 0;
    for (const e of [...events.map((x) => renderJsonLine(x, 120)), ...FACTS]) {
      const b = Buffer.from(e);
      const msgStart = jsonMessageStart(b, 0, b.length);
      if (msgStart < 0) continue;
      const kind = matchMarkerBytes(b, msgStart, b.length);
      const level = jsonLevelByte(b, 0);
      if (!LIGHT_MARKERS.has(kind) || level >= Level.WARN) continue;
      const light = parseJsonLight(b, 0, b.length, msgStart, level, kind)!;
      const full = parseLine(e)!;
      expect(light.message).toBe(full.message);
      expect(light.time).toEqual(full.time);
      expect(light.level).toBe(full.level);
      if (kind === Marker.CORE_TOOL) expect(light.fields.name).toBe(full.fields.name);
      checked++;
    }
    expect(checked).toBeGreaterThan(100);
  });

  it("declines what is not in zerolog's shape (the caller then parses in full)", () => {
    const b = Buffer.from('{"level":"info","component":"agent","message":"Agent initialized"}');
    expect(
      parseJsonLight(b, 0, b.length, jsonMessageStart(b, 0, b.length), Level.INFO, Marker.AGENT_INITIALIZED),
    ).toBeNull();
    const c = Buffer.from(
      '{"level":"debug","component":"tools","time":"2026-06-13T18:19:36+02:00",' +
        '"caller":"/src/pkg/tools/registry.go:88","message":"Registered core tool"}',
    );
    // no name
    expect(parseJsonLight(c, 0, c.length, jsonMessageStart(c, 0, c.length), Level.DEBUG, Marker.CORE_TOOL)).toBeNull();
  });
});

describe('console and journald lines', () => {
  const line =
    '18:20:09 WRN seahorse src/pkg/agent/context_seahorse.go:189 > bootstrap ' +
    'error="bootstrap: get messages: database is locked" session=agent:cron-3f9a';

  it('a console line: level, marker, message, fields (quoted values read back)', () => {
    expect(scan(line)).toMatchObject({ format: LineFormat.CONSOLE, level: Level.WARN, marker: Marker.BOOTSTRAP_WARN });
    const p = parseLine(line)!;
    expect(p.message).toBe('bootstrap');
    expect(p.fields).toMatchObject({
      error: 'bootstrap: get messages: database is locked',
      session: 'agent:cron-3f9a',
      component: 'seahorse',
    });
    expect(p.time).toEqual({ kind: 'timeOfDay', secondOfDay: 18 * 3600 + 20 * 60 + 9, precisionMs: 1000 });
  });

  it('numbers, booleans and JSON values in console fields', () => {
    expect(
      splitConsoleMessage(
        'Runtime event: gateway.ready duration_ms=43120 event_kind=gateway.ready ok=false tags=["a b","c"]',
      ),
    ).toEqual({
      message: 'Runtime event: gateway.ready',
      fields: { duration_ms: 43120, event_kind: 'gateway.ready', ok: false, tags: ['a b', 'c'] },
    });
    expect(splitConsoleMessage('Log level set to "info"')).toEqual({ message: 'Log level set to "info"', fields: {} });
  });

  it('journald short-iso, with +0200 and +02:00, and short-iso-precise', () => {
    for (const stamp of ['2026-06-13T18:20:09+0200', '2026-06-13T18:20:09+02:00', '2026-06-13T18:20:09.412907+02:00']) {
      const j = `${stamp} raspberrypi picoclaw[4242]: ${line}`;
      expect(scan(j)).toMatchObject({ format: LineFormat.JOURNALD, marker: Marker.BOOTSTRAP_WARN, level: Level.WARN });
      const p = parseLine(j)!;
      expect(p.format).toBe(LineFormat.JOURNALD);
      expect(p.journald!.ms).toBe(Date.UTC(2026, 5, 13, 16, 20, 9) + (stamp.includes('.') ? 412 : 0));
      expect(p.journald!.offsetMin).toBe(120);
      expect(p.journald!.precisionMs).toBe(stamp.includes('.') ? 1 : 1000);
    }
  });

  it('journald short (no year) and a banner behind the prefix', () => {
    expect(scan(`Jun 13 18:20:09 raspberrypi picoclaw[4242]: ${line}`)).toMatchObject({
      format: LineFormat.JOURNALD,
      marker: Marker.BOOTSTRAP_WARN,
    });
    const banner = '2026-06-13T18:20:17+0200 raspberrypi picoclaw[4242]: 📦 Agent Status:';
    expect(scan(banner)).toMatchObject({ format: LineFormat.JOURNALD, marker: Marker.NONE });
    expect(parseLine(banner)!.message).toBe('📦 Agent Status:');
  });

  it('every sample event survives console rendering: the same marker, message and fields', () => {
    const events = sampleGatewayEvents(scenario('debug', true)).filter(
      (e) => !e.stdoutOnly && !Object.values(e.fields).some((v) => typeof v === 'string' && v.includes('\n')),
    );
    for (const e of events) {
      const jsonLine = renderJsonLine(e, 120);
      const consoleLine = renderConsoleLine(e, 120);
      expect(scan(consoleLine).marker).toBe(scan(jsonLine).marker);
      const p = parseLine(consoleLine)!;
      expect(p.message).toBe(e.message);
      const { component, ...fields } = p.fields;
      expect(component).toBe(e.component);
      expect(fields).toEqual(e.fields);
    }
  });
});

describe('times', () => {
  it('parseInstant: RFC3339 with Z, ±hh:mm, ±hhmm and fractions; rejects the rest', () => {
    expect(parseInstant('2026-06-13T18:19:35+02:00')).toEqual({
      ms: Date.UTC(2026, 5, 13, 16, 19, 35),
      offsetMin: 120,
      precisionMs: 1000,
    });
    expect(parseInstant('2026-06-13T18:19:35Z')).toEqual({
      ms: Date.UTC(2026, 5, 13, 18, 19, 35),
      offsetMin: 0,
      precisionMs: 1000,
    });
    expect(parseInstant('2026-06-13T18:19:35-0530')!.offsetMin).toBe(-330);
    expect(parseInstant('2026-06-13T18:19:35.412907311+02:00')).toMatchObject({ precisionMs: 1 });
    expect(parseInstant('2026-13-13T18:19:35Z')).toBeNull();
    expect(parseInstant('yesterday')).toBeNull();
  });

  it('a stamp with no such day reads as unparseable, in every reader, exactly like month 13', () => {
    const json = (stamp: string) =>
      `{"level":"info","component":"agent","time":"${stamp}",` +
      '"caller":"/src/pkg/gateway/gateway.go:214","message":"Agent initialized"}';
    const journald = (stamp: string) =>
      `${stamp} raspberrypi picoclaw[4242]: 18:19:35 INF agent x.go:1 > Agent initialized`;
    for (const [bad, month13] of [
      ['2026-02-30T18:19:35+02:00', '2026-13-30T18:19:35+02:00'],
      ['2025-02-29T18:19:35Z', '2025-13-29T18:19:35Z'],
      ['2026-04-31T18:19:35.5+0200', '2026-13-31T18:19:35.5+0200'],
      ['2026-02-30T23:59:60Z', '2026-13-30T23:59:60Z'], // a leap second does not excuse the day
    ] as [string, string][]) {
      expect(parseInstant(bad), bad).toBeNull();
      expect(parseInstant(month13), month13).toBeNull();
      const b = Buffer.from(json(bad));
      const msgStart = jsonMessageStart(b, 0, b.length);
      expect(parseJsonLight(b, 0, b.length, msgStart, Level.INFO, Marker.AGENT_INITIALIZED)).toBeNull();
      const { fields: badFields, ...badLine } = parseLine(json(bad))!;
      const { fields: refFields, ...refLine } = parseLine(json(month13))!;
      expect(badLine).toEqual(refLine);
      expect(badLine.time).toBeNull();
      expect({ ...badFields, time: 'x' }).toEqual({ ...refFields, time: 'x' });
      const j = parseLine(journald(bad.replace('+02:00', '+0200')))!;
      expect(j).toEqual(parseLine(journald(month13.replace('+02:00', '+0200'))));
      expect(j).toMatchObject({ format: LineFormat.JOURNALD, journald: null, time: { kind: 'timeOfDay' } });
    }
    expect(parseInstant('2024-02-29T12:00:00Z')).toMatchObject({ ms: Date.UTC(2024, 1, 29, 12) }); // a leap year
  });

  it("formatInstant keeps the log's offset", () => {
    expect(formatInstant(Date.UTC(2026, 5, 13, 16, 19, 35), 120)).toBe('2026-06-13T18:19:35+02:00');
    expect(formatInstant(Date.UTC(2026, 5, 13, 16, 19, 35), 0)).toBe('2026-06-13T16:19:35Z');
    expect(formatInstant(Date.UTC(2026, 5, 13, 16, 19, 35, 412), -330)).toBe('2026-06-13T10:49:35.412-05:30');
  });

  it(
    'ConsoleClock: forward across midnight, small steps back stay on the day,' + ' dates borrowed from a dated line',
    () => {
      const c = new ConsoleClock();
      const at = (h: number, m: number, s: number) => c.resolve(h * 3600 + m * 60 + s);
      expect(at(23, 59, 58)).toMatchObject({ ms: (23 * 3600 + 59 * 60 + 58) * 1000, floating: true });
      expect(at(0, 0, 1).ms).toBe(86_400_000 + 1000); // the next day
      // a whole day later, not a step back of 2 s
      expect(at(23, 59, 59).ms).toBe(86_400_000 + 1000 + (86_399 - 1) * 1000);
      expect(at(23, 59, 50).ms).toBe(86_400_000 + (23 * 3600 + 59 * 60 + 50) * 1000); // 9 s back: the same day (jitter)
      const d = new ConsoleClock();
      d.noteInstant(Date.UTC(2026, 5, 13, 21, 59, 0), 120); // 23:59:00 local
      expect(d.resolve(30)).toEqual({ ms: Date.UTC(2026, 5, 13, 22, 0, 30), offsetMin: 120, floating: false });
    },
  );

  it("ConsoleClock.withDate: journald's date, the console's time of day, the nearest day", () => {
    expect(
      ConsoleClock.withDate(23 * 3600 + 59 * 60 + 59, { ms: Date.UTC(2026, 5, 13, 22, 0, 0), offsetMin: 120 }),
    ).toBe(Date.UTC(2026, 5, 13, 21, 59, 59));
  });

  it('property: no line steps back from the line before it by more than the jitter allowance', () => {
    // The rule is per step (MAX_STEP_BACK_MS from the previous line), not from the highest time seen:
    // two steps back of 600 s each are two plausible out-of-order writes ([601, 1, 0] is such a log).
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 86_399 }), { minLength: 1, maxLength: 50 }), (secs) => {
        const c = new ConsoleClock();
        let prev = -Infinity;
        for (const s of secs) {
          const t = c.resolve(s).ms;
          expect(t).toBeGreaterThanOrEqual(prev - MAX_STEP_BACK_MS);
          expect((((t / 1000) % 86_400) + 86_400) % 86_400).toBe(s);
          prev = t;
        }
      }),
      { examples: [[[601, 1, 0]]] },
    );
  });
});
