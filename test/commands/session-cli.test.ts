import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dumpSeahorse, handHome, snapshot, writeSession } from '../support/home.js';
import { CLI, runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';
import { sampleHome, startDaemon, writeConfig } from '../daemon/support.js';

/**
 * The one-session commands through the built CLI, as a person runs them: pin / unpin (and the pins in
 * sessions, prune, the pre-start unit's pass and the daemon's), show, delete, export.
 */

// Old enough for max_age_days (30), recent enough that the age check has no reason to doubt the clock (a
// long silence before the cutoff would look like a clock far ahead: docs/bad-input.md#the-clock).
const DAY = 86_400_000;
const at = (daysAgo: number) => new Date(Math.floor((Date.now() - daysAgo * DAY) / 1000) * 1000);
const OLD_AT = at(60);
const OLD2_AT = at(45);
const OLD = OLD_AT.toISOString().replace('.000Z', 'Z');
const sql = (d: Date, plusSeconds = 0) =>
  new Date(d.getTime() + plusSeconds * 1000)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, '');
const NOW = new Date().toISOString();
const ALIAS = 'agent:main:telegram:direct:1';

function home(): { home: string; state: string; sessionsDir: string; dbPath: string } {
  const root = tempDir('pcg-one-');
  const h = join(root, 'home');
  const { sessionsDir, dbPath } = handHome(h, [
    // One alias group: the canonical session names the legacy one as an alias.
    { key: 'sk_v1_old1', updated: OLD, aliases: [ALIAS], seahorse: [sql(OLD_AT)] },
    { key: ALIAS, updated: OLD },
    { key: 'sk_v1_old2', updated: OLD2_AT.toISOString(), seahorse: [sql(OLD2_AT), sql(OLD2_AT, 1)] },
    { key: 'sk_v1_new', updated: NOW },
  ]);
  return { home: h, state: join(root, 'state'), sessionsDir, dbPath };
}

const args = (h: { home: string; state: string }) => ['--home', h.home, '--state-dir', h.state];
/** Two snapshots hold the same files with the same bytes (compared without printing megabytes of them). */
const same = (a: Map<string, string>, b: Map<string, string>) =>
  a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
/** Text as one line: the reports wrap to the terminal's width. */
const flat = (s: string) => s.replace(/\s+/g, ' ');
const json = (r: { stdout: string }) => JSON.parse(r.stdout) as Record<string, unknown>;
const verdictsOf = (r: { stdout: string }) =>
  Object.fromEntries(
    (json(r).sessions as { key: string; action: string; reason: string }[]).map((s) => [
      s.key,
      `${s.action}:${s.reason}`,
    ]),
  );

