import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentTotals } from '../../src/commands/sessions.js';
import { countSessions, readPicoClaw } from '../../src/health/picoclaw.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { appendHistory } from '../../src/state/history.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { tempDir } from '../support/tmp.js';

const base = { timeoutMs: 300, hungAfterMs: 60_000, nowMs: Date.now };

describe('PicoClaw counts for health', () => {
  it('the cheap count agrees with the full inventory, folder by folder', () => {
    const dir = join(tempDir(), '.picoclaw');
    buildSampleHome({ dir, sessions: 80, agents: 3, pidFile: 'none' });
    const home = discoverHome({ home: dir, env: {} });
    const inv = buildInventory(home, { skipSeahorse: true });
    const totals = agentTotals(inv);
    for (const { dir: sd, agents } of home.sessionsDirs) {
      const c = countSessions(sd);
      const want = totals.filter((t) => agents.includes(t.agent));
      expect(c.sessions).toBe(want.reduce((n, t) => n + t.sessions, 0));
      // Cron runs are told apart by their file name alone; the inventory knows them by key.
      const cron = inv.sessions.filter((s) => agents.includes(s.agent) && s.key?.startsWith('agent:cron-')).length;
      expect(cron).toBeGreaterThan(0);
      expect(c.cron_sessions).toBe(cron);
      // Orphan .jsonl files (no meta) are data on disk too: they count in the bytes.
      expect(c.jsonl_bytes).toBe(
        want.reduce((n, t) => n + t.jsonl_bytes, 0) +
          inv.orphanJsonl.filter((o) => o.file.path.startsWith(sd + '/')).reduce((n, o) => n + o.file.bytes, 0),
      );
    }
    expect(home.sessionsDirs.map((s) => countSessions(s.dir).sessions).reduce((a, b) => a + b, 0)).toBe(
      inv.sessions.length,
    );
  });

  it('counts only regular *.meta.json; temp files, symlinks, folders and legacy .json never count', () => {
    const d = tempDir();
    writeFileSync(join(d, 'a.meta.json'), '{"key":"a"}');
    writeFileSync(join(d, 'a.jsonl'), 'x'.repeat(100));
    writeFileSync(join(d, '.tmp-123.meta.json'), 'tmp');
    writeFileSync(join(d, 'session-1.tmp'), 'tmp');
    writeFileSync(join(d, 'old.json'), '{}');
    symlinkSync(join(d, 'a.meta.json'), join(d, 'b.meta.json'));
    symlinkSync(join(d, 'a.jsonl'), join(d, 'b.jsonl'));
    mkdirSync(join(d, 'c.meta.json'));
    expect(countSessions(d)).toEqual({ sessions: 1, cron_sessions: 0, jsonl_bytes: 100, error: null });
    writeFileSync(join(d, 'agent_cron-3f9a1c2b7d4e5f60-0b6f0d5e-8a47-4a4e-9d0e-2f1c3b5a7d91.meta.json'), '{}');
    mkdirSync(join(d, 'agent_cron-folder.meta.json'));
    expect(countSessions(d)).toEqual({ sessions: 2, cron_sessions: 1, jsonl_bytes: 100, error: null });
    expect(countSessions(join(d, 'missing'))).toEqual({ sessions: 0, cron_sessions: 0, jsonl_bytes: 0, error: null });
  });

  it('reports seahorse.db with its WAL, the last prune of this home, and the bootstrap gap it is given', async () => {
    const dir = join(tempDir(), '.picoclaw');
    buildSampleHome({ dir, sessions: 20, pidFile: 'none' });
    const home = discoverHome({ home: dir, env: {} });
    writeFileSync(home.seahorsePath + '-wal', Buffer.alloc(4096));
    const state = tempDir();
    const entry = {
      home: home.home,
      mode: 'apply' as const,
      outcome: 'ok' as const,
      deleted_sessions: 3,
      deleted_orphans: 1,
      freed_bytes: 12345,
      sessions_before: 23,
      sessions_after: 20,
      duration_ms: 1500,
      reason: null,
    };
    appendHistory(state, { ...entry, at: '2026-06-01T00:00:00Z' });
    appendHistory(state, { ...entry, at: '2026-06-02T00:00:00Z', home: '/another/home' });
    const r = await readPicoClaw({ ...base, home, stateDir: state, lastBootstrapGapSeconds: 42.5 });
    if (!r.available) throw new Error(r.reason);
    expect(r.seahorse.present).toBe(true);
    expect(r.seahorse.wal_bytes).toBe(4096);
    expect(r.seahorse.total_bytes).toBe(r.seahorse.db_bytes + 4096);
    expect(r.last_prune).toEqual({
      at: '2026-06-01T00:00:00Z',
      outcome: 'ok',
      deleted_sessions: 3,
      deleted_orphans: 1,
      freed_bytes: 12345,
      sessions_before: 23,
      sessions_after: 20,
      duration_seconds: 1.5,
      reason: null,
    });
    expect(r.last_bootstrap_gap_seconds).toBe(42.5);
    expect(r.sessions.count).toBe(buildInventory(home, { skipSeahorse: true }).sessions.length);
    expect(r.gateway).toMatchObject({ state: 'down', pid_file: 'absent', pid: null });
  });

  it('no bootstrap gap yet: null; no home: no data', async () => {
    const dir = join(tempDir(), '.picoclaw');
    buildSampleHome({ dir, sessions: 5, pidFile: 'none' });
    const r = await readPicoClaw({ ...base, home: discoverHome({ home: dir, env: {} }), stateDir: null });
    expect(r.available && r.last_bootstrap_gap_seconds).toBeNull();
    expect(r.available && r.last_prune).toBeNull();
    const missing = await readPicoClaw({
      ...base,
      home: discoverHome({ home: join(tempDir(), 'nope'), env: {} }),
      stateDir: null,
    });
    expect(missing).toEqual({ available: false, reason: expect.stringMatching(/^no PicoClaw home at /) });
  });
});
