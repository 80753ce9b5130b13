import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExitCode, GuardError } from '../../src/errors.js';
import { DEFAULT_NOTIFY, NOTIFY_URL_ENV, parseNotifyConfig, targetKey } from '../../src/notify/config.js';

function error(fn: () => unknown): GuardError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GuardError);
    expect((err as GuardError).exitCode).toBe(ExitCode.USAGE);
    return err as GuardError;
  }
  throw new Error('expected a usage error');
}

describe('the notify section', () => {
  it('defaults; the three kinds of target; the environment adds one ntfy target', () => {
    expect(parseNotifyConfig(undefined, null)).toEqual(DEFAULT_NOTIFY);
    const c = parseNotifyConfig(
      {
        targets: [
          { type: 'ntfy', url: 'https://ntfy.sh/t', token: 'tk_1' },
          { type: 'webhook', url: 'http://10.0.0.2:8080/h', name: 'office' },
          { type: 'command', command: ['/usr/bin/logger', '-t', 'pcg'] },
        ],
        min_level: 'critical',
        reminder_minutes: 60,
      },
      '/etc/g.json',
      { [NOTIFY_URL_ENV]: 'https://ntfy.example/x' },
    );
    expect(c.targets.map((t) => t.type)).toEqual(['ntfy', 'webhook', 'command', 'ntfy']);
    expect(c.min_level).toBe('critical');
    expect(new Set(c.targets.map(targetKey)).size).toBe(4);
  });

  it('bad targets: one message naming the item and the key', () => {
    const cases: [unknown, string][] = [
      [[{ type: 'sms', url: 'https://x' }], 'item 1: "type" must be "ntfy", "webhook" or "command"'],
      [[{ type: 'ntfy' }], 'item 1: "url" must be an http:// or https:// URL'],
      [
        [
          { type: 'ntfy', url: 'https://x/y' },
          { type: 'command', command: ['notify'] },
        ],
        'item 2: "command" must start',
      ],
      [[{ type: 'command', command: [] }], 'item 1: "command" must be a list of strings'],
      [[{ type: 'webhook', url: 'https://x', command: ['/bin/true'] }], 'an webhook target has no "command"'],
      [['https://ntfy.sh/x'], 'item 1 must be an object'],
      [{ type: 'ntfy' }, 'must be a list of targets'],
    ];
    for (const [targets, text] of cases)
      expect(error(() => parseNotifyConfig({ targets }, '/etc/g.json')).message).toContain(text);
    expect(error(() => parseNotifyConfig({ min_level: 'info' }, null)).message).toContain('"notify.min_level"');
    expect(error(() => parseNotifyConfig({ retries: 1.5 }, null)).message).toContain('a whole number from 0 to 20');
    expect(error(() => parseNotifyConfig({ targt: [] }, null)).message).toContain('unknown key "notify.targt"');
    expect(error(() => parseNotifyConfig(undefined, null, { [NOTIFY_URL_ENV]: 'ntfy.sh/x' })).message).toContain(
      NOTIFY_URL_ENV,
    );
  });

  it('no error ever quotes a value: a URL, a token, a command argument or a typo stays out of the message', () => {
    const secret = fc.stringMatching(/^[a-z0-9]{12,20}$/);
    fc.assert(
      fc.property(secret, fc.integer({ min: 0, max: 7 }), (s, shape) => {
        const bad: unknown[] = [
          { type: 'ntfy', url: `ftp://${s}` },
          { type: 'ntfy', url: `https://ntfy.sh/${s}`, token: `has space ${s}` },
          { type: 'command', command: [s, `--key=${s}`] },
          { type: 'webhook', url: `https://h/${s}`, extra: s },
          { type: s, url: `https://h/${s}` },
          { type: 'webhook', url: `https://h/${s}`, name: `${s}`.repeat(8) },
          `https://ntfy.sh/${s}`,
          { type: 'command', url: `https://h/${s}`, command: [`/bin/${s}`] },
        ];
        const e = error(() => parseNotifyConfig({ targets: [bad[shape]] }, '/etc/g.json', {}));
        expect(e.message + (e.hint ?? '')).not.toContain(s);
      }),
    );
  });
});
