/**
 * Small server-drawn SVG charts for the status page: an x axis of time, a left (and
 * optionally a right) value axis with units, line and dot series, vertical marks (prune
 * passes) and shaded bands (throttling). Colours are CSS classes the page defines, so one
 * chart reads in light and dark mode; the page needs no script and no asset to show it.
 * Every series is a `<g data-series=… data-n=…>` whose drawn points tests can count.
 */
export interface Point {
  x: number;
  y: number;
}

export interface Series {
  /** data-series name and CSS class (`s-<name>`). */
  name: string;
  label: string;
  kind: 'line' | 'dots';
  axis: 'left' | 'right';
  points: Point[];
}

export interface Axis {
  unit: string;
  /** Always include these values in the range (e.g. 0, a limit). */
  include?: number[];
  format?: (v: number) => string;
}

export interface ChartSpec {
  id: string;
  title: string;
  xMin: number;
  xMax: number;
  /** Labels for the x ticks (epoch ms → text). */
  xFormat: (ms: number) => string;
  left: Axis;
  right?: Axis;
  series: Series[];
  marks?: { x: number; label: string }[];
  bands?: { x0: number; x1: number; label: string }[];
}

const CHART_WIDTH = 400;
const CHART_HEIGHT = 196;
const PAD = { l: 40, r: 40, t: 16, b: 34 };

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Round tick values: 1, 2 or 5 times a power of ten, about `n` of them over [lo, hi]. */
export function niceTicks(lo: number, hi: number, n = 4): { lo: number; hi: number; step: number; ticks: number[] } {
  if (!(hi > lo)) {
    const d = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    lo -= d;
    hi += d;
  }
  const raw = (hi - lo) / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const a = Math.floor(lo / step) * step;
  const b = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let v = a; v <= b + step / 2; v += step) ticks.push(Math.round(v / step) * step);
  return { lo: a, hi: b, step, ticks };
}

function fmt(v: number): string {
  return Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}

function rangeOf(series: Series[], axis: 'left' | 'right', include: number[] = []): { lo: number; hi: number } {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of series)
    if (s.axis === axis)
      for (const p of s.points) {
        if (Number.isFinite(p.y)) {
          lo = Math.min(lo, p.y);
          hi = Math.max(hi, p.y);
        }
      }
  for (const v of include) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (!Number.isFinite(lo)) return { lo: 0, hi: 1 };
  return { lo, hi };
}

const r1 = (v: number) => Math.round(v * 10) / 10;

