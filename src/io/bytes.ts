/**
 * The one way the project writes a byte count for people: binary units, the largest that
 * keeps the figure at or above 1 (so 81 GiB, never 83153 MiB), one decimal below 100.
 * JSON keeps exact byte counts beside these.
 */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(Math.abs(v) >= 100 ? 0 : 1)} ${units[i]}`;
}
