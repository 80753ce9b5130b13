import type { SampleLogOptions, SampleRestart } from '../../dev/sample/gateway-events.js';

/**
 * One week of a board's restarts, used for the generated fixtures: clean stops, a crash
 * while running, a config error, a crash during the bootstrap, a long bootstrap with
 * `database is locked`, a second instance refused while the first runs, reloads, and a
 * last start that runs across local midnight. Times are UTC; the board is at +02:00.
 */
export const DAY = 86_400_000;
export const BASE = Date.UTC(2026, 5, 1, 6, 0, 0); // 08:00 local

export const RESTARTS: SampleRestart[] = [
  { startMs: BASE, sessions: 40, gapMs: 6_000, end: 'stopped', stopMs: BASE + DAY },
  { startMs: BASE + 2 * DAY, sessions: 120, gapMs: 21_000, end: 'crashed', reloads: 2 },
  { startMs: BASE + 3 * DAY, sessions: 150, gapMs: 26_000, end: 'failed', failure: 'config' },
  { startMs: BASE + 3 * DAY + 3_600_000, sessions: 160, gapMs: 28_000, end: 'crashed', crashPhase: 'bootstrap' },
  { startMs: BASE + 4 * DAY, sessions: 600, gapMs: 95_000, end: 'stopped', stopMs: BASE + 5 * DAY, dbLocked: 2 },
  { startMs: BASE + 4 * DAY + 6 * 3_600_000, sessions: 600, gapMs: 0, end: 'failed', failure: 'singleton' },
  // 23:59:20 local: the bootstrap runs across midnight.
  { startMs: Date.UTC(2026, 5, 7, 21, 59, 20), sessions: 90, gapMs: 45_000, end: 'running', reloads: 1 },
];

export function scenario(level: SampleLogOptions['level'], events: boolean): SampleLogOptions {
  return {
    restarts: RESTARTS,
    level,
    events,
    seed: 6,
    home: '/home/pi/.picoclaw',
    utcOffsetMin: 120,
    agents: ['main', 'research'],
  };
}

/**
 * A fixed "file mtime" for console logs without dates: shortly after the scenario's last line
 * (2026-06-08 14:24:05 +02:00), as a file's mtime is.
 */
export const ANCHOR = { ms: Date.UTC(2026, 5, 8, 13, 0, 0), offsetMin: 120 };
