import type { HealthReport } from '../health/index.js';
import type { GatewayStateName } from '../picoclaw/gateway.js';

/**
 * The daemon's memory of its own readings, for the status page's charts: one sample per
 * health refresh, in a ring of typed arrays sized for `HISTORY_SECONDS` at the refresh
 * cadence. Fixed-size columns keep the footprint flat and known (about 30 bytes a sample:
 * 2,880 samples at the default 30 s, 86,400 at the 1 s minimum, i.e. under 2.6 MB) and
 * give the garbage collector nothing to walk. Nothing is written to disk: a restarted
 * daemon starts a new history.
 */
export const HISTORY_SECONDS = 24 * 3600;

/** Throttle bits kept per sample (the `now` flags of the health report). */
export const FLAG_UNDER_VOLTAGE = 1;
export const FLAG_FREQ_CAPPED = 2;
export const FLAG_THROTTLED = 4;
export const FLAG_SOFT_TEMP_LIMIT = 8;

export interface Sample {
  at_ms: number;
  /** CPU temperature, °C; NaN: no reading. */
  temp_celsius: number;
  /** Highest current CPU frequency over the cores, MHz; NaN: no reading. */
  freq_mhz: number;
  /** FLAG_* bits; 255: the board cannot tell. */
  flags: number;
  /** MemAvailable, MiB; NaN: no reading. */
  mem_available_mib: number;
  /** Sessions counted over every agent; -1: not counted. */
  sessions: number;
}

export function capacityFor(refreshSeconds: number): number {
  return Math.max(2, Math.ceil(HISTORY_SECONDS / Math.max(1, refreshSeconds)));
}

export function sampleOf(h: HealthReport, atMs: number): Sample {
  const temp = h.temperature.available ? (h.temperature.cpu_celsius ?? NaN) : NaN;
  let freq = NaN;
  if (h.cpufreq.available) {
    for (const c of h.cpufreq.cores) if (c.cur_hertz !== null && !(c.cur_hertz / 1e6 <= freq)) freq = c.cur_hertz / 1e6;
  }
  let flags = 255;
  if (h.throttle.available && h.throttle.now) {
    const n = h.throttle.now;
    flags =
      (n.under_voltage ? FLAG_UNDER_VOLTAGE : 0) |
      (n.arm_freq_capped ? FLAG_FREQ_CAPPED : 0) |
      (n.throttled ? FLAG_THROTTLED : 0) |
      (n.soft_temp_limit ? FLAG_SOFT_TEMP_LIMIT : 0);
  }
  const mem =
    h.resources.available && h.resources.memory_available_bytes !== null
      ? h.resources.memory_available_bytes / 1048576
      : NaN;
  const sessions = h.picoclaw.available ? h.picoclaw.sessions.count : -1;
  return { at_ms: atMs, temp_celsius: temp, freq_mhz: freq, flags, mem_available_mib: mem, sessions };
}

