import { describe, expect, it } from 'vitest';
import { runCrashHarness, type CrashRun } from '../support/crash.js';
import { tempDir } from '../support/tmp.js';

/**
 * Issue 4, "Crash at any moment": a real `prune --apply` subprocess on a sample home
 * (seahorse.db, four agents, alias groups, cron and undated sessions, orphan
 * conversations) is killed with SIGKILL a handful of times: after a random delay,
 * at a random write to seahorse.db-wal and at a random unlink of a session file.
 * After each kill (test/support/crash.ts, inspectAfterKill):
 *  (a) every session the dry-run's plan keeps is byte-identical (files) and
 *      row-identical (seahorse, FTS rows included);
 *  (b) PRAGMA integrity_check is ok, the FTS tables hold exactly the rows of the
 *      remaining messages and summaries, and no row points at a deleted one;
 *  (c) every chosen session is in a state PicoClaw reads correctly: all its files
 *      present (its rows whole, partly or wholly deleted), or its rows wholly gone
 *      and its .jsonl gone before its .meta.json; at most one session half-way;
 * and after a complete pass (checkConverged):
 *  (d) the session files and the seahorse content (compared by session key and
 *      message content) equal what an uninterrupted pass left.
 * The long run is bench/crash-soak.ts.
 */
describe('crash at any moment', () => {
  let run: CrashRun;

  it('survives SIGKILL at random moments of an --apply pass and converges on the next pass', async () => {
    run = await runCrashHarness({ dir: tempDir('pcg-crash-'), seed: 11, sessions: 240, agents: 4, kills: 6, stableForMs: 20 * 60_000 });
    const fx = run.fixture;
    // The run is worth something only if the plan deletes by both checks and the seahorse side.
    expect(fx.plan.totals.by_reason.max_age_days ?? 0).toBeGreaterThan(0);
    expect(fx.plan.totals.by_reason.max_sessions ?? 0).toBeGreaterThan(0);
    expect(fx.victims.filter((g) => g.conversations.length > 0).length).toBeGreaterThan(10);
    expect(fx.keptConversations.length).toBeGreaterThan(10);
    expect(fx.reference.walEvents).toBeGreaterThan(0);
    expect(fx.reference.unlinkEvents).toBeGreaterThan(0);
    expect(run.failures).toEqual([]);
    // Most kills land mid-pass (a delay kill may come after the pass ended).
    expect(run.results.filter((r) => r.killed).length).toBeGreaterThanOrEqual(3);
  }, 120_000);
});
