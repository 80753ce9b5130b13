import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import { applyPlan } from '../../src/prune/apply/apply.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { planPrune } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { inspectArchive } from '../../src/archive/read.js';
import { NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { addConversation, collidingAgents, dumpSeahorse, handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway } from '../support/gateway-state.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const down = downGateway;
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const free = () => ({ availableBytes: 1e12, totalBytes: 1e12, availableInodes: null, totalInodes: null });

function pass(home: string, apply: boolean, extra: Partial<Parameters<typeof runPrunePass>[0]> = {}) {
  // Archive mechanics, not the clock: the sessions here are old and silent, a shape the age check doubts.
  return runPrunePass({
    home,
    env,
    apply,
    clock: fixedClock(NOW),
    trustClock: true,
    stateDir: null,
    probe: down,
    ...extra,
  });
}

const old = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  updated: '2026-08-01T10:00:00Z',
  seahorse: ['2026-08-01 07:00:00', '2026-08-01 08:00:00'],
  ...extra,
});
const recent = { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] };
const archivesIn = (dir: string) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => n.endsWith('.tar.gz'))
        .sort()
    : [];

describe('prune --archive', () => {
  it(
    'gives every archive its own name: agents whose agent_base collide, and ' +
      'two homes in one folder in the same second',
    async () => {
      const archive = join(tempDir(), 'archive');
      // Agent "ops" with base "agent_cron-1" and agent "ops_agent" with base "cron-1" both spell ops_agent_cron-1.
      const home = tempDir();
      const { opsDir, opsAgentDir, config } = collidingAgents(home);
      handHome(
        home,
        [recent, { ...old('agent:cron-1'), agentDir: opsDir }, { ...old('cron-1'), agentDir: opsAgentDir }],
        { config },
      );
      const inv = buildInventory(discoverHome({ home, env }));
      expect(inv.sessions.map((s) => `${s.agent}_${s.base}`).filter((n) => n.startsWith('ops'))).toEqual(
        expect.arrayContaining(['ops_agent_cron-1']),
      );
      const homeB = tempDir();
      handHome(homeB, [recent, old('agent:cron-1')]);
      const a = await pass(home, true, { flags: { archive_dir: archive } });
      const b = await pass(homeB, true, { flags: { archive_dir: archive } });
      expect(a.exit_code).toBe(0);
      expect(b.exit_code).toBe(0);
      const deleted = a.totals.deleted_sessions + b.totals.deleted_sessions;
      expect(deleted).toBe(3);
      expect(archivesIn(archive)).toHaveLength(3);

      // Each home restores only what was taken from it.
      const state = tempDir();
      const rb = runCli(['restore', archive, '--home', homeB, '--state-dir', state, '--json']);
      expect(rb.code, rb.stderr).toBe(0);
      const out = JSON.parse(rb.stdout) as { entries: { action: string; key: string }[]; other_homes: number };
      expect(out.entries.map((e) => `${e.action}:${e.key}`)).toEqual(['restored:agent:cron-1']);
      expect(out.other_homes).toBe(2);
      expect(readdirSync(join(homeB, 'workspace', 'sessions'))).toContain('agent_cron-1.meta.json');
      const ra = runCli(['restore', archive, '--home', home, '--state-dir', state, '--json']);
      expect(ra.code, ra.stderr).toBe(0);
      expect(readdirSync(opsDir)).toContain('agent_cron-1.jsonl');
      expect(readdirSync(opsAgentDir)).toContain('cron-1.jsonl');
    },
  );

  it("keeps a session's aliases in its archive, read from the meta it archives (the pass let them go)", async () => {
    const archive = join(tempDir(), 'archive');
    const home = tempDir();
    const aliases = ['agent:main:main', 'agent:main:direct:42', 'agent:main:telegram:direct:42'];
    handHome(home, [recent, old('sk_v1_scoped', { aliases })]);
    const r = await pass(home, true, { flags: { archive_dir: archive } });
    expect(r.exit_code).toBe(0);
    expect(r.totals.deleted_sessions).toBe(1);
    const [name] = archivesIn(archive);
    const info = await inspectArchive(join(archive, name!));
    expect(info.key).toBe('sk_v1_scoped');
    expect(info.aliases).toEqual(aliases);
  });

  it('archives orphan seahorse conversations before deleting them', async () => {
    const home = tempDir();
    const { dbPath } = handHome(home, [recent]);
    const db = openSeahorseWrite(dbPath, 5000);
    addConversation(db, 'agent:cron-gone-old', ['2026-08-01 00:00:00', '2026-08-01 00:00:01']);
    db.close();
    const archive = join(tempDir(), 'archive');
    const r = await pass(home, true, { flags: { archive_dir: archive } });
    expect(r.exit_code).toBe(0);
    expect(r.orphans).toMatchObject([{ key: 'agent:cron-gone-old', action: 'delete' }]);
    const names = archivesIn(archive);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/_conversation-\d+\.tar\.gz$/);
    // An operator can read it with tar; the rows are there as JSON lines.
    const t = spawnSync('tar', ['-xzOf', join(archive, names[0]!), 'seahorse/rows.jsonl'], { encoding: 'utf8' });
    expect(t.status, t.stderr).toBe(0);
    const rows = t.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { table: string });
    expect(rows.filter((x) => x.table === 'messages')).toHaveLength(2);
    const list = runCli(['restore', archive, '--list', '--json'], { HOME: '/nowhere' });
    expect(JSON.parse(list.stdout).entries[0]).toMatchObject({ key: 'agent:cron-gone-old', action: 'listed' });
  });

  it('deletes nothing, orphans included, when the archive folder is not usable: one message, exit 6', async () => {
    const home = tempDir();
    const { dbPath, sessionsDir } = handHome(home, [recent, old('sk_v1_old')]);
    const db = openSeahorseWrite(dbPath, 5000);
    addConversation(db, 'agent:cron-gone-old', ['2026-08-01 00:00:00']);
    db.close();
    const before = dumpSeahorse(dbPath);
    const notADir = join(tempDir(), 'file');
    writeFileSync(notADir, 'x');
    const r = await pass(home, true, { flags: { archive_dir: notADir } });
    expect(r.exit_code).toBe(6);
    expect(r.skipped).toMatch(/is not a folder; nothing was deleted anywhere/);
    expect(dumpSeahorse(dbPath)).toEqual(before);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    // Not enough room for the planned sessions: the same, before anything is deleted.
    const full = await pass(home, true, {
      flags: { archive_dir: join(tempDir(), 'a') },
      freeSpace: () => ({ ...free(), availableBytes: 1000 }),
    });
    expect(full.exit_code).toBe(6);
    expect(full.skipped).toMatch(/has 0\.0 MiB free; the planned sessions need up to/);
    expect(dumpSeahorse(dbPath)).toEqual(before);
    // The dry-run says it first.
    const dry = await pass(home, false, { flags: { archive_dir: notADir } });
    expect(dry.warnings.join('\n')).toMatch(/is not a folder: --apply would skip the pass/);
  });

  it('refuses an archive folder inside a sessions folder (exit 2), and an empty or blank archive_dir', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [recent, old('sk_v1_old')]);
    const r = runCli(['prune', '--apply', '--home', home, '--archive', join(sessionsDir, 'archive')]);
    expect(r.code, r.stdout).toBe(2);
    expect(r.stderr).toMatch(/archive folder .* is inside the sessions folder/);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    expect(existsSync(join(sessionsDir, 'archive'))).toBe(false);
    for (const v of [' ', '']) {
      const e = runCli(['prune', '--home', home], { PICOCLAW_SESSION_PRUNE_ARCHIVE_DIR: v });
      expect(e.code, `${JSON.stringify(v)}: ${e.stdout}`).toBe(2);
      expect(e.stderr).toMatch(/PICOCLAW_SESSION_PRUNE_ARCHIVE_DIR: archive_dir is empty/);
    }
    expect(existsSync(join(process.cwd(), ' '))).toBe(false);
    const trimmed = join(tempDir(), 'arch');
    const t = runCli(['prune', '--apply', '--home', home, '--json'], {
      PICOCLAW_SESSION_PRUNE_ARCHIVE_DIR: ` ${trimmed} `,
    });
    expect(t.code, t.stderr).toBe(0);
    expect(archivesIn(trimmed)).toHaveLength(1);
  });

  it('removes the archive of a session kept whole after archiving; its later deletion leaves one archive', async () => {
    const home = tempDir();
    const { dbPath } = handHome(home, [recent, old('sk_v1_old')]);
    const archive = join(tempDir(), 'archive');
    const h = discoverHome({ home, env });
    const inv = buildInventory(h);
    const plan = planPrune({
      sessions: inv.sessions,
      orphanConversations: inv.orphanConversations,
      agentIds: h.agents.map((a) => a.id),
      policy: { ...DEFAULT_POLICY, max_db_size_mb: 0 },
      now: NOW.getTime(),
      db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
    });
    const db = openSeahorseWrite(dbPath, 5000);
    let archivesSeen: string[] = [];
    const res = applyPlan({
      plan,
      db,
      dbPath,
      online: false,
      forceVacuum: false,
      freeSpace: free,
      archiveDir: archive,
      archiveHome: home,
      nowMs: NOW.getTime(),
      onStep: (step, s) => {
        if (step !== 'seahorse' || s.key !== 'sk_v1_old') return;
        archivesSeen = archivesIn(archive);
        // A message arrives between the archive and the first delete: the session is kept whole.
        const conv = db
          .prepare(`SELECT conversation_id AS id FROM conversations WHERE session_key = 'sk_v1_old'`)
          .get() as { id: number };
        db.prepare(
          `INSERT INTO messages (conversation_id, role, content, token_count, created_at,` +
            ` model_name) VALUES (?, 'user', 'late', 1, '2026-11-30 11:59:00', 'm')`,
        ).run(conv.id);
      },
    });
    db.close();
    const g = plan.groups.find((x) => x.key === 'sk_v1_old')!;
    expect(res.groups.get(g.id)).toMatchObject({ action: 'keep', reason: 'changed_since_plan' });
    expect(archivesSeen).toHaveLength(1);
    expect(archivesIn(archive)).toEqual([]);
  });

  it('an archive that fails mid-pass keeps that session and stops the pass with one reason for the rest', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [
      recent,
      old('sk_v1_a', { updated: '2026-08-01T10:00:00Z' }),
      old('sk_v1_b', { updated: '2026-08-02T10:00:00Z' }),
      old('sk_v1_c', { updated: '2026-08-03T10:00:00Z' }),
    ]);
    const archive = join(tempDir(), 'archive');
    const r = await pass(home, true, {
      flags: { archive_dir: archive },
      // After the first deletion the folder is replaced by a file (a disk that went away, say).
      onProgress: (done) => {
        if (done !== 1) return;
        renameSync(archive, `${archive}.gone`);
        writeFileSync(archive, 'x');
      },
    });
    expect(r.exit_code).toBe(7);
    const by = (k: string) => r.sessions.find((s) => s.key === k)!;
    expect(by('sk_v1_a').action).toBe('delete');
    expect(by('sk_v1_b')).toMatchObject({ action: 'keep', reason: 'archive_failed' });
    expect(by('sk_v1_c')).toMatchObject({
      action: 'keep',
      reason: 'interrupted',
      detail: expect.stringMatching(/^not reached: an archive could not be written/),
    });
    expect(existsSync(join(sessionsDir, 'sk_v1_b.jsonl'))).toBe(true);
    expect(existsSync(join(sessionsDir, 'sk_v1_c.jsonl'))).toBe(true);
    expect(readdirSync(`${archive}.gone`)).toHaveLength(1);
  });
});

