import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NOTIFY_STATE_FILE } from '../../src/state/notify-state.js';
import { fakeGateway, refreshes, sampleHome, startDaemon, writeConfig, type Daemon } from '../daemon/support.js';
import { tempDir } from '../support/tmp.js';
import { receiver } from './receiver.js';

/**
 * Notifications end to end through the built daemon: a fixture board with under-voltage, receivers on
 * loopback (one that answers, one that answers 500, one that never answers), and a restart of the daemon
 * while the problem lasts. Every wait is for an event (a request at the receiver, a log line, N refreshes).
 */
const SECRET = 'tok-9f8e7d6c5b4a';
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) if (d.child.exitCode === null) await d.stop('SIGKILL').catch(() => undefined);
});

async function setup(notify: Record<string, unknown>) {
  const port = await fakeGateway(200);
  const h = sampleHome({ gatewayPort: port });
  const stateDir = join(h.root, 'state');
  const config = writeConfig(tempDir(), { metrics: { refresh_seconds: 1 }, notify });
  const start = async (board: 'pi4' | 'pi4-undervoltage') => {
    const d = await startDaemon({ home: h.home, stateDir, config, board });
    daemons.push(d);
    return d;
  };
  return { start, stateDir };
}

const bodyOf = (b: string) => JSON.parse(b) as { event: string; code: string; level: string; health: unknown };

describe('notifications through the daemon', () => {
  it('a problem raised once; a restart while it lasts repeats nothing; a healthy board clears it', async () => {
    const r = await receiver(200);
    const { start, stateDir } = await setup({
      targets: [{ type: 'webhook', url: `${r.base}/hook?token=${SECRET}` }],
      retry_seconds: 0.2,
    });
    const d1 = await start('pi4-undervoltage');
    const first = bodyOf((await r.nth(1)).body);
    const second = bodyOf((await r.nth(2)).body);
    const codes = [first, second].map((m) => `${m.event} ${m.code}`).sort();
    expect(codes).toEqual(['raised throttled_now', 'raised under_voltage_now']);
    expect(first.health).toMatchObject({ status: 'CRITICAL' });
    await d1.waitForLog((l) => l.msg === 'notification delivered');
    expect(JSON.parse(readFileSync(join(stateDir, NOTIFY_STATE_FILE), 'utf8'))).toMatchObject({
      active: { 'health:under_voltage_now': { level: 'critical' } },
    });
    await refreshes(d1, 2);
    expect(r.received).toHaveLength(2);
    expect((await d1.stop()).code).toBe(0);

    // The same board after a restart: the same transitions are not sent again.
    const d2 = await start('pi4-undervoltage');
    await refreshes(d2, 3);
    expect(r.received).toHaveLength(2);
    await d2.stop();

    // The supply is fixed: under-voltage now is cleared (the guard's latch still remembers it since boot).
    const d3 = await start('pi4');
    const cleared = await r.nth(3);
    const all = [cleared, ...(await Promise.all([r.nth(4)]))].map((x) => bodyOf(x.body));
    expect(all.map((m) => `${m.event} ${m.code}`)).toContain('cleared under_voltage_now');
    await d3.stop();
    for (const d of [d1, d2, d3]) expect(d.stdout()).not.toContain(SECRET);
    for (const d of [d1, d2, d3]) expect(d.stdout()).not.toContain('/hook');
  });

  it('a receiver that answers 500: retried with backoff, logged without the URL, then delivered', async () => {
    const r = await receiver(500);
    const { start } = await setup({
      targets: [{ type: 'ntfy', url: `${r.base}/pcg-${SECRET}`, token: SECRET }],
      retry_seconds: 0.2,
      retries: 10,
    });
    const d = await start('pi4-undervoltage');
    const failed = await d.waitForLog((l) => l.msg === 'notification not delivered' && l.attempt === 2);
    expect(failed).toMatchObject({ answer: 'HTTP 500 Internal Server Error', retry: true });
    expect(String(failed.target)).toBe(`ntfy http://127.0.0.1:${r.port}/…`);
    r.setStatus(200);
    await d.waitForLog((l) => l.msg === 'notification delivered');
    const got = r.received.find((x) => x.headers.priority === '5')!;
    expect(got.headers.title).toMatch(/: CRITICAL under_voltage_now$/);
    expect(got.headers.authorization).toBe(`Bearer ${SECRET}`);
    await d.stop();
    expect(d.stdout()).not.toContain(SECRET);
  });

  it('a receiver that never answers: /health still answers at once; the attempt ends at the timeout', async () => {
    const r = await receiver('hang');
    const { start } = await setup({
      targets: [{ type: 'webhook', url: `${r.base}/hook?token=${SECRET}` }],
      timeout_seconds: 1,
      retry_seconds: 0.5,
    });
    const d = await start('pi4-undervoltage');
    await r.nth(1); // a delivery is in flight and will not be answered
    const t0 = performance.now();
    const h = await d.get('/health');
    expect(h.status).toBe(503); // CRITICAL
    expect(performance.now() - t0).toBeLessThan(2000);
    await refreshes(d, 2); // refreshes go on meanwhile
    const timedOut = await d.waitForLog((l) => l.msg === 'notification not delivered');
    expect(timedOut.answer).toBe('no answer within 1 s');
    const stop = await d.stop();
    expect(stop.code).toBe(0);
    expect(stop.ms).toBeLessThan(5000); // a hung delivery does not hold the stop
    expect(d.stdout()).not.toContain(SECRET);
  });

  it('killed (SIGKILL) while a delivery hangs: the next start delivers it from the outbox, once', async () => {
    const r = await receiver('hang');
    const { start } = await setup({
      targets: [{ type: 'webhook', url: `${r.base}/hook` }],
      timeout_seconds: 60,
    });
    const d1 = await start('pi4-undervoltage');
    await r.nth(1);
    await d1.stop('SIGKILL');
    r.setStatus(200);
    const d2 = await start('pi4-undervoltage');
    await d2.waitForLog((l) => l.msg === 'notification delivered');
    await refreshes(d2, 3);
    const events = r.received.map((x) => bodyOf(x.body)).map((m) => `${m.event} ${m.code}`);
    // The hung request, then the outbox again (the two raises, each once); no new transition.
    expect(events.filter((e) => e === 'raised under_voltage_now').length).toBe(2);
    expect(events.slice(1).filter((e) => e === 'raised under_voltage_now')).toHaveLength(1);
    expect(new Set(events.slice(1))).toEqual(new Set(['raised under_voltage_now', 'raised throttled_now']));
    expect(events.slice(1)).toHaveLength(2);
    await d2.stop();
  });
});
