import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { writeMarker, type LastRunMarker } from '../../src/state/marker.js';
import type { Logger } from '../../src/daemon/log.js';
import { Scheduler } from '../../src/daemon/scheduler.js';
import type { DaemonSettings } from '../../src/daemon/settings.js';
import { tempDir } from '../support/tmp.js';

/**
 * When the first pass is due, without running one: the fake clock stops time, so no pass
 * child is ever forked. The values are the ones the croner-based schedule computed
 * (croner's nextRun for a `startAt`: that time rounded up to a whole second).
 */
const HOME = '/nonexistent/picoclaw-home';
const NOW = Date.parse('2026-03-01T10:00:00.250Z');

function settings(stateDir: string, enabled: boolean, intervalSeconds: number): DaemonSettings {
  return { policy: { enabled }, intervalSeconds, stateDir, home: { home: HOME } } as unknown as DaemonSettings;
}

function logger(): { log: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (a: unknown, b?: string) => lines.push({ level, msg: typeof a === 'string' ? a : b! });
  return { log: { info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger, lines };
}

function marker(finishedAt: string): LastRunMarker {
  return { home: HOME, finished_at: finishedAt, outcome: 'ok', duration_ms: 900, deleted_sessions: 3 };
}

const hooks = { changed: () => undefined, passEnded: () => undefined, deleted: () => undefined };

beforeEach(() => {
  vi.useFakeTimers({ now: NOW });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the daemon's schedule: when the first pass is due", () => {
  it('nothing ran before: a second from now, on a whole second', async () => {
    const { log } = logger();
    const s = new Scheduler(() => settings(tempDir(), true, 3600), {}, log, hooks);
    s.schedule('start');
    expect(s.stats).toMatchObject({ enabled: true, interval_seconds: 3600, running: false });
    expect(new Date(s.stats.next_run_at_ms!).toISOString()).toBe('2026-03-01T10:00:02.000Z');
    expect(await s.stop()).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a pass finished 10 minutes ago (the marker): one interval after it, rounded up to the second', async () => {
    const state = tempDir();
    writeMarker(state, marker('2026-03-01T09:50:00.400Z'));
    const { log } = logger();
    const s = new Scheduler(() => settings(state, true, 3600), {}, log, hooks);
    s.schedule('start');
    expect(new Date(s.stats.next_run_at_ms!).toISOString()).toBe('2026-03-01T10:50:01.000Z');
    expect(s.stats.last_success_at_ms).toBe(Date.parse('2026-03-01T09:50:00.400Z'));
    await s.stop();
  });

  it('a marker from the future (the clock stepped back) postpones nothing', async () => {
    const state = tempDir();
    writeMarker(state, marker('2026-03-02T00:00:00.000Z'));
    const { log } = logger();
    const s = new Scheduler(() => settings(state, true, 600), {}, log, hooks);
    s.schedule('start');
    expect(new Date(s.stats.next_run_at_ms!).toISOString()).toBe('2026-03-01T10:00:02.000Z');
    await s.stop();
  });

  it('disabled (by the policy or a zero interval): nothing is armed and the log says which', async () => {
    for (const [enabled, interval, msg] of [
      [false, 3600, 'scheduled prune passes are off (prune.enabled is false)'],
      [true, 0, 'scheduled prune passes are off (check_interval_minutes is 0)'],
    ] as const) {
      const { log, lines } = logger();
      const s = new Scheduler(() => settings(tempDir(), enabled, interval), {}, log, hooks);
      s.schedule('start');
      expect(s.stats.enabled).toBe(false);
      expect(s.stats.next_run_at_ms).toBeNull();
      expect(lines).toEqual([{ level: 'info', msg }]);
      expect(vi.getTimerCount()).toBe(0);
      await s.stop();
    }
  });
});