describe('restore holds', () => {
  it(
    'the planner keeps a held session whatever the policy (holds are an input: ' +
      'the planner stays pure), and it still counts',
    () => {
      const home = tempDir();
      handHome(home, [recent, old('sk_v1_old'), old('sk_v1_other', { updated: '2026-08-02T10:00:00Z' })]);
      const h = discoverHome({ home, env });
      const inv = buildInventory(h);
      const input = {
        sessions: inv.sessions,
        orphanConversations: [],
        agentIds: ['main'],
        policy: { ...DEFAULT_POLICY, max_age_days: 30, max_sessions: 2, max_db_size_mb: 0 },
        now: NOW.getTime(),
        db: { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null },
      };
      const hold = {
        agent: 'main',
        key: 'sk_v1_old',
        restored_at: '2026-11-30T10:00:00Z',
        until: '2026-12-07T10:00:00Z',
      };
      const plan = planPrune({ ...input, holds: [hold] });
      const by = (k: string) => plan.groups.find((g) => g.key === k)!;
      expect(by('sk_v1_old')).toMatchObject({ action: 'keep', reason: 'restored_hold', hold });
      expect(by('sk_v1_other')).toMatchObject({ action: 'delete', reason: 'max_age_days' });
      // Without the hold, the same input deletes it: the hold is the only difference.
      expect(planPrune(input).groups.find((g) => g.key === 'sk_v1_old')).toMatchObject({ action: 'delete' });
      // It counts toward max_sessions like any kept session: 3 sessions, at most 2, the unheld old one goes.
      const count = planPrune({ ...input, policy: { ...input.policy, max_age_days: 0 }, holds: [hold] });
      expect(count.groups.filter((g) => g.action === 'delete').map((g) => `${g.key}:${g.reason}`)).toEqual([
        'sk_v1_other:max_sessions',
      ]);
      // A hold of another agent does not match.
      expect(
        planPrune({ ...input, holds: [{ ...hold, agent: 'ops' }] }).groups.find((g) => g.key === 'sk_v1_old')!.action,
      ).toBe('delete');
    },
  );
  it('keeps a restored session out of the next passes until the hold ends or is released', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [recent, old('sk_v1_old')]);
    const archive = join(tempDir(), 'archive');
    const state = tempDir();
    expect((await pass(home, true, { flags: { archive_dir: archive } })).totals.deleted_sessions).toBe(1);
    const r = runCli(['restore', archive, '--home', home, '--state-dir', state]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Held from pruning until \d{4}-\d\d-\d\d \d\d:\d\dZ/);
    // The next pass (dry-run and apply) keeps it, and says why.
    const dry = runCli(['prune', '--home', home, '--state-dir', state, '--json']);
    const s = (
      JSON.parse(dry.stdout) as { sessions: { key: string; action: string; reason: string; detail: string }[] }
    ).sessions.find((x) => x.key === 'sk_v1_old')!;
    expect(s).toMatchObject({ action: 'keep', reason: 'restored_hold' });
    expect(s.detail).toMatch(/^restored on \d{4}-\d\d-\d\d, held until \d{4}-\d\d-\d\d \d\d:\d\dZ$/);
    const text = runCli(['prune', '--home', home, '--state-dir', state]);
    expect(text.stdout).toMatch(/kept sk_v1_old: restored on .*, held until/);
    const applied = runCli(['prune', '--apply', '--home', home, '--state-dir', state, '--json']);
    expect(JSON.parse(applied.stdout).totals.deleted_sessions).toBe(0);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
    const sessions = runCli(['sessions', '--home', home], { STATE_DIRECTORY: state });
    expect(sessions.stdout).toMatch(/sk_v1_old\s+keep: restored on .*, held until/);
    // Released: the policy applies again (by a unique prefix of the key).
    const rel = runCli(['restore', '--release', 'sk_v1_o', '--home', home, '--state-dir', state]);
    expect(rel.code, rel.stderr).toBe(0);
    expect(rel.stdout).toMatch(/released main sk_v1_old/);
    const after = runCli(['prune', '--apply', '--home', home, '--state-dir', state, '--json']);
    expect(JSON.parse(after.stdout).totals.deleted_sessions).toBe(1);
  });

  it('a holds file that cannot be read deletes nothing: it may hide a hold (the dry-run warns)', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, [recent, old('sk_v1_old')]);
    const archive = join(tempDir(), 'archive');
    const state = tempDir();
    await pass(home, true, { flags: { archive_dir: archive } });
    expect(runCli(['restore', archive, '--home', home, '--state-dir', state]).code).toBe(0);
    writeFileSync(join(state, 'restore-holds.json'), '{"holds": [ {"home": ');
    const dry = runCli(['prune', '--home', home, '--state-dir', state, '--wide']);
    expect(dry.stdout).toMatch(/restore-holds\.json cannot be read .*--apply would skip the pass/s);
    const applied = runCli(['prune', '--apply', '--home', home, '--state-dir', state, '--json']);
    expect(applied.code).toBe(6);
    expect(JSON.parse(applied.stdout).skipped).toMatch(/restore-holds\.json cannot be read.*nothing was deleted/);
    expect(existsSync(join(sessionsDir, 'sk_v1_old.jsonl'))).toBe(true);
  });

  it('a hold expires; --hold-days 0 sets none', async () => {
    const home = tempDir();
    handHome(home, [recent, old('sk_v1_old')]);
    const archive = join(tempDir(), 'archive');
    const state = tempDir();
    await pass(home, true, { flags: { archive_dir: archive } });
    expect(runCli(['restore', archive, '--home', home, '--state-dir', state, '--hold-days', '0']).code).toBe(0);
    expect(existsSync(join(state, 'restore-holds.json'))).toBe(false);
    const held = runCli(['prune', '--home', home, '--state-dir', state, '--json']);
    expect(JSON.parse(held.stdout).sessions.find((x: { key: string }) => x.key === 'sk_v1_old').action).toBe('delete');
    // An expired hold is ignored by the planner.
    const real = (await import('node:fs')).realpathSync(home);
    writeFileSync(
      join(state, 'restore-holds.json'),
      JSON.stringify({
        holds: [
          {
            home: real,
            agent: 'main',
            key: 'sk_v1_old',
            restored_at: '2026-11-01T00:00:00Z',
            until: '2026-11-08T00:00:00Z',
          },
        ],
      }),
    );
    const exp = await pass(home, false, { stateDir: state, clock: fixedClock(NOW) });
    expect(exp.sessions.find((x) => x.key === 'sk_v1_old')!.action).toBe('delete');
    appendFileSync(join(state, 'restore-holds.json'), '');
  });
});
