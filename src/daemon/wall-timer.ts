/**
 * A one-shot timer on the wall clock: it calls back once `Date.now()` reads the due time,
 * however the clock got there. A plain setTimeout counts monotonic time, so on a Pi without
 * an RTC a pass due at 03:00 would still be hours away after NTP stepped the clock past 03:00.
 * It sleeps at most MAX_SLEEP_MS at a time and looks at the clock again at each wake-up, so a
 * step is noticed within that time; each wake-up costs one comparison.
 */
export const MAX_SLEEP_MS = 30_000;

export class WallTimer {
  private handle: NodeJS.Timeout | null = null;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxSleepMs = MAX_SLEEP_MS,
  ) {}

  get armed(): boolean {
    return this.handle !== null;
  }

  /** Call `fn` once the wall clock reads `dueMs` or later; replaces a call not made yet. */
  at(dueMs: number, fn: () => void): void {
    this.cancel();
    const wake = (): void => {
      const left = dueMs - this.now();
      if (left <= 0) {
        this.handle = null;
        fn();
        return;
      }
      this.handle = setTimeout(wake, Math.min(left, this.maxSleepMs));
    };
    // Never synchronously: a callback due now still runs after the caller has returned.
    this.handle = setTimeout(wake, Math.max(0, Math.min(dueMs - this.now(), this.maxSleepMs)));
  }

  cancel(): void {
    if (this.handle) clearTimeout(this.handle);
    this.handle = null;
  }
}
