import { describe, expect, it } from 'vitest';
import { escapeHelp, escapeLabelValue, formatValue, Registry, render } from '../../src/metrics/exposition.js';
import { PROMTOOL, promtoolCheckMetrics } from '../daemon/support.js';

describe('Prometheus text format 0.0.4', () => {
  it('escapes label values (backslash, quote, newline) and HELP (backslash, newline)', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeHelp('x\\y\nz "q"')).toBe('x\\\\y\\nz "q"');
  });

  it('formats values as Go floats: NaN, +Inf, -Inf, integers without a dot', () => {
    expect([NaN, Infinity, -Infinity, 0, 52.582, 1e21, -3].map(formatValue)).toEqual([
      'NaN',
      '+Inf',
      '-Inf',
      '0',
      '52.582',
      '1e+21',
      '-3',
    ]);
  });

  it('renders HELP and TYPE once per family, before its samples, with a final newline; empty families vanish', () => {
    const r = new Registry();
    r.gauge('a_celsius', 'A.', 1, { zone_type: 'cpu' });
    r.counter('b_total', 'B.', 2);
    r.gauge('a_celsius', 'A.', 3, { zone_type: 'gpu' });
    r.gauge('c_bytes', 'Nothing to say.', null);
    expect(r.render()).toBe(
      '# HELP a_celsius A.\n# TYPE a_celsius gauge\na_celsius{zone_type="cpu"}' +
        ' 1\na_celsius{zone_type="gpu"} 3\n# HELP b_total B.\n# TYPE b_total counter\nb_total ' +
        '2\n',
    );
    expect(r.names()).toEqual(['a_celsius', 'b_total', 'c_bytes']);
    expect(render([])).toBe('');
  });

  it('refuses what Prometheus would reject: bad names, counters without _total, duplicate series', () => {
    expect(() => render([{ name: 'bad-name', help: '', type: 'gauge', samples: [{ value: 1 }] }])).toThrow(
      /invalid metric name/,
    );
    expect(() => render([{ name: 'x_count', help: '', type: 'counter', samples: [{ value: 1 }] }])).toThrow(
      /must end in _total/,
    );
    expect(() => render([{ name: 'x', help: '', type: 'gauge', samples: [{ value: 1 }, { value: 2 }] }])).toThrow(
      /duplicate series/,
    );
    expect(() =>
      render([{ name: 'x', help: '', type: 'gauge', samples: [{ value: 1, labels: { 'a-b': '1' } }] }]),
    ).toThrow(/invalid label name/);
    const r = new Registry();
    r.gauge('x', 'one', 1);
    expect(() => r.gauge('x', 'two', 1)).toThrow(/declared twice/);
  });

  it.skipIf(!PROMTOOL)('promtool accepts awkward label values (quotes, backslashes, newlines, UTF-8)', () => {
    const r = new Registry();
    for (const v of ['plain', 'with "quotes"', 'back\\slash', 'new\nline', '温度 ℃', '', 'a,b=c}'])
      r.gauge('picoclaw_guard_test_celsius', 'Label escaping.\nSecond line \\ with backslash.', 1, { chip: v });
    expect(promtoolCheckMetrics(r.render())).toEqual({ code: 0, output: '' });
  });
});
