import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { tryLock } from '../../src/io/lock.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import { applyPlan } from '../../src/prune/apply/apply.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { planPrune } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { addConversation, dumpSeahorse, handHome, integrity, snapshot } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway, readyGateway } from '../support/gateway-state.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const down = downGateway;
const ready = readyGateway;
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };

function hand(home: string, variant: 'current' | 'legacy' = 'current') {
  return handHome(
    home,
    [
      {
        key: 'sk_v1_old',
        updated: '2026-08-01T10:00:00.5+02:00',
        seahorse: ['2026-08-01 07:00:00', '2026-08-01 08:00:00', '2026-08-01 08:00:01'],
      },
      { key: 'agent:main:telegram:direct:7', updated: '2026-07-01T10:00:00Z', seahorse: ['2026-07-01 10:00:00'] },
      {
        key: 'sk_v1_grouped',
        updated: '2026-11-29T10:00:00Z',
        aliases: ['agent:main:main', 'agent:main:telegram:direct:7'],
        seahorse: ['2026-11-29 10:00:00', '2026-11-29 10:00:05'],
      },
      {
        key: 'agent:cron-0123456789abcdef-11111111-2222-4333-8444-555555555555',
        updated: '2026-09-01T00:00:00Z',
        seahorse: ['2026-09-01 00:00:00', '2026-09-01 00:00:00'],
      },
      { key: 'sk_v1_undated', updated: null, created: null, lastLine: null },
      { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] },
    ],
    { variant },
  );
}

function pass(home: string, apply: boolean, extra: Partial<Parameters<typeof runPrunePass>[0]> = {}) {
  return runPrunePass({ home, env, apply, clock: fixedClock(NOW), stateDir: null, probe: down, ...extra });
}

