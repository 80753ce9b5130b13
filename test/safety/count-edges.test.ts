import { readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { describe, expect, it } from 'vitest';
import { renderPruneText } from '../../src/commands/prune-text.js';
import { fixedClock } from '../../src/io/clock.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { handHome, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway } from '../support/gateway-state.js';

/** max_sessions on homes the ordinary tests do not build: refusals, a folder seen twice, undated sessions. */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const down = downGateway;
const pass = (home: string, apply: boolean, flags: Record<string, unknown>) =>
  runPrunePass({ home, env, apply, clock: fixedClock(NOW), stateDir: null, probe: down, flags });

/** n sessions, one an hour before NOW (all well within max_age_days). */
function recent(n: number, prefix = 'sk_v1_s'): HandSession[] {
  return Array.from({ length: n }, (_, i) => ({
    key: `${prefix}${String(i).padStart(3, '0')}`,
    updated: new Date(NOW.getTime() - (i + 1) * 3_600_000).toISOString(),
  }));
}

describe('a safety refusal never costs another session (max_sessions)', () => {
  it('an unparsable meta and a symlinked .jsonl do not push real sessions out', async () => {
    const home = tempDir();
    const { sessionsDir } = handHome(home, recent(10), { seahorse: false });
    // PicoClaw's ListSessions skips this one: it is not a session at all.
    writeFileSync(join(sessionsDir, 'broken.meta.json'), '{"key": "agent:main:x", ');
    writeFileSync(join(sessionsDir, 'broken.jsonl'), '{"role":"user","content":"hi"}\n');
    // The guard never follows links: kept, and it must not make room by deleting another.
    const outside = tempDir();
    writeFileSync(
      join(outside, 'target.jsonl'),
      '{"role":"user","content":"hi","created_at":"2026-11-30T11:30:00Z"}\n',
    );
    writeFileSync(
      join(sessionsDir, 'sk_v1_linked.meta.json'),
      JSON.stringify({
        key: 'sk_v1_linked',
        count: 1,
        created_at: '2026-11-30T11:30:00Z',
        updated_at: '2026-11-30T11:30:00Z',
      }),
    );
    symlinkSync(join(outside, 'target.jsonl'), join(sessionsDir, 'sk_v1_linked.jsonl'));

    const dry = await pass(home, false, { max_sessions: 10 });
    expect(dry.sessions.find((s) => s.file === 'broken')).toMatchObject({ action: 'keep', reason: 'unreadable_meta' });
    expect(dry.sessions.find((s) => s.key === 'sk_v1_linked')).toMatchObject({
      action: 'keep',
      reason: 'not_regular_file',
    });
    expect(dry.totals.delete).toBe(0);
    const r = await pass(home, true, { max_sessions: 10 });
    expect(r.totals.deleted_sessions).toBe(0);
    expect(readdirSync(sessionsDir).filter((n) => n.startsWith('sk_v1_s') && n.endsWith('.meta.json'))).toHaveLength(
      10,
    );
    // One real session over the limit: exactly one goes, the oldest.
    const r2 = await pass(home, true, { max_sessions: 9 });
    expect(r2.sessions.filter((s) => s.action === 'delete').map((s) => s.key)).toEqual(['sk_v1_s009']);
  });
});

describe('a sessions folder reached through two paths is one folder', () => {
  it("an agent whose workspace is a symlink to another agent's counts each session once", async () => {
    const home = tempDir();
    const ws = join(home, 'workspace');
    handHome(home, recent(30), {
      seahorse: false,
      config: {
        agents: {
          defaults: { workspace: ws },
          list: [{ id: 'main' }, { id: 'ops', workspace: join(home, 'workspace-ops') }],
        },
      },
    });
    symlinkSync(ws, join(home, 'workspace-ops'));
    const h = discoverHome({ home, env });
    expect(h.sessionsDirs).toHaveLength(1);
    expect(h.sessionsDirs[0]!.agents).toEqual(['main', 'ops']);
    const r = await pass(home, true, { max_sessions: 25 });
    expect(r.totals.sessions).toBe(30);
    expect(r.totals.deleted_sessions).toBe(5);
    expect(readdirSync(join(ws, 'sessions')).filter((n) => n.endsWith('.meta.json'))).toHaveLength(25);
  });
});

describe("undated sessions: kept and counted (PicoClaw's rule), never silently", () => {
  it('the dry-run and the apply say how many there are and how many dated sessions they push out', async () => {
    const home = tempDir();
    const undated: HandSession[] = Array.from({ length: 12 }, (_, i) => ({
      key: `sk_v1_u${i}`,
      updated: null,
      created: null,
      lastLine: null,
    }));
    handHome(home, [...undated, ...recent(10)], { seahorse: false });
    const dry = await pass(home, false, { max_sessions: 15 });
    expect(dry.undated).toEqual({ sessions: 12, displaced: 7 });
    expect(dry.totals.delete).toBe(7);
    const warning = dry.warnings.find((w) => w.includes('undated'));
    expect(warning).toMatch(/12 undated session\(s\).*push out 7 dated session\(s\)/);
    expect(renderPruneText(dry)).toContain('warning: 12 undated session(s)');
    const r = await pass(home, true, { max_sessions: 15 });
    expect(r.undated).toEqual({ sessions: 12, displaced: 7 });
    expect(r.warnings.join('\n')).toContain('push out 7 dated session(s)');
  });

  it('says nothing when the undated sessions push nobody out', async () => {
    const home = tempDir();
    handHome(home, [{ key: 'sk_v1_u', updated: null, created: null, lastLine: null }, ...recent(3)], {
      seahorse: false,
    });
    const r = await pass(home, false, { max_sessions: 10 });
    expect(r.undated).toEqual({ sessions: 1, displaced: 0 });
    expect(r.warnings.filter((w) => w.includes('undated'))).toEqual([]);
  });
});
