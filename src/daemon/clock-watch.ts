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
  /** The last jump not confirmed since (wall ms when it was seen, and what it was): every pass is told. */
  private doubt: { atMs: number; why: string } | null = null;

  constructor(
    private readonly wall: () => number = Date.now,
    private readonly mono: () => number = () => performance.now(),
    private readonly toleranceMs = CLOCK_JUMP_TOLERANCE_MS,
  ) {}

  /**
   * Call at the start of each pass: why its age check must be skipped, or null. A jump stays a doubt
   * for every later pass until the clock is confirmed after it (`confirmedAtMs`: when the operator
   * last ran `prune --apply --trust-clock`, from the state folder): skipping one pass and deleting by
   * the same wrong clock on the next would only put the deletion off.
   */
  check(confirmedAtMs: number | null = null): string | null {
    const now = { wall: this.wall(), mono: this.mono() };
    const prev = this.last;
    this.last = now;
    if (this.doubt && confirmedAtMs !== null && confirmedAtMs >= this.doubt.atMs) this.doubt = null;
    const jumped = prev ? this.jumpOf(prev, now) : null;
    if (jumped) {
      this.doubt = { atMs: now.wall, why: jumped };
      return jumped;
    }
    if (this.doubt)
      return `${this.doubt.why}; not confirmed since (run \`picoclaw-guard prune --apply --trust-clock\` once if the clock is right)`;
    return null;
  }

  private jumpOf(prev: { wall: number; mono: number }, now: { wall: number; mono: number }): string | null {
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
