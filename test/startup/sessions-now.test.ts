import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { agentTotals } from '../../src/commands/sessions.js';
import { sessionsNow } from '../../src/startup/sessions-now.js';
import { readSmallFile } from '../../src/io/smallfile.js';
import { sqlite } from '../../src/io/sqlite.js';
import { addConversation, handHome, writeSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/** What `startup` showed before it had its own listing: the inventory's per-agent totals. */
function fromInventory(homeDir: string) {
  const home = discoverHome({ home: homeDir, env: {} });
  const inv = buildInventory(home);
  const totals = agentTotals(inv);
  const def = totals.find((t) => t.agent === home.defaultAgent) ?? totals[0]!;
  return {
    sessions: inv.sessions.length,
    agents: totals.length,
    bytes: totals.reduce((a, t) => a + t.jsonl_bytes + t.meta_bytes, 0),
    bootstrapped: { agent: def.agent, sessions: def.sessions, bytes: def.jsonl_bytes + def.meta_bytes },
    seahorse_bytes: inv.seahorse.state === 'open' ? inv.seahorse.bytes.total : null,
  };
}

function counting() {
  const read: string[] = [];
  return {
    read,
    readMeta: (p: string) => {
      read.push(p);
      return readSmallFile(p, 'meta', { noFollow: true });
    },
  };
}

const T = '2026-05-01T10:00:00Z';

/**
 * A home with everything the inventory treats specially: a folder two agents share (metas
 * scoped to either, to an unknown agent, corrupt, empty), a meta without its .jsonl, a .jsonl
 * that is a symlink, a folder or a FIFO, an orphan .jsonl, temp and legacy files, a meta that is
 * a symlink or a folder, and an agent whose folder does not exist.
 */
function awkwardHome(): { home: string; shared: string; ops: string } {
  const home = join(tempDir('pcg-sessions-now-'), '.picoclaw');
  const config = {
    agents: {
      defaults: { context_manager: 'seahorse' },
      list: [
        { id: 'main' },
        { id: 'helper', workspace: join(home, 'workspace') },
        { id: 'ops' },
        { id: 'ghost', workspace: join(home, 'nowhere') },
      ],
    },
  };
  const { sessionsDir: shared } = handHome(home, [{ key: 'sk_v1_a', updated: T }], { config });
  const ops = join(home, 'workspace-ops', 'sessions');
  writeSession(ops, { key: 'sk_v1_ops1', updated: T, lines: 7 });
  writeSession(ops, { key: 'agent:cron-x-1', updated: T });
  const scoped = (name: string, agent: string | null, body?: string) =>
    writeFileSync(
      join(shared, `${name}.meta.json`),
      body ?? JSON.stringify({ key: name, count: 1, scope: agent === null ? undefined : { agent_id: agent } }),
    );
  scoped('sk_v1_helper', 'helper');
  writeFileSync(join(shared, 'sk_v1_helper.jsonl'), '{"role":"user"}\n'.repeat(40));
  scoped('sk_v1_stranger', 'nobody');
  scoped('sk_v1_corrupt', 'helper', '{"key": "sk_v1_corrupt", "scope": {"agent_id": "helper"');
  scoped('sk_v1_empty', null, '');
  scoped('sk_v1_jsonl_link', 'helper');
  symlinkSync(join(shared, 'sk_v1_helper.jsonl'), join(shared, 'sk_v1_jsonl_link.jsonl'));
  scoped('sk_v1_jsonl_dir', 'helper');
  mkdirSync(join(shared, 'sk_v1_jsonl_dir.jsonl'));
  scoped('sk_v1_jsonl_fifo', 'main');
  mkfifoSync(join(shared, 'sk_v1_jsonl_fifo.jsonl'));
  writeFileSync(join(shared, 'sk_v1_orphan.jsonl'), 'x\n'.repeat(500));
  writeFileSync(join(shared, '.tmp-123.meta.json'), '{"key":"t"}');
  writeFileSync(join(shared, 'old.json'), '{}');
  symlinkSync(join(ops, 'sk_v1_ops1.meta.json'), join(shared, 'sk_v1_meta_link.meta.json'));
  mkdirSync(join(shared, 'sk_v1_meta_dir.meta.json'));
  return { home, shared, ops };
}

function mkfifoSync(path: string): void {
  execFileSync('mkfifo', [path]);
}

describe('sessionsNow: the inventory per-agent totals, without the inventory', () => {
  it('gives the same figures as the inventory on a home with every awkward entry', () => {
    const { home } = awkwardHome();
    const now = sessionsNow(discoverHome({ home, env: {} }));
    expect(now).toEqual(fromInventory(home));
    // Not trivially equal: the shared folder's sessions are split between its two agents.
    expect(now.agents).toBe(4);
    expect(now.sessions).toBe(10);
    expect(now.bootstrapped.agent).toBe('main');
    expect(now.bootstrapped.sessions).toBeGreaterThan(0);
    expect(now.bootstrapped.sessions).toBeLessThan(now.sessions - 2);
    expect(now.seahorse_bytes).toBeGreaterThan(0);
  });

  it('opens a meta only in a folder several agents share', () => {
    const { home, shared, ops } = awkwardHome();
    const c = counting();
    sessionsNow(discoverHome({ home, env: {} }), { readMeta: c.readMeta });
    expect(c.read.length).toBeGreaterThan(0);
    expect(c.read.every((p) => p.startsWith(shared + '/'))).toBe(true);
    expect(c.read.some((p) => p.startsWith(ops))).toBe(false);

    // One agent per folder: no meta is read at all.
    const single = join(tempDir('pcg-sessions-now-'), '.picoclaw');
    handHome(single, [
      { key: 'sk_v1_one', updated: T },
      { key: 'sk_v1_two', updated: null, created: null, lastLine: null },
    ]);
    const d = counting();
    const r = sessionsNow(discoverHome({ home: single, env: {} }), { readMeta: d.readMeta });
    expect(d.read).toEqual([]);
    expect(r).toEqual(fromInventory(single));
    expect(r.sessions).toBe(2);
  });

  it('reports seahorse.db only when it opens as one, as the inventory does', () => {
    const { home, shared } = awkwardHome();
    const db = new (sqlite())(join(shared, 'seahorse.db'));
    addConversation(db, 'sk_v1_a', ['2026-05-01 10:00:00']);
    db.close();
    expect(sessionsNow(discoverHome({ home, env: {} }))).toEqual(fromInventory(home));

    rmSync(join(shared, 'seahorse.db'));
    rmSync(join(shared, 'seahorse.db-wal'), { force: true });
    rmSync(join(shared, 'seahorse.db-shm'), { force: true });
    expect(sessionsNow(discoverHome({ home, env: {} })).seahorse_bytes).toBeNull();
    expect(fromInventory(home).seahorse_bytes).toBeNull();

    writeFileSync(join(shared, 'seahorse.db'), 'not a database, just text '.repeat(200));
    const broken = sessionsNow(discoverHome({ home, env: {} }));
    expect(broken.seahorse_bytes).toBeNull();
    expect(broken).toEqual(fromInventory(home));
  });
});
