/** Wall-clock text of sample log lines, as zerolog and Go's time package print it. */

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

export function offsetText(offsetMin: number, colon: boolean): string {
  if (offsetMin === 0 && colon) return 'Z';
  const sign = offsetMin < 0 ? '-' : '+';
  const a = Math.abs(offsetMin);
  return `${sign}${pad2(Math.floor(a / 60))}${colon ? ':' : ''}${pad2(a % 60)}`;
}

/** Wall-clock parts of an instant at a fixed UTC offset. */
export function wall(ms: number, offsetMin: number): { date: string; time: string; sub: number } {
  const d = new Date(Math.floor(ms / 1000) * 1000 + offsetMin * 60_000);
  const iso = d.toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19), sub: ((ms % 1000) + 1000) % 1000 };
}

/** zerolog's file timestamp: time.RFC3339, whole seconds, local offset or Z (docs/picoclaw.md#line-format). */
export function zTime(ms: number, offsetMin: number): string {
  const w = wall(ms, offsetMin);
  return `${w.date}T${w.time}${offsetText(offsetMin, true)}`;
}

/** Go RFC3339Nano: trailing zeros of the fraction trimmed (event_time of runtime events). */
export function goNano(ms: number, extraNs: number, offsetMin: number): string {
  const w = wall(ms, offsetMin);
  const frac = (String(w.sub).padStart(3, '0') + String(extraNs).padStart(6, '0')).replace(/0+$/, '');
  return `${w.date}T${w.time}${frac ? '.' + frac : ''}${offsetText(offsetMin, true)}`;
}
