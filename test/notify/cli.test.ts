import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { assertBuilt, CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { writeConfig } from '../daemon/support.js';
import { tempDir } from '../support/tmp.js';
import { receiver } from './receiver.js';

/** `picoclaw-guard notify --test` against receivers on loopback (async: the receivers answer meanwhile). */
const SECRET = 'pcg-topic-3c2b1a0f9e';

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  assertBuilt();
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG, ...env },
    });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}

describe('picoclaw-guard notify --test', () => {
  it('one message to every target, what each answered, exit 1 when one failed; no secret printed', async () => {
    const ok = await receiver(200);
    const bad = await receiver(500);
    const hang = await receiver('hang');
    const config = writeConfig(tempDir(), {
      notify: {
        timeout_seconds: 3,
        targets: [
          { type: 'ntfy', url: `${ok.base}/${SECRET}` },
          { type: 'webhook', url: `${bad.base}/hook?token=${SECRET}`, name: 'my hook' },
          { type: 'webhook', url: `${hang.base}/x`, token: SECRET },
        ],
      },
    });
    const text = await cli(['notify', '--test', '--config', config]);
    expect(text.code, text.out).toBe(1);
    expect(text.out).toMatch(new RegExp(`ntfy http://127\\.0\\.0\\.1:${ok.port}/… +ok +HTTP 200 OK`));
    expect(text.out).toMatch(/my hook +FAILED +HTTP 500 Internal Server Error/);
    expect(text.out).toMatch(/no answer within 3 s/);
    expect(text.out).toContain('2 of 3 target(s) did not accept it.');
    expect(ok.received[0]!.headers.title).toMatch(/: test message$/);
    expect(JSON.parse(bad.received[0]!.body)).toMatchObject({ event: 'test', code: 'test', health: null });

    const json = await cli(['notify', '--test', '--json', '--config', config]);
    expect(json.code).toBe(1);
    const j = JSON.parse(json.out) as {
      ok: boolean;
      targets: { target: string; ok: boolean; status: number | null }[];
    };
    expect(j.ok).toBe(false);
    expect(j.targets.map((t) => [t.ok, t.status])).toEqual([
      [true, 200],
      [false, 500],
      [false, null],
    ]);
    for (const r of [text, json]) expect(r.out + r.err).not.toContain(SECRET);
  });

  it('PICOCLAW_GUARD_NOTIFY_URL adds a target; exit 0 when all accepted', async () => {
    const ok = await receiver(200);
    const r = await cli(['notify', '--test'], { PICOCLAW_GUARD_NOTIFY_URL: `${ok.base}/${SECRET}` });
    expect(r.code).toBe(0);
    expect(r.out).toContain('1 target(s) accepted the test message.');
    expect(r.out).not.toContain(SECRET);
  });

  it('bad input: no target, no --test, a bad target: one line, exit 2, never the value', async () => {
    const none = await cli(['notify', '--test']);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/^picoclaw-guard: no notify target is configured/);
    expect((await cli(['notify'])).code).toBe(2);
    const config = writeConfig(tempDir(), { notify: { targets: [{ type: 'ntfy', url: `ftp://x/${SECRET}` }] } });
    const bad = await cli(['notify', '--test', '--config', config]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('"notify.targets" has a bad target: item 1: "url" must be an http:// or https:// URL');
    expect(bad.err).not.toContain(SECRET);
    const typo = writeConfig(tempDir(), { notify: { targets: [{ type: 'webhook', uri: SECRET }] } });
    const t = await cli(['notify', '--test', '--config', typo]);
    expect(t.err).toContain('item 1 has an unknown key "uri"');
    expect(t.err).not.toContain(SECRET);
  });
});
