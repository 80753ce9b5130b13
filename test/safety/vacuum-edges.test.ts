import { appendFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { describe, expect, it } from 'vitest';
import { readPicoClaw } from '../../src/health/picoclaw.js';
import { fixedClock } from '../../src/io/clock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { dbFileBytes, openSeahorseWrite, readContentBytes, readPages } from '../../src/picoclaw/seahorse.js';
import { applyPlan } from '../../src/prune/apply/apply.js';
import { planPrune, type DbFacts } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { OWED_FILE } from '../../src/state/vacuum-owed.js';
import { addConversation, dailyHome, handHome, integrity } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway, readyGateway } from '../support/gateway-state.js';

/** The size guard while VACUUM is deferred, and when no deletion can help. */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const down = downGateway;
const ready = readyGateway;
const MB = 1024 * 1024;

function bigHome(): { home: string; dbPath: string } {
  return dailyHome(tempDir(), NOW);
}

describe('VACUUM deferred online: the excess is paid once, the VACUUM is owed to the next offline pass', () => {
  it(
    'online pass 1 deletes enough and records the owed VACUUM; pass 2 deletes ' +
      'nothing; the offline pass vacuums under the limit',
    async () => {
      const { home, dbPath } = bigHome();
      const state = tempDir();
      const limitMb = Math.max(1, Math.floor(dbFileBytes(dbPath).total / MB / 3));
      const flags = { max_age_days: 0, max_sessions: 0, max_db_size_mb: limitMb };
      const run = (probe: typeof down) =>
        runPrunePass({ home, env, apply: true, clock: fixedClock(NOW), stateDir: state, probe, flags });

      const p1 = await run(ready);
      expect(p1.exit_code).toBe(0);
      const first = p1.totals.deleted_sessions;
      expect(first).toBeGreaterThan(0);
      expect(p1.database.vacuum?.ran ?? false).toBe(false);
      expect(p1.database.size_check.shortfall).toMatch(/estimated share .* covers the excess/);
      expect(p1.database.vacuum_owed).toMatchObject({ since: NOW.toISOString() });
      expect(JSON.parse(readFileSync(join(state, OWED_FILE), 'utf8'))).toHaveLength(1);

      // The file has not shrunk (the VACUUM is owed): the same excess must not cost more sessions,
      // and the dry-run, reading the same state, says so before an apply does it.
      const dry = await runPrunePass({
        home,
        env,
        apply: false,
        clock: fixedClock(NOW),
        stateDir: state,
        probe: ready,
        flags,
      });
      expect(dry.totals.delete).toBe(0);
      expect(dry.database.size_check.method).toMatch(/A VACUUM is owed/);
      const p2 = await run(ready);
      expect(p2.totals.deleted_sessions).toBe(0);
      expect(p2.database.size_check.shortfall).toMatch(/owed since .*fits the limit; nothing more is deleted/);
      expect(p2.database.vacuum_owed).not.toBeNull();

      // The next offline moment (the pre-start pass): the owed VACUUM runs and the file fits.
      const p3 = await run(down);
      expect(p3.database.vacuum?.ran).toBe(true);
      expect(p3.database.vacuum?.duration_ms).toBeGreaterThan(0);
      expect(dbFileBytes(dbPath).total).toBeLessThanOrEqual(limitMb * MB);
      expect(p3.totals.deleted_sessions).toBe(0);
      expect(p3.database.vacuum_owed).toBeNull();
      expect(JSON.parse(readFileSync(join(state, OWED_FILE), 'utf8'))).toEqual([]);
      expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
    },
  );

  it(
    'an owed VACUUM from age deletions online runs at the next offline pass ' + 'even when it deletes nothing',
    async () => {
      const { home, dbPath } = bigHome();
      const state = tempDir();
      const p1 = await runPrunePass({
        home,
        env,
        apply: true,
        clock: fixedClock(NOW),
        stateDir: state,
        probe: ready,
        flags: { max_age_days: 10, max_sessions: 0, max_db_size_mb: 0 },
      });
      expect(p1.totals.deleted_sessions).toBe(14);
      expect(p1.database.vacuum?.reason).toMatch(/deferred/);
      expect(p1.database.vacuum_owed).not.toBeNull();
      const before = dbFileBytes(dbPath).total;
      const p2 = await runPrunePass({
        home,
        env,
        apply: true,
        clock: fixedClock(NOW),
        stateDir: state,
        probe: down,
        flags: { max_age_days: 10, max_sessions: 0, max_db_size_mb: 0 },
      });
      expect(p2.totals.deleted_sessions).toBe(0);
      expect(p2.database.vacuum?.ran).toBe(true);
      expect(p2.database.vacuum?.reason).toMatch(/^owed since/);
      expect(dbFileBytes(dbPath).total).toBeLessThan(before);
      expect(p2.database.vacuum_owed).toBeNull();
    },
  );
});