export function chart(c: ChartSpec): string {
  const iw = CHART_WIDTH - PAD.l - PAD.r;
  const ih = CHART_HEIGHT - PAD.t - PAD.b;
  let x0 = c.xMin;
  let x1 = c.xMax;
  if (!(x1 > x0)) {
    x0 -= 60_000;
    x1 += 60_000;
  }
  const sx = (x: number) => r1(PAD.l + ((x - x0) / (x1 - x0)) * iw);
  const axes = {
    left: niceTicks(...(Object.values(rangeOf(c.series, 'left', c.left.include)) as [number, number])),
    right: c.right
      ? niceTicks(...(Object.values(rangeOf(c.series, 'right', c.right.include)) as [number, number]))
      : null,
  };
  const sy = (axis: 'left' | 'right', y: number) => {
    const a = axes[axis]!;
    return r1(PAD.t + ih - ((y - a.lo) / (a.hi - a.lo)) * ih);
  };
  const out: string[] = [];
  out.push(
    `<svg class="chart" id="${esc(c.id)}" viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}" role="img" aria-labelledby="${esc(c.id)}` +
      `-t"><title id="${esc(c.id)}-t">${esc(c.title)}</title>`,
  );
  for (const b of c.bands ?? []) {
    const a = sx(Math.max(b.x0, x0));
    const z = sx(Math.min(b.x1, x1));
    out.push(
      `<rect class="band" x="${a}" y="${PAD.t}" width="${Math.max(1, r1(z - a))}` +
        `" height="${ih}"><title>${esc(b.label)}</title></rect>`,
    );
  }
  // Grid and left axis.
  const lf = c.left.format ?? fmt;
  for (const t of axes.left.ticks) {
    const y = sy('left', t);
    out.push(
      `<line class="grid" x1="${PAD.l}" x2="${CHART_WIDTH - PAD.r}" y1="${y}" y2="${y}"/><text class="tick" x="${PAD.l - 4}` +
        `" y="${r1(y + 3.5)}" text-anchor="end">${esc(lf(t))}</text>`,
    );
  }
  out.push(`<text class="unit" x="4" y="10">${esc(c.left.unit)}</text>`);
  if (c.right && axes.right) {
    const rf = c.right.format ?? fmt;
    for (const t of axes.right.ticks)
      out.push(
        `<text class="tick" x="${CHART_WIDTH - PAD.r + 4}" y="${r1(sy('right', t) + 3.5)}">${esc(rf(t))}</text>`,
      );
    out.push(`<text class="unit" x="${CHART_WIDTH - 4}" y="10" text-anchor="end">${esc(c.right.unit)}</text>`);
  }
  // Time axis: four or five ticks at round minutes.
  out.push(
    `<line class="axis" x1="${PAD.l}" x2="${CHART_WIDTH - PAD.r}" y1="${PAD.t + ih}" y2="${PAD.t + ih}` +
      `"/><line class="axis" x1="${PAD.l}" x2="${PAD.l}" y1="${PAD.t}" y2="${PAD.t + ih}` +
      `"/>`,
  );
  const span = x1 - x0;
  const stepMs =
    [
      60e3,
      300e3,
      900e3,
      1800e3,
      3600e3,
      3 * 3600e3,
      6 * 3600e3,
      12 * 3600e3,
      86400e3,
      2 * 86400e3,
      7 * 86400e3,
      14 * 86400e3,
      30 * 86400e3,
      91 * 86400e3,
      365 * 86400e3,
    ].find((s) => span / s <= 4) ?? 365 * 86400e3;
  for (let t = Math.ceil(x0 / stepMs) * stepMs; t <= x1; t += stepMs) {
    const x = sx(t);
    out.push(
      `<line class="axis" x1="${x}" x2="${x}" y1="${PAD.t + ih}" y2="${PAD.t + ih + 4}` +
        `"/><text class="tick" x="${x}" y="${PAD.t + ih + 15}" text-anchor="middle">` +
        `${esc(c.xFormat(t))}</text>`,
    );
  }
  for (const m of c.marks ?? []) {
    const x = sx(m.x);
    out.push(
      `<line class="mark" x1="${x}" x2="${x}" y1="${PAD.t}" y2="${PAD.t + ih}"><title>${esc(m.label)}</title></line>`,
    );
  }
  // Series.
  for (const s of c.series) {
    const pts = s.points.filter((p) => Number.isFinite(p.y) && Number.isFinite(p.x));
    out.push(`<g class="s-${esc(s.name)}" data-series="${esc(s.name)}" data-n="${pts.length}">`);
    if (s.kind === 'line') {
      // A missing reading breaks the line rather than joining across it.
      let run: string[] = [];
      const flush = () => {
        if (run.length === 1) out.push(`<circle r="1.5" cx="${run[0]!.split(',')[0]}" cy="${run[0]!.split(',')[1]}"/>`);
        else if (run.length > 1) out.push(`<polyline points="${run.join(' ')}"/>`);
        run = [];
      };
      for (const p of s.points) {
        if (Number.isFinite(p.y) && Number.isFinite(p.x)) run.push(`${sx(p.x)},${sy(s.axis, p.y)}`);
        else flush();
      }
      flush();
    } else {
      for (const p of pts) out.push(`<circle r="3" cx="${sx(p.x)}" cy="${sy(s.axis, p.y)}"/>`);
    }
    out.push('</g>');
  }
  // Legend under the time labels.
  let lx = PAD.l;
  for (const s of c.series) {
    out.push(
      `<g class="s-${esc(s.name)}"><rect class="key" x="${lx}" y="${CHART_HEIGHT - 10}" width="10" height="6"/></g><text class="tick" x="${lx + 13}` +
        `" y="${CHART_HEIGHT - 4}">${esc(s.label)}</text>`,
    );
    lx += 20 + s.label.length * 5.6;
  }
  if ((c.marks ?? []).length > 0)
    out.push(
      `<line class="mark" x1="${lx}" x2="${lx + 10}" y1="${CHART_HEIGHT - 7}" y2="${CHART_HEIGHT - 7}` +
        `"/><text class="tick" x="${lx + 13}" y="${CHART_HEIGHT - 4}">prune pass</text>`,
    );
  out.push('</svg>');
  return out.join('');
}