export class ReadingHistory {
  private at: Float64Array;
  private temp: Float32Array;
  private freq: Float32Array;
  private flags: Uint8Array;
  private mem: Float32Array;
  private sessions: Int32Array;
  /** Index the next sample goes to. */
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    this.at = new Float64Array(capacity);
    this.temp = new Float32Array(capacity);
    this.freq = new Float32Array(capacity);
    this.flags = new Uint8Array(capacity);
    this.mem = new Float32Array(capacity);
    this.sessions = new Int32Array(capacity);
  }

  get capacity(): number {
    return this.at.length;
  }

  get length(): number {
    return this.count;
  }

  /** Bytes held by the columns. */
  get bytes(): number {
    return this.capacity * (8 + 4 + 4 + 1 + 4 + 4);
  }

  push(s: Sample): void {
    const i = this.head;
    this.at[i] = s.at_ms;
    this.temp[i] = s.temp_celsius;
    this.freq[i] = s.freq_mhz;
    this.flags[i] = s.flags;
    this.mem[i] = s.mem_available_mib;
    this.sessions[i] = s.sessions;
    this.head = (i + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
  }

  /** The i-th sample, oldest first. */
  get(i: number): Sample {
    const j = (this.head - this.count + i + this.capacity) % this.capacity;
    return {
      at_ms: this.at[j]!,
      temp_celsius: this.temp[j]!,
      freq_mhz: this.freq[j]!,
      flags: this.flags[j]!,
      mem_available_mib: this.mem[j]!,
      sessions: this.sessions[j]!,
    };
  }

  /** Samples oldest first. */
  all(): Sample[] {
    const out: Sample[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.get(i));
    return out;
  }

  /**
   * At most `max` samples for a chart, as downsample() would give, read straight from the
   * columns: a full day thinned at every refresh leaves 360 objects behind, not 2,880.
   */
  thinned(max: number): Sample[] {
    if (this.count <= max) return this.all();
    const per = Math.ceil(this.count / max);
    const out: Sample[] = [];
    for (let i = 0; i < this.count; i += per) {
      const end = Math.min(this.count, i + per);
      const sum = [0, 0, 0, 0];
      const n = [0, 0, 0, 0];
      let flags = 0;
      let known = false;
      let sessions = -1;
      for (let k = i; k < end; k++) {
        const j = (this.head - this.count + k + this.capacity) % this.capacity;
        const v = [this.at[j]!, this.temp[j]!, this.freq[j]!, this.mem[j]!];
        for (let c = 0; c < 4; c++) {
          if (Number.isFinite(v[c]!)) {
            sum[c]! += v[c]!;
            n[c]!++;
          }
        }
        if (this.flags[j] !== 255) {
          flags |= this.flags[j]!;
          known = true;
        }
        sessions = this.sessions[j]!;
      }
      const mean = (c: number) => (n[c] ? sum[c]! / n[c] : NaN);
      out.push({
        at_ms: mean(0),
        temp_celsius: mean(1),
        freq_mhz: mean(2),
        flags: known ? flags : 255,
        mem_available_mib: mean(3),
        sessions,
      });
    }
    return out;
  }

  /** A new capacity (SIGHUP changed the refresh cadence): the newest samples stay. */
  resized(capacity: number): ReadingHistory {
    if (capacity === this.capacity) return this;
    const next = new ReadingHistory(capacity);
    for (let i = Math.max(0, this.count - capacity); i < this.count; i++) next.push(this.get(i));
    return next;
  }

  /** The sessions count nearest to `ms` within `toleranceMs`, or null. */
  sessionsAt(ms: number, toleranceMs: number): number | null {
    let best: number | null = null;
    let bestD = toleranceMs;
    for (let i = 0; i < this.count; i++) {
      const s = this.get(i);
      const d = Math.abs(s.at_ms - ms);
      if (s.sessions >= 0 && d <= bestD) {
        best = s.sessions;
        bestD = d;
      }
    }
    return best;
  }
}

/**
 * At most `max` points for a chart: consecutive samples averaged in equal runs (flags
 * OR-ed, so a short throttle still shows). A 24 h history at a 1 s refresh would
 * otherwise put 86,400 points in the page.
 */
export function downsample(samples: Sample[], max: number): Sample[] {
  if (samples.length <= max) return samples;
  const per = Math.ceil(samples.length / max);
  const out: Sample[] = [];
  for (let i = 0; i < samples.length; i += per) {
    const run = samples.slice(i, i + per);
    const mean = (f: (s: Sample) => number) => {
      let sum = 0;
      let n = 0;
      for (const s of run) {
        if (Number.isFinite(f(s))) {
          sum += f(s);
          n++;
        }
      }
      return n ? sum / n : NaN;
    };
    out.push({
      at_ms: mean((s) => s.at_ms),
      temp_celsius: mean((s) => s.temp_celsius),
      freq_mhz: mean((s) => s.freq_mhz),
      flags: run.every((s) => s.flags === 255) ? 255 : run.reduce((f, s) => (s.flags === 255 ? f : f | s.flags), 0),
      mem_available_mib: mean((s) => s.mem_available_mib),
      sessions: run[run.length - 1]!.sessions,
    });
  }
  return out;
}

/** When the gateway entered its present state, as far as this daemon saw it. */
export interface GatewaySince {
  state: GatewayStateName;
  since_ms: number;
  /** false: the state was already so when the daemon first looked (it began at or before since_ms). */
  seen_change: boolean;
}

export class GatewayTracker {
  current: GatewaySince | null = null;

  observe(state: GatewayStateName, atMs: number): void {
    if (this.current?.state === state) return;
    this.current = { state, since_ms: atMs, seen_change: this.current !== null };
  }
}

/**
 * Tests and the footprint benchmark only: `count` synthetic samples ending now, one refresh
 * apart, so a full buffer can be measured without waiting 24 hours.
 */
export function fillSynthetic(h: ReadingHistory, count: number, refreshSeconds: number, nowMs: number): void {
  const n = Math.min(count, h.capacity);
  for (let i = 0; i < n; i++) {
    const at = nowMs - (n - i) * refreshSeconds * 1000;
    const phase = (i / Math.max(1, n)) * 2 * Math.PI;
    h.push({
      at_ms: at,
      temp_celsius: 52 + 8 * Math.sin(phase),
      freq_mhz: 1500 - (i % 17 === 0 ? 900 : 0),
      flags: i % 17 === 0 ? FLAG_FREQ_CAPPED : 0,
      mem_available_mib: 2900 + 100 * Math.cos(phase),
      sessions: 40 + (i % 13),
    });
  }
}
