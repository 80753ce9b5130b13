/** The clock is injected everywhere so tests and the planner never read the machine's time. */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/** A fixed clock for tests and for replaying a plan. */
export function fixedClock(at: Date | string | number): Clock {
  const d = new Date(at);
  return () => new Date(d.getTime());
}
