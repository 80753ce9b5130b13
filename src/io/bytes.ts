const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;
export type ByteUnit = (typeof UNITS)[number];

/** Where a figure must keep one unit or one precision (the defaults suit everything else). */
export interface ByteFormat {
  /** Never a smaller unit: "0.0 MiB" beside other MiB figures, not "0 B". */
  smallest?: ByteUnit;
  /** Never a larger unit: a budget set in MiB reads "2048 MiB", as it was set. */
  largest?: ByteUnit;
  /** Digits after the point (B included), instead of one below 100 and none from 100. */
  decimals?: number;
}

/** Whole MiB: the unit of the settings (`*_mb`) and of the startup model's volume (sessions / MiB). */
export const WHOLE_MIB: Readonly<ByteFormat> = Object.freeze({ smallest: 'MiB', largest: 'MiB', decimals: 0 });

/**
 * The one way the project writes a byte count for people: binary units, the largest that
 * keeps the figure at or above 1 (so 81 GiB, never 83153 MiB), one decimal below 100.
 * JSON keeps exact byte counts beside these.
 */
export function formatBytes(n: number, f: ByteFormat = {}): string {
  if (!Number.isFinite(n)) return '-';
  const lo = UNITS.indexOf(f.smallest ?? 'B');
  const hi = UNITS.indexOf(f.largest ?? 'TiB');
  let v = n;
  let i = 0;
  while (i < hi && (i < lo || Math.abs(v) >= 1024)) {
    v /= 1024;
    i++;
  }
  if (f.decimals !== undefined) return `${v.toFixed(f.decimals)} ${UNITS[i]}`;
  return i === 0 ? `${v} B` : `${v.toFixed(Math.abs(v) >= 100 ? 0 : 1)} ${UNITS[i]}`;
}