describe('a refusal in the size step never costs another session', () => {
  it('the oldest size victim changed since planning: it is kept and the size step stops there', async () => {
    const { home, dbPath } = bigHome();
    const limit = Math.max(1, Math.floor(dbFileBytes(dbPath).total / MB / 3));
    const inv = buildInventory(discoverHome({ home, env }));
    const r = new (sqlite())(dbPath, { readonly: true });
    const p = readPages(r);
    const db: DbFacts = {
      present: true,
      fileBytes: inv.seahorse.bytes.total,
      usedBytes: (p.pageCount - p.freelistCount) * p.pageSize,
      contentBytes: readContentBytes(r),
    };
    r.close();
    const plan = planPrune({
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY, max_age_days: 0, max_sessions: 0, max_db_size_mb: limit },
      now: NOW.getTime(),
      db,
    });
    const oldest = plan.groups.find((g) => g.sizeEligible)!;
    expect(oldest.key).toBe('sk_v1_day00');
    appendFileSync(
      oldest.members[0]!.files.jsonl!.path,
      '{"role":"user","content":"still here","created_at":"2026-11-30T11:59:00Z"}\n',
    );
    const w = openSeahorseWrite(dbPath);
    const res = applyPlan({
      plan,
      db: w,
      dbPath,
      online: false,
      forceVacuum: false,
      freeSpace: () => ({ availableBytes: 1e12, totalBytes: 1e12, availableInodes: null, totalInodes: null }),
      archiveDir: null,
      nowMs: NOW.getTime(),
    });
    w.close();
    expect(res.groups.get(oldest.id)).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    expect(res.deletedSessions).toBe(0);
    expect(res.size.stoppedBecause).toMatch(
      /^sk_v1_day00 was kept \(changed_since_plan\): the size guard stops rather than delete another session in its place/,
    );
  });
});

describe('no VACUUM when it cannot give space back', () => {
  function heldByNewest() {
    const home = tempDir();
    const { dbPath } = handHome(home, [
      { key: 'sk_v1_only', updated: '2026-11-29T00:00:00Z' },
      { key: 'sk_v1_undated', updated: null, created: null, lastLine: null },
    ]);
    const db = new (sqlite())(dbPath);
    addConversation(db, 'sk_v1_only', Array(10).fill('2026-11-29 00:00:00'), { contentBytes: 200_000 });
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    return { home, dbPath };
  }

  it(
    'over the limit with nothing deletable: no VACUUM on any pass; the report ' +
      'and health say why and who holds the rows',
    async () => {
      const { home, dbPath } = heldByNewest();
      const state = tempDir();
      const mtime = statSync(dbPath).mtimeMs;
      const size = statSync(dbPath).size;
      for (let i = 0; i < 2; i++) {
        const r = await runPrunePass({
          home,
          env,
          apply: true,
          clock: fixedClock(NOW),
          stateDir: state,
          probe: down,
          flags: { max_db_size_mb: 1 },
        });
        expect(r.totals.deleted_sessions).toBe(0);
        expect(r.database.vacuum?.ran ?? false).toBe(false);
        expect(r.database.size_check.limit_unmet).toMatch(
          /cannot be met.*sk_v1_only \(newest\) holds about [\d.]+ MiB/,
        );
        expect(r.warnings.join('\n')).toMatch(/seahorse.db stays over max_db_size_mb: the limit cannot be met/);
      }
      // Not rewritten: a VACUUM would have written the whole file.
      expect(statSync(dbPath).mtimeMs).toBe(mtime);
      expect(statSync(dbPath).size).toBe(size);
      const dry = await runPrunePass({
        home,
        env,
        apply: false,
        clock: fixedClock(NOW),
        stateDir: null,
        probe: down,
        flags: { max_db_size_mb: 1 },
      });
      expect(dry.database.size_check.limit_unmet).toMatch(/sk_v1_only \(newest\)/);

      const h = await readPicoClaw({
        home: discoverHome({ home, env }),
        stateDir: state,
        timeoutMs: 200,
        hungAfterMs: 60_000,
        nowMs: () => NOW.getTime(),
      });
      expect(h.available && h.last_prune?.size_limit_unmet).toMatch(/sk_v1_only \(newest\)/);
      expect(existsSync(join(state, OWED_FILE))).toBe(false);
    },
  );
});