describe('prune --apply', () => {
  it('deletes exactly the plan, in both stores, and leaves every kept session byte- and row-identical', async () => {
    const home = tempDir();
    const { sessionsDir, dbPath } = hand(home);
    const dry = await pass(home, false);
    const planned = dry.sessions
      .filter((s) => s.action === 'delete')
      .map((s) => s.key)
      .sort();
    expect(planned).toEqual(['agent:cron-0123456789abcdef-11111111-2222-4333-8444-555555555555', 'sk_v1_old']);
    expect(dry.sessions.find((s) => s.key === 'agent:main:telegram:direct:7')).toMatchObject({
      action: 'keep',
      group: 'agent:main:telegram:direct:7',
    });
    const keptBefore = snapshot(sessionsDir, (p) => p.includes('seahorse.db') || /sk_v1_old|agent_cron/.test(p));
    const rowsBefore = dumpSeahorse(dbPath);

    const r = await pass(home, true);
    expect(r.exit_code).toBe(0);
    expect(
      r.sessions
        .filter((s) => s.action === 'delete')
        .map((s) => s.key)
        .sort(),
    ).toEqual(planned);
    const left = readdirSync(sessionsDir)
      .filter((n) => !n.startsWith('seahorse.db'))
      .sort();
    expect(left).toEqual([
      'agent_main_telegram_direct_7.jsonl',
      'agent_main_telegram_direct_7.meta.json',
      'sk_v1_grouped.jsonl',
      'sk_v1_grouped.meta.json',
      'sk_v1_recent.jsonl',
      'sk_v1_recent.meta.json',
      'sk_v1_undated.jsonl',
      'sk_v1_undated.meta.json',
    ]);
    expect(snapshot(sessionsDir, (p) => p.includes('seahorse.db'))).toEqual(keptBefore);
    const rowsAfter = dumpSeahorse(dbPath);
    const keptKeys = new Set(['sk_v1_grouped', 'sk_v1_recent', 'agent:main:telegram:direct:7']);
    const keptConv = new Set(
      (rowsBefore.conversations as { conversation_id: number; session_key: string }[])
        .filter((c) => keptKeys.has(c.session_key))
        .map((c) => c.conversation_id),
    );
    expect(rowsAfter.conversations).toEqual(
      (rowsBefore.conversations as { conversation_id: number }[]).filter((c) => keptConv.has(c.conversation_id)),
    );
    const keptMsgs = (rowsBefore.messages as { conversation_id: number; message_id: number }[]).filter((m) =>
      keptConv.has(m.conversation_id),
    );
    expect(rowsAfter.messages).toEqual(keptMsgs);
    const keptMsgIds = new Set(keptMsgs.map((m) => String(m.message_id)));
    expect(rowsAfter.messages_fts).toEqual(
      (rowsBefore.messages_fts as { message_id: unknown }[]).filter((f) => keptMsgIds.has(String(f.message_id))),
    );
    expect(rowsAfter.summaries_fts).toHaveLength((rowsAfter.summaries as unknown[]).length);
    for (const t of ['message_parts', 'summary_messages', 'summary_parents', 'context_items']) {
      expect((rowsAfter[t] as unknown[]).length, t).toBeLessThan((rowsBefore[t] as unknown[]).length);
    }
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
    // The triggers are back exactly as they were.
    const db = new (sqlite())(dbPath, { readonly: true });
    expect(
      (db.prepare(`SELECT name FROM sqlite_master WHERE type='trigger' ORDER BY name`).all() as { name: string }[]).map(
        (x) => x.name,
      ),
    ).toEqual(['messages_ad', 'messages_ai', 'messages_au', 'summaries_ad', 'summaries_ai', 'summaries_au']);
    db.close();
    // A second pass has nothing left to do.
    const again = await pass(home, true);
    expect(again.totals.deleted_sessions).toBe(0);
  });

  it('deletes from an older schema with the broken summaries trigger, and leaves that trigger as it was', async () => {
    const home = tempDir();
    const { dbPath } = hand(home, 'legacy');
    const before = new (sqlite())(dbPath, { readonly: true });
    const triggerSql = (
      before.prepare(`SELECT sql FROM sqlite_master WHERE name='summaries_ad'`).get() as { sql: string }
    ).sql;
    before.close();
    expect(triggerSql).toContain("'delete'");
    const r = await pass(home, true);
    expect(r.exit_code).toBe(0);
    expect(r.totals.deleted_sessions).toBe(2);
    const after = new (sqlite())(dbPath, { readonly: true });
    expect(
      (after.prepare(`SELECT sql FROM sqlite_master WHERE name='summaries_ad'`).get() as { sql: string }).sql,
    ).toBe(triggerSql);
    after.close();
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  });

  it('deletes seahorse rows, then the .jsonl, then the .meta.json', () => {
    const home = tempDir();
    const { sessionsDir, dbPath } = hand(home);
    const h = discoverHome({ home, env });
    const inv = buildInventory(h);
    const plan = planPrune({
      sessions: inv.sessions,
      orphanConversations: [],
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY },
      now: NOW.getTime(),
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    const db = openSeahorseWrite(dbPath);
    const seen: string[] = [];
    const count = (key: string) =>
      (db.prepare(`SELECT COUNT(*) AS n FROM conversations WHERE session_key = ?`).get(key) as { n: number }).n;
    applyPlan({
      plan,
      db,
      dbPath,
      online: false,
      forceVacuum: false,
      freeSpace: () => ({ availableBytes: 1e12, totalBytes: 1e12, availableInodes: null, totalInodes: null }),
      archiveDir: null,
      nowMs: NOW.getTime(),
      onStep: (step, s) => {
        if (s.key !== 'sk_v1_old') return;
        const jsonl = existsSync(join(sessionsDir, 'sk_v1_old.jsonl'));
        const meta = existsSync(join(sessionsDir, 'sk_v1_old.meta.json'));
        seen.push(`${step}: rows=${count('sk_v1_old')} jsonl=${jsonl} meta=${meta}`);
      },
    });
    db.close();
    expect(seen).toEqual([
      'seahorse: rows=1 jsonl=true meta=true',
      'jsonl: rows=0 jsonl=true meta=true',
      'meta: rows=0 jsonl=false meta=true',
    ]);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.meta.json'))).toBe(false);
  });

  it('keeps a victim that received a message after the plan was made (files or seahorse rows)', () => {
    const home = tempDir();
    const { sessionsDir, dbPath } = hand(home);
    const inv = buildInventory(discoverHome({ home, env }));
    const plan = planPrune({
      sessions: inv.sessions,
      orphanConversations: [],
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY },
      now: NOW.getTime(),
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    // A new line arrives in one victim's .jsonl, and a new seahorse message in the other's conversation.
    appendFileSync(
      join(sessionsDir, 'sk_v1_old.jsonl'),
      '{"role":"user","content":"still here","created_at":"2026-11-30T11:59:00Z"}\n',
    );
    const db = openSeahorseWrite(dbPath);
    const conv = (
      db.prepare(`SELECT conversation_id AS id FROM conversations WHERE session_key LIKE 'agent:cron-%'`).get() as {
        id: number;
      }
    ).id;
    db.prepare(
      `INSERT INTO messages (conversation_id, role, content, created_at) VALUES ` +
        `(?, 'user', 'new', '2026-11-30 11:59:00')`,
    ).run(conv);
    const res = applyPlan({
      plan,
      db,
      dbPath,
      online: true,
      forceVacuum: false,
      freeSpace: () => ({ availableBytes: 1e12, totalBytes: 1e12, availableInodes: null, totalInodes: null }),
      archiveDir: null,
      nowMs: NOW.getTime(),
    });
    db.close();
    const outcomes = [...res.groups.entries()].filter(([, o]) => o.reason === 'changed_since_plan');
    expect(outcomes).toHaveLength(2);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    expect(readdirSync(sessionsDir).filter((n) => n.startsWith('agent_cron'))).toHaveLength(2);
    expect(res.deletedSessions).toBe(0);
  });

  it('a dry-run writes nothing anywhere: every file byte-identical, no new file (WAL present or not)', () => {
    for (const withWal of [false, true]) {
      const root = tempDir();
      const home = join(root, '.picoclaw');
      const sample = buildSampleHome({ dir: home, seed: 5, sessions: 50 });
      let holder: ReturnType<ReturnType<typeof sqlite>> | null = null;
      if (withWal) {
        // A live writer keeps -wal and -shm in place, as a running gateway does.
        holder = new (sqlite())(sample.seahorsePath!);
        holder.exec(`INSERT INTO conversations (session_key) VALUES ('live')`);
      }
      const before = snapshot(home, (p) => p.endsWith('-shm'));
      const r = runCli(['prune', '--home', home, '--json', '--max-age-days', '10'], { PICOGUARD_NO_SYSTEM_STATE: '1' });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).totals.delete).toBeGreaterThan(0);
      expect(snapshot(home, (p) => p.endsWith('-shm'))).toEqual(before);
      holder?.close();
    }
  });

  it('one pass at a time: a second pass exits 4 while the lock is held, and runs once it is free', async () => {
    const home = tempDir();
    hand(home);
    const held = tryLock(join(home, '.picoclaw-guard.lock'), 'test');
    expect(held.ok).toBe(true);
    const r = runCli(['prune', '--apply', '--home', home, '--state-dir', join(home, '..', 'state')]);
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('another prune pass holds the lock');
    expect(existsSync(join(home, 'workspace', 'sessions', 'sk_v1_old.jsonl'))).toBe(true);
    if (held.ok) held.lock.release();
    const r2 = runCli(['prune', '--apply', '--home', home, '--state-dir', tempDir()]);
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
  });

  it('online (gateway ready): short transactions, VACUUM deferred and said so', async () => {
    const home = tempDir();
    hand(home);
    const r = await pass(home, true, { probe: ready });
    expect(r.exit_code).toBe(0);
    expect(r.database.vacuum?.ran).toBe(false);
    expect(r.database.vacuum?.reason).toMatch(/deferred/);
    // Far below the gateway's busy_timeout (5000 ms); generous for a loaded machine (the figures are in BENCHMARKS.md).
    expect(r.database.longest_write_ms).toBeLessThan(2500);
  });

  it('skips the pass with exit 5 while the gateway is starting, and deletes nothing', async () => {
    const home = tempDir();
    const { sessionsDir } = hand(home);
    const before = snapshot(home);
    const r = await pass(home, true, {
      probe: async () => ({ ...(await down()), state: 'starting', reason: 'bootstrap' }),
    });
    expect(r.exit_code).toBe(5);
    expect(r.skipped).toMatch(/starting/);
    expect(snapshot(home)).toEqual(before);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
  });

  it('with the clock in 1970, skips the age check and says so', async () => {
    const home = tempDir();
    hand(home);
    const r = await pass(home, true, { clock: fixedClock('1970-01-01T00:01:00Z') });
    expect(r.age_check).toBe('skipped_clock');
    expect(r.totals.deleted_sessions).toBe(0);
    expect(r.warnings.join(' ')).toMatch(/before 2024/);
  });

  it('orphan conversations go by age, and are listed', async () => {
    const home = tempDir();
    const { dbPath } = hand(home);
    const db = new (sqlite())(dbPath);
    addConversation(db, 'agent:cron-gone-old', ['2026-01-01 00:00:00']);
    addConversation(db, 'agent:cron-gone-new', ['2026-11-29 00:00:00']);
    db.close();
    const r = await pass(home, true);
    expect(r.orphans.map((o) => `${o.key}:${o.action}`).sort()).toEqual([
      'agent:cron-gone-new:keep',
      'agent:cron-gone-old:delete',
    ]);
    const after = dumpSeahorse(dbPath);
    expect((after.conversations as { session_key: string }[]).map((c) => c.session_key)).not.toContain(
      'agent:cron-gone-old',
    );
    expect(integrity(dbPath).ftsMessagesMatch).toBe(true);
  });

  it('archives before deleting, and restore puts the session back without overwriting', async () => {
    const home = tempDir();
    const { sessionsDir } = hand(home);
    const archive = join(tempDir(), 'archive');
    const original = readFileSync(join(sessionsDir, 'sk_v1_old.jsonl'));
    const originalMeta = readFileSync(join(sessionsDir, 'sk_v1_old.meta.json'));
    const r = await pass(home, true, { flags: { archive_dir: archive } });
    expect(r.exit_code).toBe(0);
    const victim = r.sessions.find((s) => s.key === 'sk_v1_old')!;
    expect(victim.action).toBe('delete');
    expect(victim.archive).toMatch(/\.tar\.gz$/);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(false);

    const list = runCli(['restore', archive, '--home', home, '--list', '--json']);
    expect(
      JSON.parse(list.stdout)
        .entries.map((e: { key: string }) => e.key)
        .sort(),
    ).toEqual(['agent:cron-0123456789abcdef-11111111-2222-4333-8444-555555555555', 'sk_v1_old']);
    const state = tempDir();
    const res = runCli(['restore', archive, '--home', home, '--key', 'sk_v1_old', '--state-dir', state]);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toEqual(original);
    expect(readFileSync(join(sessionsDir, 'sk_v1_old.meta.json'))).toEqual(originalMeta);
    expect(readdirSync(sessionsDir).filter((n) => n.startsWith('.tmp'))).toEqual([]);
    // A second restore refuses to overwrite.
    writeFileSync(join(sessionsDir, 'sk_v1_old.jsonl'), 'changed\n');
    const again = runCli(['restore', archive, '--home', home, '--key', 'sk_v1_old', '--state-dir', state]);
    expect(again.code).toBe(7);
    expect(again.stdout).toMatch(/already exists/);
    expect(readFileSync(join(sessionsDir, 'sk_v1_old.jsonl'), 'utf8')).toBe('changed\n');
  });

  it('deletes nothing when the archive folder cannot be written, and says so once', async () => {
    const home = tempDir();
    const { sessionsDir } = hand(home);
    const notADir = join(tempDir(), 'file');
    writeFileSync(notADir, 'x');
    const r = await pass(home, true, { flags: { archive_dir: join(notADir, 'sub') } });
    expect(r.exit_code).toBe(6);
    expect(r.skipped).toMatch(
      /archive folder .*sub cannot be created or written \(ENOTDIR\); nothing was deleted anywhere/,
    );
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    expect(dumpSeahorse(join(sessionsDir, 'seahorse.db')).conversations).toHaveLength(5);
  });
});
