import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliver } from '../../src/notify/deliver.js';
import { headerText, type NotifyMessage } from '../../src/notify/message.js';
import { redactUrl, scrub, targetLabel } from '../../src/notify/redact.js';
import type { NotifyTarget } from '../../src/notify/config.js';
import { tempDir } from '../support/tmp.js';
import { receiver } from './receiver.js';

const MSG: NotifyMessage = {
  event: 'raised',
  level: 'critical',
  code: 'under_voltage_now',
  message: 'under-voltage now (get_throttled 0x50005): the supply or cable is too weak — 5 V',
  time: '2026-06-13T18:00:00.000Z',
  board: { hostname: 'pi4', model: 'Raspberry Pi 4 Model B Rev 1.5' },
  health: null,
};

describe('delivery to a receiver on loopback', () => {
  it('ntfy: POST of the text with Title, Priority and Tags; the token as a bearer header', async () => {
    const r = await receiver(200);
    const a = await deliver({ type: 'ntfy', url: `${r.base}/pcg-topic`, token: 'tk_abcdef' }, MSG, 5000);
    expect(a).toMatchObject({ ok: true, retry: false, status: 200, answer: 'HTTP 200 OK' });
    const got = r.received[0]!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/pcg-topic');
    expect(got.body).toBe(MSG.message);
    expect(got.headers.title).toBe('pi4: CRITICAL under_voltage_now');
    expect(got.headers.priority).toBe('5');
    expect(got.headers.tags).toBe('rotating_light,picoclaw-guard');
    expect(got.headers.authorization).toBe('Bearer tk_abcdef');
    const cleared = await deliver(
      { type: 'ntfy', url: `${r.base}/t` },
      { ...MSG, event: 'cleared', level: 'ok' },
      5000,
    );
    expect(cleared.ok).toBe(true);
    expect(r.received[1]!.headers).toMatchObject({ priority: '2', title: 'pi4: cleared: under_voltage_now' });
  });

  it('webhook: one JSON object {event, level, code, message, board, time, health}', async () => {
    const r = await receiver(204);
    expect((await deliver({ type: 'webhook', url: `${r.base}/hook?token=abc123` }, MSG, 5000)).ok).toBe(true);
    const body = JSON.parse(r.received[0]!.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['event', 'level', 'code', 'message', 'board', 'time', 'health']);
    expect(body).toMatchObject({ event: 'raised', level: 'critical', code: 'under_voltage_now', board: MSG.board });
    expect(r.received[0]!.headers['content-type']).toBe('application/json');
  });

  it('a receiver answering 500 is worth a retry; 404 is not', async () => {
    const r = await receiver(500);
    expect(await deliver({ type: 'webhook', url: r.base }, MSG, 5000)).toMatchObject({
      ok: false,
      retry: true,
      status: 500,
    });
    r.setStatus(404);
    expect(await deliver({ type: 'webhook', url: r.base }, MSG, 5000)).toMatchObject({ ok: false, retry: false });
  });

  it('a receiver that never answers: the attempt ends at the timeout, with a retry', async () => {
    const r = await receiver('hang');
    const t0 = performance.now();
    const a = await deliver({ type: 'ntfy', url: `${r.base}/topic` }, MSG, 300);
    expect(a).toMatchObject({ ok: false, retry: true, answer: 'no answer within 0.3 s' });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(r.received).toHaveLength(1);
  });

  it('nothing listening: a network error, the URL not in the answer', async () => {
    const r = await receiver(200);
    await r.close();
    const a = await deliver({ type: 'webhook', url: `${r.base}/secret-path?token=zz-secret` }, MSG, 2000);
    expect(a).toMatchObject({ ok: false, retry: true });
    expect(a.answer).toMatch(/ECONNREFUSED|error/);
    expect(a.answer).not.toContain('zz-secret');
    expect(a.answer).not.toContain('secret-path');
  });

  it('command: the JSON on standard input, no shell, exit code as the answer, killed at the timeout', async () => {
    const dir = tempDir();
    const out = join(dir, 'got.json');
    const script = join(dir, 'notify.sh');
    writeFileSync(
      script,
      `#!/bin/sh\ncat > "$1"\n[ "$2" = fail ] && { echo "bad token secretarg" >&2; exit 3; }\nexit 0\n`,
    );
    chmodSync(script, 0o755);
    const ok = await deliver({ type: 'command', command: [script, out] }, MSG, 5000);
    expect(ok).toMatchObject({ ok: true, answer: 'exit 0' });
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ code: 'under_voltage_now', event: 'raised' });
    const failed = await deliver({ type: 'command', command: [script, out, 'fail', 'secretarg'] }, MSG, 5000);
    expect(failed).toMatchObject({ ok: false, retry: true, status: 3 });
    expect(failed.answer).toBe('exit 3: bad token …'); // its own arguments are cut out of what it said
    // A shell metacharacter is an argument, not a command.
    await deliver({ type: 'command', command: [script, join(dir, 'x; touch pwned')] }, MSG, 5000);
    expect(() => readFileSync(join(dir, 'pwned'))).toThrow();
    const hang = join(dir, 'hang.sh');
    writeFileSync(hang, '#!/bin/sh\nexec sleep 30\n');
    chmodSync(hang, 0o755);
    const t0 = performance.now();
    expect(await deliver({ type: 'command', command: [hang] }, MSG, 300)).toMatchObject({
      ok: false,
      answer: 'no exit within 0.3 s (killed)',
    });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(await deliver({ type: 'command', command: [join(dir, 'missing')] }, MSG, 300)).toMatchObject({
      ok: false,
      retry: false,
      answer: 'cannot run: ENOENT',
    });
  });
});

describe('secrets never shown', () => {
  const part = fc.stringMatching(/^[A-Za-z0-9_-]{3,16}$/);

  it('a URL is shown as scheme, host and port only; every secret of it is cut out of any text', () => {
    fc.assert(
      fc.property(part, part, part, fc.option(part, { nil: undefined }), (topic, key, user, pass) => {
        const url = `https://${user}${pass ? `:${pass}` : ''}@ntfy.example.net:8443/${topic}?auth=${key}`;
        const t: NotifyTarget = { type: 'ntfy', url };
        const label = targetLabel(t);
        expect(label).toBe('ntfy https://ntfy.example.net:8443/…');
        expect(redactUrl(url)).toBe('https://ntfy.example.net:8443/…');
        const noisy = `POST ${url} failed: ${topic} ${key} ${user} ${pass ?? ''} ${decodeURIComponent(url)}`;
        const clean = scrub(noisy, t);
        for (const s of [topic, key, user, ...(pass ? [pass] : [])]) expect(clean).not.toContain(s);
      }),
    );
  });

  it('header values: ASCII as is, anything else as an RFC 2047 word that decodes back', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const h = headerText(s);

        expect(h).toMatch(/^[\x20-\x7e]*$/);
        const m = /^=\?UTF-8\?B\?(.*)\?=$/.exec(h);
        const flat = s.replace(/[\r\n]+/g, ' ');
        expect(m ? Buffer.from(m[1]!, 'base64').toString('utf8') : h).toBe(flat);
      }),
    );
  });
});
