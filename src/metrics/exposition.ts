/**
 * The Prometheus text exposition format, version 0.0.4 (prometheus/docs
 * instrumenting/exposition_formats.md, docs/board-health.md#metrics-conventions): one `# HELP` and one
 * `# TYPE` per family, the TYPE before its first sample, all samples of a family
 * together, `\n` line endings and a final newline. No timestamps (exporters omit them,
 * and node_exporter's textfile collector rejects them).
 *
 * Families are built fresh from a snapshot each time (the exporter rule): nothing here
 * keeps state between renders.
 */
export type MetricType = 'gauge' | 'counter';
export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  labels?: Labels;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** HELP text: backslash and newline escaped. */
export function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A label value: backslash, double quote and newline escaped. */
export function escapeLabelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Go's float formatting as the text format wants it: NaN, +Inf, -Inf, else the shortest decimal. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Labels | undefined): string {
  if (!labels) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return '{' + keys.map((k) => `${k}="${escapeLabelValue(labels[k]!)}"`).join(',') + '}';
}

/**
 * Render families. A family without samples is left out entirely (no HELP/TYPE for a
 * metric this board cannot measure: "no data", not 0). Invalid names and duplicate
 * label sets are programming errors and throw.
 */
export function render(families: readonly Family[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of families) {
    if (!NAME.test(f.name) || f.name.startsWith('__')) throw new Error(`invalid metric name ${f.name}`);
    if (seen.has(f.name)) throw new Error(`metric family ${f.name} rendered twice`);
    seen.add(f.name);
    if (f.type === 'counter' && !f.name.endsWith('_total')) throw new Error(`counter ${f.name} must end in _total`);
    if (f.samples.length === 0) continue;
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`);
    out.push(`# TYPE ${f.name} ${f.type}`);
    const sets = new Set<string>();
    for (const s of f.samples) {
      for (const k of Object.keys(s.labels ?? {})) {
        if (!LABEL.test(k) || k.startsWith('__')) throw new Error(`invalid label name ${k} on ${f.name}`);
      }
      const l = labelText(s.labels);
      if (sets.has(l)) throw new Error(`duplicate series ${f.name}${l}`);
      sets.add(l);
      out.push(`${f.name}${l} ${formatValue(s.value)}`);
    }
  }
  return out.length === 0 ? '' : out.join('\n') + '\n';
}

/** A small builder so callers can add samples to a family in any order and render once. */
export class Registry {
  private readonly families = new Map<string, Family>();

  family(name: string, type: MetricType, help: string): Family {
    let f = this.families.get(name);
    if (!f) {
      f = { name, type, help, samples: [] };
      this.families.set(name, f);
    } else if (f.type !== type || f.help !== help) {
      throw new Error(`metric family ${name} declared twice with different type or help`);
    }
    return f;
  }

  gauge(name: string, help: string, value: number | null | undefined, labels?: Labels): void {
    const f = this.family(name, 'gauge', help);
    if (value !== null && value !== undefined) f.samples.push({ labels, value });
  }

  counter(name: string, help: string, value: number | null | undefined, labels?: Labels): void {
    const f = this.family(name, 'counter', help);
    if (value !== null && value !== undefined) f.samples.push({ labels, value });
  }

  /** Every family declared, with or without samples (the Grafana/alerts tests read the names). */
  names(): string[] {
    return [...this.families.keys()];
  }

  render(): string {
    return render([...this.families.values()]);
  }
}
