import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { opaqueKey } from '../../src/picoclaw/seahorse.js';
import { parseGoTime } from '../../src/picoclaw/time.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { sqlite } from '../../src/io/sqlite.js';
import { seahorseSchemaSql } from '../../dev/seahorse-schema.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

const REAL = join(import.meta.dirname, '../fixtures/real-picoclaw-capture/sessions');

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(p, readFileSync(p).toString('base64') + ':' + statSync(p).mtimeMs);
    }
  };
  walk(dir);
  return out;
}

describe('the session inventory', () => {
  it(
    'matches what the sample-home builder made: every session, its agent, its ' + 'last activity and its seahorse rows',
    () => {
      const home = join(tempDir(), '.picoclaw');
      const sample = buildSampleHome({ dir: home, seed: 11, sessions: 80, agents: 3 });
      const inv = buildInventory(discoverHome({ home, env: { HOME: '/nowhere' } }));
      expect(inv.sessions).toHaveLength(sample.sessions.length);
      expect(inv.seahorse.state).toBe('open');
      const byKey = new Map(inv.sessions.map((s) => [`${s.agent}/${s.key}`, s]));
      for (const want of sample.sessions) {
        const got = byKey.get(`${want.agent}/${want.key}`);
        expect(got, want.key).toBeDefined();
        expect(got!.messages).toBe(want.messages);
        expect(got!.lastActivityMs, `${want.kind} ${want.key}`).toBe(want.lastActivityMs);
        if (want.inSeahorse) expect(got!.conversations.map((c) => c.key)).toContain(want.key);
      }
      // Orphan conversations are the builder's, nothing more.
      expect(inv.orphanConversations.map((c) => c.key).sort()).toEqual([...sample.orphanConversationKeys].sort());
      // An opaque session that lists an alias which exists as its own session shares that session's conversation rows
      // only via its own key.
      expect(inv.sessions.filter((s) => s.lastActivityMs === null).length).toBe(
        sample.sessions.filter((s) => s.lastActivityMs === null).length,
      );
    },
  );

  it('reads the real PicoClaw capture: 8 messages, created and last activity exact', () => {
    const home = tempDir();
    const dir = join(home, 'workspace', 'sessions');
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(REAL)) copyFileSync(join(REAL, f), join(dir, f));
    const inv = buildInventory(discoverHome({ home, env: { HOME: '/nowhere' } }));
    expect(inv.sessions).toHaveLength(1);
    const s = inv.sessions[0]!;
    expect(s.agent).toBe('main');
    expect(s.messages).toBe(8);
    expect(s.times.meta_created_at).toBe('2026-05-25T10:11:16.855888+02:00');
    expect(s.lastActivityMs).toBe(parseGoTime('2026-05-25T10:12:10.945017+02:00'));
    expect(new Date(s.lastActivityMs!).toISOString()).toBe('2026-05-25T08:12:10.945Z');
  });

  it('matches seahorse on the key and on aliases, but never on the shared main alias', () => {
    const home = tempDir();
    const dir = join(home, 'workspace', 'sessions');
    mkdirSync(dir, { recursive: true });
    const key = 'sk_v1_' + 'a'.repeat(64);
    writeFileSync(
      join(dir, `${key}.meta.json`),
      JSON.stringify({
        key,
        count: 1,
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-02T00:00:00Z',
        aliases: ['agent:main:main', 'agent:main:telegram:direct:42'],
      }),
    );
    writeFileSync(join(dir, `${key}.jsonl`), '{"role":"user","content":"x","created_at":"2026-01-02T00:00:00Z"}\n');
    const db = new (sqlite())(join(dir, 'seahorse.db'));
    db.exec(seahorseSchemaSql());
    const conv = db.prepare('INSERT INTO conversations (session_key) VALUES (?)');
    const msg = db.prepare(
      `INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'user', 'x', ?)`,
    );
    msg.run(conv.run(key).lastInsertRowid, '2026-01-03 00:00:00');
    msg.run(conv.run('agent:main:telegram:direct:42').lastInsertRowid, '2026-02-01 10:00:00');
    msg.run(conv.run('agent:main:main').lastInsertRowid, '2026-11-01 00:00:00');
    msg.run(conv.run(opaqueKey('agent:main:main')).lastInsertRowid, '2026-11-02 00:00:00');
    db.close();
    const inv = buildInventory(discoverHome({ home, env: { HOME: '/nowhere' } }));
    const s = inv.sessions[0]!;
    expect(s.conversations.map((c) => c.key).sort()).toEqual([key, 'agent:main:telegram:direct:42'].sort());
    expect(s.times.seahorse_last_message).toBe('2026-02-01 10:00:00');
    expect(s.lastActivityMs).toBe(Date.UTC(2026, 1, 1, 10));
    expect(inv.orphanConversations.map((c) => c.key).sort()).toEqual(
      ['agent:main:main', opaqueKey('agent:main:main')].sort(),
    );
  });

  it('`sessions` writes nothing anywhere under the home and lists everything as JSON', () => {
    const home = join(tempDir(), '.picoclaw');
    buildSampleHome({ dir: home, seed: 3, sessions: 40 });
    const before = snapshot(home);
    const r = runCli(['sessions', '--json', '--home', home]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.totals.sessions).toBe(40);
    expect(out.sessions).toHaveLength(40);
    expect(out.seahorse.state).toBe('open');
    expect(snapshot(home)).toEqual(before);
    const text = runCli(['sessions', '--home', home]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('Per agent:');
    expect(text.stdout).toContain('seahorse.db:');
    expect(snapshot(home)).toEqual(before);
  });

  it('a missing home is a clear usage error', () => {
    const r = runCli(['sessions', '--home', '/nonexistent/picoclaw']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/nonexistent/picoclaw');
    expect(r.stderr).toContain('what to do');
  });
});
