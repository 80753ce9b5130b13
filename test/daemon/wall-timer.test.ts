import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_SLEEP_MS, WallTimer } from '../../src/daemon/wall-timer.js';

/**
 * Fake timers stand for the monotonic clock (setTimeout); `wall` is the wall clock, moved
 * on its own to play an NTP step. Nothing here waits for real time.
 */
let wall = 0;
const now = () => wall;

/** Let `ms` of monotonic time pass, the wall clock moving with it. */
function pass(ms: number): void {
  for (let left = ms; left > 0; left -= 1000) {
    const step = Math.min(1000, left);
    wall += step;
    vi.advanceTimersByTime(step);
  }
}

beforeEach(() => {
  vi.useFakeTimers();
  wall = Date.UTC(2026, 2, 1, 10, 0, 0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the wall-clock timer the schedule runs on', () => {
  it('calls back once, when the wall clock reads the due time, and never before', () => {
    const t = new WallTimer(now);
    const fn = vi.fn();
    t.at(wall + 95_000, fn);
    pass(94_900);
    expect(fn).not.toHaveBeenCalled();
    expect(t.armed).toBe(true);
    pass(200);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(t.armed).toBe(false);
    pass(120_000);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a wall clock stepped past the due time (NTP on a board without an RTC) fires within one wake-up', () => {
    const t = new WallTimer(now);
    const fn = vi.fn();
    t.at(wall + 3 * 3_600_000, fn);
    pass(1000);
    wall += 5 * 3_600_000; // the step: no monotonic time passes
    expect(fn).not.toHaveBeenCalled();
    pass(MAX_SLEEP_MS);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a wall clock stepped back postpones the call to when it reads the due time again', () => {
    const t = new WallTimer(now);
    const fn = vi.fn();
    const due = wall + 60_000;
    t.at(due, fn);
    wall -= 3_600_000;
    pass(60_000 + MAX_SLEEP_MS);
    expect(fn).not.toHaveBeenCalled();
    pass(due - wall);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a due time already past runs after at() returns; cancel and re-arming drop the call not made yet', () => {
    const t = new WallTimer(now);
    const fn = vi.fn();
    t.at(wall - 5000, fn);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(fn).toHaveBeenCalledTimes(1);

    const old = vi.fn();
    const replacement = vi.fn();
    t.at(wall + 10_000, old);
    t.at(wall + 20_000, replacement);
    pass(15_000);
    expect(old).not.toHaveBeenCalled();
    t.cancel();
    pass(60_000);
    expect(replacement).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
