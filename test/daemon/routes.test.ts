import { describe, expect, it } from 'vitest';
import { Registry } from '../../src/metrics/exposition.js';
import { httpRequestMetrics } from '../../src/daemon/routes.js';

describe('/metrics: the requests the daemon served', () => {
  it('go through the metrics registry, in the exposition the daemon always printed', () => {
    const r = new Registry();
    r.gauge('picoclaw_guard_up', 'Whether the guard runs.', 1);
    const requests = new Map([
      ['other 404', 2],
      ['/metrics 200', 7],
      ['/ 200', 1],
      ['/health 503', 3],
      ['/health 200', 75],
    ]);
    httpRequestMetrics(r, requests);
    expect(r.names()).toEqual(['picoclaw_guard_up', 'picoclaw_guard_http_requests_total']);
    expect(r.render()).toBe(
      [
        '# HELP picoclaw_guard_up Whether the guard runs.',
        '# TYPE picoclaw_guard_up gauge',
        'picoclaw_guard_up 1',
        '# HELP picoclaw_guard_http_requests_total HTTP requests the daemon answered, by endpoint and status code.',
        '# TYPE picoclaw_guard_http_requests_total counter',
        'picoclaw_guard_http_requests_total{endpoint="/",code="200"} 1',
        'picoclaw_guard_http_requests_total{endpoint="/health",code="200"} 75',
        'picoclaw_guard_http_requests_total{endpoint="/health",code="503"} 3',
        'picoclaw_guard_http_requests_total{endpoint="/metrics",code="200"} 7',
        'picoclaw_guard_http_requests_total{endpoint="other",code="404"} 2',
        '',
      ].join('\n'),
    );
  });

  it('no request yet: no family at all (not a HELP line without samples)', () => {
    const r = new Registry();
    httpRequestMetrics(r, new Map());
    expect(r.render()).toBe('');
  });
});