describe('pin and unpin', () => {
  it('a pinned session and its alias group survive every prune --apply until unpinned', () => {
    const h = home();
    const pin = runCli(['pin', 'sk_v1_old1', '--note', 'the recipe thread', ...args(h)]);
    expect(pin.code, pin.stderr).toBe(0);
    expect(pin.stdout).toMatch(
      /pinned main sk_v1_old1 .*the recipe thread.*alias group \(agent:main:telegram:direct:1\)/s,
    );
    // sessions lists it (text and JSON).
    const ls = runCli(['sessions', ...args(h)]);
    expect(flat(ls.stdout)).toMatch(/Pinned .*: main sk_v1_old1 keep: pinned on \d{4}-\d\d-\d\d: the recipe thread/);
    const lj = json(runCli(['sessions', '--json', ...args(h)]));
    expect(lj.pins).toEqual([expect.objectContaining({ key: 'sk_v1_old1', note: 'the recipe thread', present: true })]);
    // prune shows `keep  pinned` and keeps the whole group; the other old session goes.
    const dry = runCli(['prune', '--max-age-days', '30', '--wide', ...args(h)]);
    expect(dry.stdout).toMatch(/^keep\s+pinned \(never deleted; see below\)\s+main\s+sk_v1_old1/m);
    const applied = runCli(['prune', '--apply', '--max-age-days', '30', '--json', ...args(h)]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(verdictsOf(applied)).toEqual({
      sk_v1_old1: 'keep:pinned',
      [ALIAS]: 'keep:pinned',
      sk_v1_old2: 'delete:max_age_days',
      sk_v1_new: 'keep:newest',
    });
    expect(existsSync(join(h.sessionsDir, 'agent_main_telegram_direct_1.jsonl'))).toBe(true);
    // Unpinned (by prefix), the next pass applies the policy again.
    const un = runCli(['unpin', 'sk_v1_o', ...args(h)]);
    expect(un.code, un.stderr).toBe(0);
    expect(un.stdout).toMatch(/unpinned main sk_v1_old1/);
    const again = runCli(['prune', '--apply', '--max-age-days', '30', '--json', ...args(h)]);
    expect(verdictsOf(again)).toMatchObject({ sk_v1_old1: 'delete:max_age_days', [ALIAS]: 'delete:max_age_days' });
  });

  it('pinned sessions count toward max_sessions, and the report says how many they push out', () => {
    const h = home();
    runCli(['pin', 'sk_v1_old1', ...args(h)]);
    const r = runCli(['prune', '--max-age-days', '0', '--max-sessions', '2', '--json', ...args(h)]);
    const doc = json(r);
    expect(doc.pinned).toEqual({ groups: 1, displaced: 1 });
    expect(verdictsOf(r)).toMatchObject({ sk_v1_old1: 'keep:pinned', sk_v1_old2: 'delete:max_sessions' });
    expect((doc.warnings as string[]).join('\n')).toMatch(
      /1 pinned session\(s\) count toward max_sessions=2.*push out 1/,
    );
  });

  it("the pre-start unit's command line honours a pin made in the units' state folder, with no flag", () => {
    const h = home();
    const unitEnv = { STATE_DIRECTORY: h.state, PICOGUARD_NO_SYSTEM_STATE: '' };
    const config = join(h.state, '..', 'guard.json');
    writeFileSync(config, JSON.stringify({ prune: { enabled: true, max_age_days: 30 } }));
    expect(runCli(['pin', 'sk_v1_old2', '--home', h.home], unitEnv).code).toBe(0);
    const r = runCli(['prune', '--apply', '--if-enabled', '--pre-start', '--json', '--home', h.home], {
      ...unitEnv,
      PICOCLAW_GUARD_CONFIG: config,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(verdictsOf(r)).toMatchObject({ sk_v1_old2: 'keep:pinned', sk_v1_old1: 'delete:max_age_days' });
  });

  it('the daemon pass honours a pin', async () => {
    const h = sampleHome();
    const state = join(h.root, 'state');
    const victims = (
      JSON.parse(runCli(['prune', '--home', h.home, '--max-age-days', '30', '--json']).stdout) as {
        sessions: { key: string; action: string }[];
      }
    ).sessions.filter((s) => s.action === 'delete');
    expect(victims.length).toBeGreaterThan(1);
    const pinned = victims[0]!.key;
    expect(runCli(['pin', pinned, '--home', h.home, '--state-dir', state]).code).toBe(0);
    const d = await startDaemon({
      home: h.home,
      stateDir: state,
      config: writeConfig(h.root, { prune: { enabled: true, max_age_days: 30 } }),
      env: { PICOGUARD_INTERVAL_SECONDS: '3600' },
    });
    try {
      const pass = await d.waitForLog((l) => l.msg === 'prune pass');
      expect(pass.deleted_sessions).toBe(victims.length - 1);
      const after = JSON.parse(runCli(['sessions', '--json', '--home', h.home, '--state-dir', state]).stdout) as {
        sessions: { key: string; pin: unknown }[];
      };
      expect(after.sessions.find((s) => s.key === pinned)?.pin).toBeTruthy();
    } finally {
      await d.stop();
    }
  });

  it('a pins file that cannot be read stops an apply (exit 6, nothing deleted); the dry-run warns', () => {
    const h = home();
    mkdirSync(h.state, { recursive: true });
    writeFileSync(join(h.state, 'pins.json'), '{"pins": [');
    const before = snapshot(h.sessionsDir);
    const r = runCli(['prune', '--apply', '--max-age-days', '30', ...args(h)]);
    expect(r.code).toBe(6);
    expect(flat(r.stdout)).toMatch(/the pins in .*pins\.json cannot be read.*nothing was deleted/);
    expect(same(snapshot(h.sessionsDir), before)).toBe(true);
    expect(flat(runCli(['prune', '--max-age-days', '30', ...args(h)]).stdout)).toMatch(/--apply would skip the pass/);
    // pin itself refuses to overwrite what it cannot read (exit 3), and says which file.
    const p = runCli(['pin', 'sk_v1_new', ...args(h)]);
    expect(p.code).toBe(3);
    expect(p.stderr).toContain('pins.json');
  });

  it('KEY: an ambiguous prefix is refused naming the candidates; the shortened form of the tables works', () => {
    const h = home();
    const amb = runCli(['pin', 'sk_v1_old', ...args(h)]);
    expect(amb.code).toBe(2);
    expect(amb.stderr).toMatch(/"sk_v1_old" is ambiguous: it names 2 sessions: main sk_v1_old1, main sk_v1_old2/);
    expect(runCli(['pin', 'nosuch', ...args(h)]).code).toBe(2);
    const short = runCli(['show', 'agent:main:…direct:1', '--json', ...args(h)]);
    expect(short.code, short.stderr).toBe(0);
    expect(json(short).key).toBe(ALIAS);
  });
});

describe('show', () => {
  it("prints a session's metadata and its verdict, never a message's text", () => {
    const h = home();
    runCli(['pin', ALIAS, '--note', 'n', ...args(h)]);
    const r = runCli(['show', 'sk_v1_old1', '--json', ...args(h)]);
    expect(r.code, r.stderr).toBe(0);
    const doc = json(r);
    expect(doc).toMatchObject({
      agent: 'main',
      key: 'sk_v1_old1',
      lines: { lines: 2, non_empty: 2, too_long: 0 },
      meta: { count: 2, summary_chars: 0, aliases: [ALIAS] },
      last_activity: OLD_AT.toISOString(),
      alias_group: [{ agent: 'main', key: ALIAS }],
      pins: [expect.objectContaining({ key: ALIAS, note: 'n' })],
      verdict: { action: 'keep', reason: 'pinned' },
    });
    expect((doc.seahorse as unknown[]).length).toBe(1);
    expect(doc.last_activity_from).toMatch(/updated_at|line|seahorse/);
    const text = runCli(['show', 'sk_v1_old2', ...args(h)]);
    expect(text.stdout).toMatch(/verdict\s+DELETE: older than max_age_days/);
    // Content never shows: the hand-made lines read "message N of <key>", the seahorse rows "text N of <key>".
    for (const out of [r.stdout, text.stdout]) expect(out).not.toMatch(/message \d of|text \d of/);
  });
});

describe('delete', () => {
  it('is a dry-run without --apply, then deletes the whole alias group and its seahorse rows', () => {
    const h = home();
    const before = snapshot(h.sessionsDir);
    const dry = runCli(['delete', ALIAS, '--json', ...args(h)]);
    expect(dry.code, dry.stderr).toBe(0);
    expect((json(dry).group as { key: string }[]).map((s) => s.key).sort()).toEqual([ALIAS, 'sk_v1_old1']);
    expect(same(snapshot(h.sessionsDir), before)).toBe(true);
    const r = runCli(['delete', ALIAS, '--apply', ...args(h)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/deleted an alias group of 2 sessions/);
    for (const f of ['sk_v1_old1.jsonl', 'sk_v1_old1.meta.json', 'agent_main_telegram_direct_1.meta.json'])
      expect(existsSync(join(h.sessionsDir, f))).toBe(false);
    // Nothing else: the other old session (which the policy would delete) is still there.
    expect(existsSync(join(h.sessionsDir, 'sk_v1_old2.jsonl'))).toBe(true);
    const convs = dumpSeahorse(h.dbPath).conversations as { session_key: string }[];
    expect(convs.map((c) => c.session_key).sort()).toEqual(['sk_v1_old2']);
    // The history line, as for prune.
    expect(readFileSync(join(h.state, 'prune-history.jsonl'), 'utf8')).toMatch(/"deleted_sessions":2/);
  });

  it("names each member's own archive (text and --json of delete, --json of prune), each holding that member", () => {
    const holds = (archive: string, file: string) => {
      const t = spawnSync('tar', ['-tzf', archive], { encoding: 'utf8' });
      expect(t.status, t.stderr).toBe(0);
      return t.stdout.split('\n').includes(`session/${file}.meta.json`);
    };
    const h = home();
    const archive = join(h.state, '..', 'archive');
    // --wide: one line a member, its path unwrapped.
    const text = runCli(['delete', ALIAS, '--apply', '--wide', '--archive', archive, ...args(h)]);
    expect(text.code, text.stderr).toBe(0);
    const named = new Map<string, string>();
    for (const line of text.stdout.split('\n')) {
      const m = /DELETED\s+main\s+(\S+)\s.*archive: (\S+)$/.exec(line);
      if (m) named.set(m[1]!, m[2]!);
    }
    expect([...named.keys()].sort()).toEqual([ALIAS, 'sk_v1_old1']);
    expect(holds(named.get(ALIAS)!, 'agent_main_telegram_direct_1')).toBe(true);
    expect(holds(named.get('sk_v1_old1')!, 'sk_v1_old1')).toBe(true);
    for (const cmd of [['delete', ALIAS], ['prune']]) {
      const j = home();
      const r = runCli([...cmd, '--apply', '--json', '--archive', join(j.state, '..', 'archive'), ...args(j)]);
      expect(r.code, r.stderr).toBe(0);
      const entries = (json(r)[cmd[0] === 'delete' ? 'group' : 'sessions'] as Record<string, string>[]).filter(
        (s) => s.action === 'delete' && s.group !== null,
      );
      expect(entries.map((s) => s.key).sort()).toEqual([ALIAS, 'sk_v1_old1']);
      for (const s of entries) expect(holds(s.archive!, s.file!), `${s.key}: ${s.archive}`).toBe(true);
    }
  });

  it('refuses a pinned session (exit 2) and an unreadable one (exit 3), naming the group; deletes nothing', () => {
    const h = home();
    runCli(['pin', ALIAS, ...args(h)]);
    const before = snapshot(h.sessionsDir);
    const r = runCli(['delete', 'sk_v1_old1', '--apply', ...args(h)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not deleted: the alias group of 2 sessions \(main [^)]*sk_v1_old1[^)]*\): .* is pinned/);
    expect(r.stderr).toContain(ALIAS);
    // A .jsonl that is a symlink (to a file outside the folder): the guard never touches such a session.
    writeSession(h.sessionsDir, { key: 'sk_v1_bad', updated: OLD });
    const outside = join(h.state, '..', 'outside.jsonl');
    writeFileSync(outside, '{"role":"user","content":"x"}\n');
    rmSync(join(h.sessionsDir, 'sk_v1_bad.jsonl'));
    symlinkSync(outside, join(h.sessionsDir, 'sk_v1_bad.jsonl'));
    const bad = runCli(['delete', 'sk_v1_bad', '--apply', ...args(h)]);
    expect(bad.code, bad.stderr).toBe(3);
    expect(bad.stderr).toMatch(/not deleted: main sk_v1_bad: a \.jsonl is a symlink/);
    expect(existsSync(outside) && existsSync(join(h.sessionsDir, 'sk_v1_bad.meta.json'))).toBe(true);
    const after = snapshot(h.sessionsDir);
    for (const [k, v] of before) expect(after.get(k) === v, k).toBe(true);
  });

  it('asks on a terminal (pseudo-terminal): "n" deletes nothing, "y" deletes; --yes does not ask', () => {
    const h = home();
    const tty = (answer: string, extra: string[] = []) => {
      const cmd = [process.execPath, CLI, 'delete', 'sk_v1_old2', '--apply', ...extra, ...args(h)]
        .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
        .join(' ');
      // script(1) gives the command a pseudo-terminal for stdin and stdout; the answer is typed into it.
      return spawnSync('script', ['-qec', cmd, '/dev/null'], {
        input: answer,
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          PICOGUARD_NO_SYSTEM_STATE: '1',
          PICOCLAW_GUARD_CONFIG: join(h.home, 'none.json'),
        },
        timeout: 60_000,
      });
    };
    writeFileSync(join(h.home, 'none.json'), '{}');
    const no = tty('n\n');
    expect(no.stdout).toMatch(/Delete 1 session\(s\) \(.*\) of agent main\? \[y\/N\]/);
    expect(no.stdout).toMatch(/nothing deleted/);
    expect(existsSync(join(h.sessionsDir, 'sk_v1_old2.jsonl'))).toBe(true);
    const yes = tty('y\n');
    expect(yes.stdout).toMatch(/DELETED\s+main\s+sk_v1_old2/);
    expect(existsSync(join(h.sessionsDir, 'sk_v1_old2.jsonl'))).toBe(false);
    const quiet = tty('', ['--yes']);
    expect(quiet.stdout).not.toMatch(/\[y\/N\]/);
  });
});

describe('export', () => {
  const real = join(import.meta.dirname, '..', 'fixtures', 'real-picoclaw-capture', 'sessions');
  const realHome = () => {
    const root = tempDir('pcg-export-');
    mkdirSync(join(root, 'home', 'workspace'), { recursive: true });
    cpSync(real, join(root, 'home', 'workspace', 'sessions'), { recursive: true });
    writeFileSync(join(root, 'home', 'config.json'), '{}');
    return { root, home: join(root, 'home') };
  };

  it("prints a real PicoClaw session's conversation: roles, times, text, tool calls and their results", () => {
    const h = realHome();
    const md = runCli(['export', 'sk_v1_cb', '--home', h.home]);
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toMatch(/^## 1\. user · 2026-05-25T10:11:16\.875545\+02:00$/m);
    expect(md.stdout).toMatch(/^## 2\. assistant \(llama3\)/m);
    expect(md.stdout).toMatch(/\*\*tool call\*\* `exec` \(call_3sm5nnh0\)/);
    expect(md.stdout).toMatch(/"command": "echo hello-from-picoclaw"/);
    expect(md.stdout).toMatch(/^## 3\. tool result for call_3sm5nnh0/m);
    expect(md.stdout).toMatch(/^Hello!$/m);
    const j = runCli(['export', 'sk_v1_cb', '--home', h.home, '--format', 'json']);
    const doc = JSON.parse(j.stdout) as { messages: { role: string; tool_calls: { name: string }[] }[] };
    expect(doc.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(doc.messages[1]!.tool_calls[0]!.name).toBe('exec');
  });

  it('writes a new file of mode 0600 with -o, never over an existing one; says in --help it prints content', () => {
    const h = realHome();
    const out = join(h.root, 'out.md');
    expect(runCli(['export', 'sk_v1_cb', '--home', h.home, '-o', out]).code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(readFileSync(out, 'utf8')).toContain('hello-from-picoclaw');
    const again = runCli(['export', 'sk_v1_cb', '--home', h.home, '-o', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists \(never overwritten\)/);
    expect(flat(runCli(['export', '--help']).stdout)).toMatch(/the only command that prints content/);
  });
});
