import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleHome, startDaemon, writeConfig } from './support.js';

/** What a person sees of the daemon in its first seconds. */
describe('the daemon at start', () => {
  it('the status page shows the schedule from the first request, not "Scheduled passes are off"', async () => {
    const h = sampleHome();
    // No timed refresh for ten minutes: the page must not wait for one to learn the schedule.
    const config = writeConfig(h.root, {
      prune: { enabled: true, max_age_days: 30 },
      metrics: { refresh_seconds: 600 },
    });
    const d = await startDaemon({
      home: h.home,
      stateDir: join(h.root, 'state'),
      config,
      env: { PICOGUARD_INTERVAL_SECONDS: '3600' },
    });
    const page = (await d.get('/')).body;
    expect(page).not.toContain('Scheduled passes are off');
    expect(page).toMatch(/Next pass |A pass is running now\./);
    expect(d.stderr()).toMatch(new RegExp(`^picoclaw-guard: listening on http://127\\.0\\.0\\.1:${d.port}/ `));
    expect((await d.stop()).code).toBe(0);
  });

  it('with prune off the page says so at once', async () => {
    const h = sampleHome();
    const config = writeConfig(h.root, { prune: { enabled: false }, metrics: { refresh_seconds: 600 } });
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config });
    expect((await d.get('/')).body).toContain('Scheduled passes are off');
    expect((await d.stop()).code).toBe(0);
  });
});
