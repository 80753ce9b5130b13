import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/io/sqlite.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { cliJson, killRunningPasses, runCrashHarness, type CrashRun } from '../support/crash.js';
import { integrity } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * Crash at any moment: a real `prune --apply` subprocess on a sample home
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
  afterAll(() => killRunningPasses());

  it('survives SIGKILL at random moments of an --apply pass and converges on the next pass', async () => {
    run = await runCrashHarness({
      dir: tempDir('pcg-crash-'),
      seed: 11,
      sessions: 240,
      agents: 4,
      kills: 6,
      stableForMs: 20 * 60_000,
    });
    const fx = run.fixture;
    console.info(
      `crash figures: ${JSON.stringify({ policy: fx.policyArgs.join(' '), victims: fx.victims.length, reference: fx.reference, phases: run.phases, kills: run.results.map((r) => ({ kill: r.kill, killed: r.killed, at_ms: r.killWallMs, phase: r.phase })) })}`,
    );
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

  /**
   * Found by bench/crash-soak.ts (kill 93 of 120, seed 1, 3000 sessions): SeahorseDeleter
   * deletes a conversation in several transactions, its conversations row last. A kill
   * between the last message transaction and the row's leaves the row with no messages;
   * for an orphan conversation the next pass then finds no MAX(messages.created_at),
   * calls it undated and keeps it for ever, where an uninterrupted pass deleted it.
   * This builds that state directly (what the deleter's transactions 1 and 2 leave).
   */
  it('deletes on the next pass an orphan conversation a kill left as a bare conversations row', () => {
    const dir = tempDir('pcg-crash-orphan-');
    const s = buildSampleHome({
      dir: join(dir, 'home'),
      seed: 3,
      sessions: 80,
      agents: 2,
      now: Date.now(),
      pidFile: 'none',
    });
    // Most of the sample's sessions are older than 30 days: the clock is confirmed (--trust-clock), as an operator
    // would on such a home (without it the age check refuses: docs/bad-input.md#the-clock).
    const policy = ['--max-age-days', '30', '--max-sessions', '0', '--max-db-size-mb', '0', '--trust-clock'];
    const plan = cliJson(['prune', '--home', s.home, '--json', ...policy]).report;
    // An orphan the age check deletes, a day or more clear of the cutoff.
    const victim = plan.orphans.find(
      (o) =>
        o.action === 'delete' && o.last_activity !== null && Date.parse(o.last_activity) < Date.now() - 31 * 86_400_000,
    );
    expect(victim).toBeDefined();
    const C = victim!.conversation_id;
    const db = new (sqlite())(s.seahorsePath!);
    db.transaction(() => {
      db.prepare(`DELETE FROM context_items WHERE conversation_id = ?`).run(C);
      db.prepare(
        `DELETE FROM summary_messages WHERE summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?)`,
      ).run(C);
      db.prepare(`DELETE FROM summaries WHERE conversation_id = ?`).run(C);
      db.prepare(
        `DELETE FROM message_parts WHERE message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?)`,
      ).run(C);
      db.prepare(`DELETE FROM messages WHERE conversation_id = ?`).run(C);
    })();
    db.close();
    const r = cliJson([
      'prune',
      '--apply',
      '--json',
      '--home',
      s.home,
      '--state-dir',
      join(dir, 'state'),
      ...policy,
    ]).report;
    expect(r.exit_code).toBe(0);
    const check = new (sqlite())(s.seahorsePath!, { readonly: true });
    const left = check.prepare(`SELECT COUNT(*) AS n FROM conversations WHERE conversation_id = ?`).get(C) as {
      n: number;
    };
    check.close();
    expect(integrity(s.seahorsePath!).ok).toBe('ok');
    expect(r.orphans.find((o) => o.conversation_id === C)).toMatchObject({ action: 'delete' });
    expect(left.n).toBe(0);
  }, 60_000);
});
