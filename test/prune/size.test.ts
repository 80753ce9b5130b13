import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { dbFileBytes } from '../../src/picoclaw/seahorse.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { addConversation, dailyHome, handHome, integrity } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { downGateway } from '../support/gateway-state.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const down = downGateway;
const MB = 1024 * 1024;

function bigHome(): { home: string; dbPath: string } {
  return dailyHome(tempDir(), NOW, { undated: true });
}

describe('the size guard (max_db_size_mb)', () => {
  it('dry-run estimates, apply measures: oldest first, in batches, until the file fits', async () => {
    const { home, dbPath } = bigHome();
    const before = dbFileBytes(dbPath).total;
    const limitMb = Math.max(1, Math.floor(before / MB / 3));
    expect(before).toBeGreaterThan(limitMb * MB);
    const flags = { max_age_days: 0, max_sessions: 0, max_db_size_mb: limitMb };
    const dry = await runPrunePass({
      home,
      env,
      apply: false,
      clock: fixedClock(NOW),
      stateDir: null,
      probe: down,
      flags,
    });
    expect(dry.database.size_check).toMatchObject({ checked: true, estimated: true });
    expect(dry.database.size_check.method).toMatch(/estimate/);
    const planned = dry.sessions.filter((s) => s.reason === 'max_db_size_mb').map((s) => s.key);
    expect(planned.length).toBeGreaterThan(0);

    const r = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(NOW),
      stateDir: null,
      probe: down,
      flags,
    });
    expect(r.exit_code).toBe(0);
    const after = dbFileBytes(dbPath).total;
    expect(after).toBeLessThanOrEqual(limitMb * MB);
    const deleted = r.sessions.filter((s) => s.action === 'delete');
    expect(deleted.every((s) => s.reason === 'max_db_size_mb')).toBe(true);
    // A prefix of the oldest-first order; the newest and the undated one kept.
    const order = r.sessions.filter((s) => s.key!.startsWith('sk_v1_day')).map((s) => s.action);
    const firstKeep = order.indexOf('keep');
    expect(order.slice(firstKeep).every((a) => a === 'keep')).toBe(true);
    expect(r.sessions.find((s) => s.key === 'sk_v1_day23')!.action).toBe('keep');
    expect(r.sessions.find((s) => s.key === 'sk_v1_undated')!.action).toBe('keep');
    expect(r.database.size_check.steps.length).toBeGreaterThanOrEqual(1);
    expect(r.database.size_check.steps.length).toBeLessThan(deleted.length + 1); // batches, not one VACUUM per session
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  });

  it('with vacuum off, one batch for the excess, counted from its estimate, not everything', async () => {
    const { home, dbPath } = bigHome();
    const before = dbFileBytes(dbPath).total;
    const flags = {
      max_age_days: 0,
      max_sessions: 0,
      max_db_size_mb: Math.max(1, Math.floor(before / MB / 3)),
      vacuum: false,
    };
    const r = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(NOW),
      stateDir: null,
      probe: down,
      flags,
    });
    const deleted = r.sessions.filter((s) => s.action === 'delete').length;
    expect(deleted).toBeGreaterThan(0);
    expect(deleted).toBeLessThan(20);
    expect(r.database.size_check.shortfall).toMatch(/^vacuum is off, so the file does not shrink: .*covers the excess/);
    expect(r.database.size_check.steps).toHaveLength(1);
  });

  it('with only the newest session holding rows, keeps it whatever the limit', async () => {
    const home = tempDir();
    const { dbPath } = handHome(home, [
      { key: 'sk_v1_only', updated: '2026-11-29T00:00:00Z' },
      { key: 'sk_v1_undated', updated: null, created: null, lastLine: null },
    ]);
    const db = new (sqlite())(dbPath);
    addConversation(db, 'sk_v1_only', Array(10).fill('2026-11-29 00:00:00'), { contentBytes: 200_000 });
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    expect(dbFileBytes(dbPath).total).toBeGreaterThan(MB);
    const r = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(NOW),
      stateDir: null,
      probe: down,
      flags: { max_db_size_mb: 1 },
    });
    expect(r.database.size_check.checked).toBe(true);
    expect(r.totals.deleted_sessions).toBe(0);
    expect(r.database.size_check.shortfall).toMatch(/protected/);
    expect(r.sessions.map((s) => `${s.key}:${s.reason}`).sort()).toEqual([
      'sk_v1_only:newest',
      'sk_v1_undated:undated',
    ]);
  });
});
