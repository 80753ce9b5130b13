import { formatBytes } from '../io/bytes.js';
import { esc } from './svg.js';

/** Formatting for the status page: board-local times, ages, sizes, a meter bar. */
export const pad = (n: number) => String(n).padStart(2, '0');

/** Board-local time: `2026-11-30 09:57`. */
export function when(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function dayClock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ago(ms: number, nowMs: number): string {
  const s = Math.round((nowMs - ms) / 1000);
  if (s < 0) return `in ${ago(nowMs, ms).replace(/ ago$/, '')}`;
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A size, or a dash like the page's other missing figures. */
export function bytes(n: number | null): string {
  return n === null || !Number.isFinite(n) ? '—' : formatBytes(n);
}

export function seconds(s: number): string {
  return s < 10
    ? `${s.toFixed(2)} s`
    : s < 120
      ? `${s.toFixed(1)} s`
      : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export function bar(label: string, used: number, limit: number, text: string): string {
  const pct = Math.max(0, Math.min(100, (used / limit) * 100));
  const cls = used > limit ? 'crit' : pct >= 80 ? 'warn' : 'ok';
  // An SVG bar: no inline style, so the page's CSP can stay strict about everything else.
  return (
    `<svg class="bar ${cls}" viewBox="0 0 100 4" preserveAspectRatio="none" role="img" aria-label="${esc(label)}` +
    `: ${Math.round(pct)}%"><rect class="bg" width="100" height="4"/><rect class="fill" width="${pct.toFixed(1)}` +
    `" height="4"/></svg><p class="small">${esc(text)}</p>`
  );
}
