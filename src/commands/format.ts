import { printJsonStream } from './json-stream.js';

/** Small text-rendering helpers shared by the commands. */

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

export function formatAge(ms: number | null): string {
  if (ms === null) return '-';
  const neg = ms < 0;
  const s = Math.abs(ms) / 1000;
  let out: string;
  if (s < 90) out = `${Math.round(s)}s`;
  else if (s < 90 * 60) out = `${Math.round(s / 60)}m`;
  else if (s < 36 * 3600) out = `${Math.round(s / 3600)}h`;
  else out = `${Math.round(s / 86400)}d`;
  return neg ? `in ${out}` : out;
}

export function isoOrDash(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Shorten a long key in the middle: sk_v1_cb10fe…d7cc1. */
export function shortKey(key: string | null, max = 34): string {
  if (key === null) return '(unreadable meta)';
  if (key.length <= max) return key;
  const keep = max - 1;
  const head = Math.ceil(keep * 0.6);
  return key.slice(0, head) + '…' + key.slice(key.length - (keep - head));
}

export type Align = 'left' | 'right';

/** A plain text table: header, a rule, rows. Widths fit the content. */
export function table(headers: string[], rows: string[][], align: Align[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (align[i] === 'right' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [fmt(headers), widths.map((w) => '-'.repeat(w)).join('  ').trimEnd(), ...rows.map(fmt)].join('\n');
}

/** JSON.stringify(value, null, 2) and a newline on standard output, written as it is made (json-stream.ts). */
export function printJson(value: unknown): void {
  printJsonStream(value);
}
