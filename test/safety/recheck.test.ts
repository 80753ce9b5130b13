import { appendFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { describe, expect, it } from 'vitest';
import { sqlite, type Database } from '../../src/io/sqlite.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import { applyPlan, type ApplyOptions } from '../../src/prune/apply/apply.js';
import { planPrune } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { SeahorseDeleter } from '../../src/prune/apply/seahorse-delete.js';
import { addConversation, dumpSeahorse, handHome, integrity, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * A victim is re-checked before every irreversible step, and the check covers the whole
 * group: a change anywhere stops the group, and a stop part-way says what is left.
 */
const NOW = Date.parse('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const roomy = () => ({ availableBytes: 1e12, totalBytes: 1e12, availableInodes: null, totalInodes: null });
const OLD = '2026-08-01T10:00:00Z';
const OLD_SQL = '2026-08-01 10:00:00';

function setup(sessions: HandSession[]) {
  const home = tempDir();
  const { sessionsDir, dbPath } = handHome(home, [
    ...sessions,
    { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] },
  ]);
  const inv = buildInventory(discoverHome({ home, env }));
  const plan = planPrune({
    // The victims here are most of the dated sessions: the clock is trusted (the age check would refuse otherwise).
    trustClock: true,
    sessions: inv.sessions,
    orphanConversations: inv.orphanConversations,
    agentIds: ['main'],
    policy: { ...DEFAULT_POLICY },
    now: NOW,
    db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
  });
  return { home, sessionsDir, dbPath, plan };
}

function apply(plan: ApplyOptions['plan'], db: Database, dbPath: string, extra: Partial<ApplyOptions> = {}) {
  return applyPlan({
    plan,
    db,
    dbPath,
    online: false,
    forceVacuum: false,
    freeSpace: roomy,
    archiveDir: null,
    nowMs: NOW,
    ...extra,
  });
}

const newMessage = (db: Database, key: string) => {
  const conv = (
    db.prepare(`SELECT conversation_id AS id FROM conversations WHERE session_key = ?`).get(key) as { id: number }
  ).id;
  return Number(
    db
      .prepare(
        `INSERT INTO messages (conversation_id, role, content, created_at) VALUES ` +
          `(?, 'user', 'arrived mid-pass', '2026-11-30 11:59:00')`,
      )
      .run(conv).lastInsertRowid,
  );
};
const newLine = (path: string) =>
  appendFileSync(path, '{"role":"user","content":"arrived mid-pass","created_at":"2026-11-30T11:59:00Z"}\n');

describe('alias group: every member re-checked before each irreversible step', () => {
  const group: HandSession[] = [
    { key: 'legacy:1', updated: OLD, seahorse: [OLD_SQL, OLD_SQL] },
    { key: 'sk_v1_grp', updated: OLD, aliases: ['legacy:1'], seahorse: [OLD_SQL, OLD_SQL, OLD_SQL] },
  ];

  it('a line appended to one member while the rows are being deleted keeps the whole group, files and rows', () => {
    const { sessionsDir, dbPath, plan } = setup(group);
    const g = plan.groups.find((x) => x.members.length === 2)!;
    expect(g.action).toBe('delete');
    const db = openSeahorseWrite(dbPath);
    const rowsBefore = dumpSeahorse(dbPath);
    let fired = false;
    const res = apply(plan, db, dbPath, {
      onStep: (step) => {
        // The moment the first conversation is about to go: the *other* member gets a line.
        if (step === 'seahorse' && !fired) {
          fired = true;
          newLine(g.members[1]!.files.jsonl!.path);
        }
      },
    });
    db.close();
    const out = res.groups.get(g.id)!;
    expect(out).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    expect(out.partial).toBeUndefined();
    for (const n of ['legacy_1.jsonl', 'legacy_1.meta.json', 'sk_v1_grp.jsonl', 'sk_v1_grp.meta.json'])
      expect(existsSync(join(sessionsDir, n)), n).toBe(true);
    expect(dumpSeahorse(dbPath)).toEqual(rowsBefore);
    expect(res.deletedSessions).toBe(0);
  });

  it('a change after some rows went stops the group and says exactly what was deleted and what is left', () => {
    const { sessionsDir, dbPath, plan } = setup([
      { key: 'legacy:1', updated: OLD, seahorse: [OLD_SQL, OLD_SQL] },
      { key: 'sk_v1_grp', updated: OLD, aliases: ['legacy:1', 'legacy:2'], seahorse: [OLD_SQL, OLD_SQL, OLD_SQL] },
      { key: 'legacy:2', updated: OLD },
    ]);
    const g = plan.groups.find((x) => x.members.length === 3)!;
    expect(g.ownConversations.length).toBe(2);
    const db = openSeahorseWrite(dbPath);
    let calls = 0;
    const res = apply(plan, db, dbPath, {
      onStep: (step) => {
        if (step === 'seahorse' && ++calls === 2) newLine(join(sessionsDir, 'legacy_2.jsonl'));
      },
    });
    db.close();
    const out = res.groups.get(g.id)!;
    expect(out).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    const first = g.ownConversations[0]!;
    const second = g.ownConversations[1]!;
    expect(out.partial).toBe(`seahorse ${first.key} (${first.messages} messages)`);
    const files = g.members.flatMap((m) => [`${m.base}.jsonl`, `${m.base}.meta.json`]);
    expect(out.detail).toContain(`left: ${files.join(', ')}, seahorse ${second.key} (${second.messages} messages)`);
    const keys = (dumpSeahorse(dbPath).conversations as { session_key: string }[]).map((c) => c.session_key);
    expect(keys).toContain(second.key);
    expect(keys).not.toContain(first.key);
    expect(readdirSync(sessionsDir).filter((n) => /legacy|grp/.test(n))).toHaveLength(6);
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  });

  it(
    'a change while the files are being unlinked stops before the next file,' +
      ' never after the group is half gone unreported',
    () => {
      const { sessionsDir, dbPath, plan } = setup(group);
      const g = plan.groups.find((x) => x.members.length === 2)!;
      const db = openSeahorseWrite(dbPath);
      const res = apply(plan, db, dbPath, {
        onStep: (step, m) => {
          if (step === 'meta' && m === g.members[0]) newLine(g.members[1]!.files.jsonl!.path);
        },
      });
      db.close();
      const out = res.groups.get(g.id)!;
      expect(out).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
      const firstBase = g.members[0]!.base;
      const secondBase = g.members[1]!.base;
      expect(out.partial).toContain(`${firstBase}.jsonl`);
      expect(out.detail).toContain(`left: ${firstBase}.meta.json, ${secondBase}.jsonl, ${secondBase}.meta.json`);
      expect(existsSync(join(sessionsDir, `${firstBase}.meta.json`))).toBe(true);
      expect(existsSync(join(sessionsDir, `${secondBase}.jsonl`))).toBe(true);
      expect(res.deletedSessions).toBe(0);
    },
  );
});

describe('a conversation larger than one transaction is re-checked in every transaction', () => {
  function bigConversation(n: number) {
    const s = setup([{ key: 'sk_v1_big', updated: OLD }]);
    const db = new (sqlite())(s.dbPath);
    db.transaction(() => addConversation(db, 'sk_v1_big', Array(n).fill(OLD_SQL)))();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    // Plan again: the conversation is now part of the inventory.
    const inv = buildInventory(discoverHome({ home: s.home, env }));
    const plan = planPrune({
      // The victims here are most of the dated sessions: the clock is trusted (the age check would refuse otherwise).
      trustClock: true,
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY },
      now: NOW,
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    return { ...s, plan };
  }

  it('SeahorseDeleter: a message written between two chunk transactions is never deleted', () => {
    const { dbPath } = bigConversation(2500);
    const db = openSeahorseWrite(dbPath);
    const conv = (
      db.prepare(`SELECT conversation_id AS id FROM conversations WHERE session_key = 'sk_v1_big'`).get() as {
        id: number;
      }
    ).id;
    const stat = db.prepare(`SELECT COUNT(*) AS n, MAX(message_id) AS last FROM messages WHERE conversation_id = ?`);
    const planned = stat.get(conv) as { n: number; last: number };
    let txns = 0;
    let fresh = 0;
    const deleter = new SeahorseDeleter(db, {
      chunk: 1000,
      targetTxnMs: 1e9,
      onTxn: () => {
        // After the summaries and the first chunk: the gateway stores a new message.
        if (++txns === 2) fresh = newMessage(db, 'sk_v1_big');
      },
    });
    const d = deleter.deleteConversation(conv, (gone) => {
      const now = stat.get(conv) as { n: number; last: number };
      return now.n === planned.n - gone && now.last === planned.last;
    });
    expect(d.complete).toBe(false);
    expect(d.touched).toBe(true);
    expect(d.deletedMessages).toBe(1000);
    expect(db.prepare(`SELECT content FROM messages WHERE message_id = ?`).get(fresh)).toEqual({
      content: 'arrived mid-pass',
    });
    expect((stat.get(conv) as { n: number }).n).toBe(planned.n - 1000 + 1);
    db.close();
    expect(integrity(dbPath)).toEqual({ ok: 'ok', ftsMessagesMatch: true, ftsSummariesMatch: true });
  });

  it('apply: the session is reported kept and partly deleted, its files untouched, the new message still there', () => {
    const { sessionsDir, dbPath, plan } = bigConversation(2500);
    const g = plan.groups.find((x) => x.key === 'sk_v1_big')!;
    expect(g.action).toBe('delete');
    const db = openSeahorseWrite(dbPath);
    let txns = 0;
    let fresh = 0;
    const res = apply(plan, db, dbPath, {
      onTxn: () => {
        if (++txns === 2) {
          fresh = newMessage(db, 'sk_v1_big');
          newLine(join(sessionsDir, 'sk_v1_big.jsonl'));
        }
      },
    });
    const out = res.groups.get(g.id)!;
    expect(out).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    expect(out.partial).toMatch(/^\d+ of 2500 seahorse messages of sk_v1_big/);
    expect(out.detail).toMatch(/stopped part-way/);
    expect(out.detail).toContain('sk_v1_big.jsonl, sk_v1_big.meta.json');
    expect(db.prepare(`SELECT content FROM messages WHERE message_id = ?`).get(fresh)).toEqual({
      content: 'arrived mid-pass',
    });
    expect(res.seahorse!.messages).toBeLessThan(2500);
    db.close();
    expect(existsSync(join(sessionsDir, 'sk_v1_big.jsonl'))).toBe(true);
    expect(existsSync(join(sessionsDir, 'sk_v1_big.meta.json'))).toBe(true);
  });
});

describe('shared conversations get the same guard, and their errors are reported', () => {
  function sharedHome() {
    const s = setup([
      { key: 'sk_v1_a', updated: OLD, aliases: ['agent:main:shared'] },
      { key: 'sk_v1_b', updated: '2026-08-02T10:00:00Z', aliases: ['agent:main:shared'] },
    ]);
    const db = new (sqlite())(s.dbPath);
    addConversation(db, 'agent:main:shared', [OLD_SQL, OLD_SQL]);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const inv = buildInventory(discoverHome({ home: s.home, env }));
    const plan = planPrune({
      // The victims here are most of the dated sessions: the clock is trusted (the age check would refuse otherwise).
      trustClock: true,
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: ['main'],
      policy: { ...DEFAULT_POLICY },
      now: NOW,
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    expect(plan.shared).toHaveLength(1);
    return { ...s, plan };
  }

  it('a message written to a shared conversation after its claimants went keeps it, and says so', () => {
    const { dbPath, plan } = sharedHome();
    const db = openSeahorseWrite(dbPath);
    const last = plan.groups.filter((g) => g.action === 'delete').at(-1)!;
    const res = apply(plan, db, dbPath, {
      onStep: (step, m) => {
        if (step === 'meta' && m === last.members.at(-1)) newMessage(db, 'agent:main:shared');
      },
    });
    db.close();
    const id = plan.shared[0]!.conversation.conversationId;
    expect(res.shared.get(id)).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    expect(
      (dumpSeahorse(dbPath).messages as { conversation_id: number }[]).filter((m) => m.conversation_id === id),
    ).toHaveLength(3);
  });

  it('unchanged, it goes once every claimant is gone and is listed as deleted', () => {
    const { dbPath, plan } = sharedHome();
    const db = openSeahorseWrite(dbPath);
    const res = apply(plan, db, dbPath);
    db.close();
    expect(res.shared.get(plan.shared[0]!.conversation.conversationId)).toMatchObject({ action: 'delete' });
    expect((dumpSeahorse(dbPath).conversations as { session_key: string }[]).map((c) => c.session_key)).not.toContain(
      'agent:main:shared',
    );
  });

  it('a failing delete is reported (delete_failed), not swallowed', () => {
    const { dbPath, plan } = sharedHome();
    const db = openSeahorseWrite(dbPath);
    const id = plan.shared[0]!.conversation.conversationId;
    const last = plan.groups.filter((g) => g.action === 'delete').at(-1)!;
    const res = apply(plan, db, dbPath, {
      onStep: (step, m) => {
        // The shared conversation's rows become undeletable: a trigger refuses it.
        if (step === 'meta' && m === last.members.at(-1))
          db.exec(
            `CREATE TRIGGER refuse BEFORE DELETE ON conversations WHEN old.conversation_id ` +
              `= ${id} BEGIN SELECT RAISE(ABORT, 'refused by test'); END`,
          );
      },
    });
    db.close();
    expect(res.shared.get(id)).toMatchObject({ action: 'keep', reason: 'delete_failed' });
    expect(res.shared.get(id)!.detail).toMatch(/refused by test/);
  });
});
