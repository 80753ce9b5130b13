/**
 * Watches the wall clock against the monotonic one between the daemon's passes.
 *
 * A wall clock that is wrong after 2024 cannot be detected in general, but a step of it
 * between two passes can: the monotonic clock (performance.now) never jumps, so when the
 * wall clock moved much more or less than it did, something set the time (NTP catching
 * up on a Pi without an RTC, a hand-set date, a bad RTC). That pass's age deletions would
 * rest on a clock that just changed under it, so it skips them and says why.
 *
 * Suspend stops the monotonic clock on Linux: after one, a "jump" is reported and one
 * pass keeps its old sessions a little longer, which costs nothing.
 */
export const CLOCK_JUMP_TOLERANCE_MS = 5 * 60_000;

const span = (ms: number): string => {
  const a = Math.abs(ms);
  if (a >= 2 * 86_400_000) return `${Math.round(a / 86_400_000)} days`;
  if (a >= 2 * 3_600_000) return `${Math.round(a / 3_600_000)} hours`;
  return `${Math.round(a / 60_000)} minutes`;
};

export class ClockWatch {
  private last: { wall: number; mono: number } | null = null;

  constructor(
    private readonly wall: () => number = Date.now,
    private readonly mono: () => number = () => performance.now(),
    private readonly toleranceMs = CLOCK_JUMP_TOLERANCE_MS,
  ) {}

  /** Call at the start of each pass: why its age check must be skipped, or null. */
  check(): string | null {
    const now = { wall: this.wall(), mono: this.mono() };
    const prev = this.last;
    this.last = now;
    if (!prev) return null;
    const monoDelta = now.mono - prev.mono;
    const jump = now.wall - prev.wall - monoDelta;
    if (Math.abs(jump) <= this.toleranceMs) return null;
    return (
      `the wall clock jumped ${jump > 0 ? 'ahead' : 'back'} by about ${span(jump)}` +
      ` since the last pass (it read ${new Date(prev.wall).toISOString()}, now ` +
      `${new Date(now.wall).toISOString()}, while ${span(monoDelta)} passed)`
    );
  }
}
