import type { RestartEnd, RestartEntry, StartupReport, StartupSummary } from './types.js';
import { instantMs } from '../picoclaw/time.js';

/** Latest gap, latest time to ready, and the trend of the complete gaps. Pure. */
export function summarize(entries: RestartEntry[]): StartupSummary {
  const count = (e: RestartEnd) => entries.filter((r) => r.end === e).length;
  const withGap = entries.filter((r) => r.bootstrap_gap !== null);
  const lastGap = withGap[withGap.length - 1];
  const withReady = entries.filter((r) => r.time_to_ready !== null);
  const lastReady = withReady[withReady.length - 1];
  const complete = withGap.filter((r) => !r.bootstrap_gap!.lower_bound);
  return {
    restarts: entries.length,
    stopped: count('stopped'),
    crashed: count('crashed'),
    failed: count('failed'),
    running: count('running'),
    latest_gap: lastGap ? { ...lastGap.bootstrap_gap!, restart: lastGap.n, started_at: lastGap.started_at } : null,
    latest_ready: lastReady
      ? { ...lastReady.time_to_ready!, restart: lastReady.n, started_at: lastReady.started_at }
      : null,
    trend: trendOf(complete),
  };
}

/** First vs latest of the complete gaps, and a least-squares slope per day when they are dated. */
function trendOf(complete: RestartEntry[]): StartupSummary['trend'] {
  if (complete.length < 2) return null;
  const first = complete[0]!;
  const latest = complete[complete.length - 1]!;
  const change = latest.bootstrap_gap!.seconds - first.bootstrap_gap!.seconds;
  let perDay: number | null = null;
  const pts = complete
    .filter((r) => r.started_at !== null)
    .map((r) => ({ x: instantMs(r.started_at!) / 86_400_000, y: r.bootstrap_gap!.seconds }));
  if (pts.length >= 2) {
    const mx = pts.reduce((a, p) => a + p.x, 0) / pts.length;
    const my = pts.reduce((a, p) => a + p.y, 0) / pts.length;
    const sxx = pts.reduce((a, p) => a + (p.x - mx) ** 2, 0);
    if (sxx > 0) perDay = Math.round((pts.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx) * 1000) / 1000;
  }
  const noise = Math.max(2, 0.2 * first.bootstrap_gap!.seconds);
  return {
    restarts_with_gap: complete.length,
    first: { restart: first.n, started_at: first.started_at, seconds: first.bootstrap_gap!.seconds },
    latest: { restart: latest.n, started_at: latest.started_at, seconds: latest.bootstrap_gap!.seconds },
    change_seconds: Math.round(change * 1000) / 1000,
    per_day_seconds: perDay,
    direction: change > noise ? 'rising' : change < -noise ? 'falling' : 'flat',
  };
}

/** For the health report: the latest bootstrap gap in seconds (a lower bound when it never ended), or null. */
export function lastBootstrapGapSeconds(report: StartupReport): number | null {
  return report.summary.latest_gap?.seconds ?? null;
}
