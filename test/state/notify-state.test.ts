import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readNotifyState, writeNotifyState, type NotifyState } from '../../src/state/notify-state.js';

describe('the notify state', () => {
  it('keeps a condition whose key JSON reads as an own `__proto__` (the contract property found it)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcg-notify-state-'));
    const cond = {
      level: 'warn',
      code: 'x',
      message: '',
      since: '2020-01-01T00:00:00.000Z',
      last_sent_at: '2020-01-01T00:00:00.000Z',
    };
    const state = JSON.parse(
      JSON.stringify({ active: { ['__proto__']: cond, disk_low: cond }, outbox: [] }),
    ) as NotifyState;
    expect(Object.keys(state.active)).toEqual(['__proto__', 'disk_low']);
    writeNotifyState(dir, state);
    const back = readNotifyState(dir);
    expect(back.error).toBeNull();
    expect(Object.keys(back.state.active)).toEqual(['__proto__', 'disk_low']);
    expect(Object.getPrototypeOf(back.state.active)).toBe(Object.prototype);
  });
});
