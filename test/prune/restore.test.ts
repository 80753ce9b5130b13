import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gunzipSync, gzipSync, createGzip } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway } from '../support/gateway-state.js';

const down = downGateway;
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const recent = { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] };
const old = (key: string) => ({ key, updated: '2026-08-01T10:00:00Z', seahorse: ['2026-08-01 07:00:00'] });
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function pass(home: string, nowIso = '2026-11-30T12:00:00Z') {
  return runPrunePass({
    home,
    env,
    apply: true,
    clock: fixedClock(new Date(nowIso)),
    // Deletion mechanics, not the clock: the sessions here are old and silent, a shape the age check doubts.
    trustClock: true,
    stateDir: null,
    probe: down,
    flags: { archive_dir: join(home, '..', 'archive') },
  });
}

/** A home beside its archive folder; returns both. */
function setup(sessions: ReturnType<typeof old>[] = [old('sk_v1_old')]) {
  const root = tempDir();
  const home = join(root, 'home');
  const { sessionsDir } = handHome(home, [recent, ...sessions]);
  return { home, sessionsDir, archive: join(root, 'archive'), state: join(root, 'state') };
}

/** An archive in the format of earlier releases (one gzip JSON document). */
function legacyArchive(
  dir: string,
  name: string,
  over: Record<string, unknown> = {},
  files?: Record<string, unknown>,
): string {
  const jsonl = Buffer.from('{"role":"user","content":"hi","created_at":"2026-08-01T10:00:00Z"}\n');
  const meta = Buffer.from(
    JSON.stringify({
      key: 'sk_v1_legacy',
      created_at: '2026-08-01T10:00:00Z',
      updated_at: '2026-08-01T10:00:00Z',
      count: 1,
    }),
  );
  const doc = {
    format: 'picoclaw-guard-session-archive',
    version: 1,
    archived_at: '2026-09-01T00:00:00.000Z',
    agent: 'main',
    sessions_dir: join(dir, 'nowhere'),
    base: 'sk_v1_legacy',
    key: 'sk_v1_legacy',
    aliases: [],
    files: files ?? {
      jsonl: { name: 'sk_v1_legacy.jsonl', sha256: sha(jsonl), data_base64: jsonl.toString('base64') },
      meta: { name: 'sk_v1_legacy.meta.json', sha256: sha(meta), data_base64: meta.toString('base64') },
    },
    seahorse: null,
    ...over,
  };
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, gzipSync(JSON.stringify(doc)));
  return p;
}

describe('restore', () => {
  it('still reads archives of earlier releases (.session.json.gz), checked by SHA-256', () => {
    const { home, sessionsDir, state } = setup([]);
    const dir = tempDir();
    legacyArchive(dir, '20260901T000000Z_main_sk_v1_legacy.session.json.gz', { sessions_dir: sessionsDir });
    const r = runCli(['restore', dir, '--home', home, '--state-dir', state]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(readFileSync(join(sessionsDir, 'sk_v1_legacy.jsonl'), 'utf8')).toMatch(/"content":"hi"/);
    // Taken from another home (its sessions folder is not one of this home's): left alone.
    const other = setup([]);
    const o = runCli(['restore', dir, '--home', other.home, '--state-dir', state]);
    expect(o.code).toBe(0);
    expect(o.stdout).toMatch(/1 archive\(s\) taken from other PicoClaw homes were left alone/);
    expect(existsSync(join(other.sessionsDir, 'sk_v1_legacy.jsonl'))).toBe(false);
  });

  it(
    'rejects a crafted archive with one message naming the archive and the ' +
      'field: exit 3, no stack, nothing written',
    () => {
      const { home, sessionsDir, state } = setup([]);
      const dir = tempDir();
      const ok = (role: string) => ({ name: `sk_v1_legacy.${role}`, sha256: sha(''), data_base64: '' });
      const cases: [string, Record<string, unknown>, Record<string, unknown> | undefined, RegExp][] = [
        ['no-files', { files: undefined }, undefined, /files must be an object/],
        ['no-meta', {}, { jsonl: ok('jsonl') }, /files\.meta must be an object/],
        [
          'data-number',
          {},
          { jsonl: null, meta: { ...ok('meta.json'), data_base64: 12 } },
          /files\.meta\.data_base64 must be a string/,
        ],
        ['key-number', { key: 7 }, undefined, /key must be a string, not 7/],
        ['agent-object', { agent: {} }, undefined, /agent must be a string/],
        ['nul-base', { base: 'a\u0000b' }, undefined, /base is empty or holds a NUL byte/],
        ['slash-base', { base: '../../etc/x' }, undefined, /base "..\/..\/etc\/x" is not a safe file or folder name/],
        [
          'bad-sha',
          {},
          { jsonl: null, meta: { ...ok('meta.json'), data_base64: Buffer.from('{}').toString('base64') } },
          /files\.meta\.sha256 does not match the data/,
        ],
      ];
      for (const [name, over, files, want] of cases) {
        const p = legacyArchive(dir, `${name}.session.json.gz`, over, files);
        const r = runCli(['restore', p, '--home', home, '--state-dir', state]);
        expect(r.code, `${name}: ${r.stderr}`).toBe(3);
        expect(r.stderr, name).toMatch(want);
        expect(r.stderr, name).toContain(p);
        expect(r.stderr, name).not.toMatch(/TypeError|\n\s+at /);
      }
      expect(
        readdirSync(sessionsDir).filter((n) => !n.startsWith('seahorse') && !n.startsWith('sk_v1_recent')),
      ).toEqual([]);
    },
  );

  it('writes both files or neither: a meta that is not JSON (correct hash) leaves no .jsonl and no temp file', () => {
    const { home, sessionsDir, state } = setup([]);
    const dir = tempDir();
    const jsonl = Buffer.from('{"x":1}\n');
    const meta = Buffer.from('not json');
    const mine = legacyArchive(
      dir,
      'a.session.json.gz',
      { sessions_dir: sessionsDir },
      {
        jsonl: { name: 'sk_v1_legacy.jsonl', sha256: sha(jsonl), data_base64: jsonl.toString('base64') },
        meta: { name: 'sk_v1_legacy.meta.json', sha256: sha(meta), data_base64: meta.toString('base64') },
      },
    );
    const m = runCli(['restore', mine, '--home', home, '--state-dir', state, '--json']);
    expect(m.code).toBe(7);
    expect(JSON.parse(m.stdout).entries[0]).toMatchObject({
      action: 'invalid',
      reason: expect.stringMatching(/meta file is not valid JSON/),
    });
    expect(readdirSync(sessionsDir).filter((n) => n.includes('legacy') || n.startsWith('.tmp'))).toEqual([]);
  });

  it('goes through a whole folder: restores the valid, lists the invalid, exit 7', async () => {
    const { home, sessionsDir, archive, state } = setup([old('sk_v1_a'), old('sk_v1_b')]);
    expect((await pass(home)).totals.deleted_sessions).toBe(2);
    writeFileSync(join(archive, '00000000T000000.000Z_deadbeef_main_junk.tar.gz'), 'not gzip at all');
    const r = runCli(['restore', archive, '--home', home, '--state-dir', state]);
    expect(r.code).toBe(7);
    expect(r.stdout).toMatch(/invalid .*junk\.tar\.gz/);
    expect(r.stdout).toMatch(/1 archive\(s\) could not be used/);
    expect(readdirSync(sessionsDir)).toEqual(
      expect.arrayContaining(['sk_v1_a.jsonl', 'sk_v1_a.meta.json', 'sk_v1_b.jsonl', 'sk_v1_b.meta.json']),
    );
  });

  it('checks SHA-256 on restore: a tampered file restores nothing of that session', async () => {
    const { home, sessionsDir, archive, state } = setup();
    await pass(home);
    const name = readdirSync(archive)[0]!;
    const tar = gunzipSync(readFileSync(join(archive, name)));
    // The first byte of the .jsonl's data (after its 512-byte tar header), changed.
    const at = tar.indexOf('session/sk_v1_old.jsonl\0') + 512;
    expect(at).toBeGreaterThan(512);
    tar[at] = tar[at]! ^ 0x20;
    writeFileSync(join(archive, name), gzipSync(tar));
    const r = runCli(['restore', join(archive, name), '--home', home, '--state-dir', state]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/"session\/sk_v1_old\.jsonl" does not match its SHA-256 in the manifest/);
    expect(readdirSync(sessionsDir).filter((n) => n.includes('sk_v1_old') || n.startsWith('.tmp'))).toEqual([]);
  });

  it('stops a gzip bomb at the cap in bounded memory and says the archive is too large', async () => {
    const { home, state } = setup([]);
    const dir = tempDir();
    // A bomb of JSON: the data of a file that never ends (read as a stream, up to the cap).
    const bomb = join(dir, 'bomb.session.json.gz');
    const chunk = Buffer.alloc(1 << 20, 'A');
    let left = 300;
    await pipeline(
      Readable.from(
        (function* () {
          yield Buffer.from('{"format":"picoclaw-guard-session-archive","version":1,"files":{"jsonl":{"data_base64":"');
          while (left-- > 0) yield chunk;
        })(),
      ),
      createGzip({ level: 1 }),
      createWriteStream(bomb),
    );
    const r = runCli(['restore', bomb, '--list', '--state-dir', state]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/decompresses to more than 256\.0 MiB: too large/);
    // Zeros are not JSON: said at the first byte, without reading the rest.
    const zeros = join(dir, 'zeros.session.json.gz');
    writeFileSync(zeros, gzipSync(Buffer.alloc(1 << 20)));
    const z = runCli(['restore', zeros, '--list', '--state-dir', state]);
    expect(z.code).toBe(3);
    expect(z.stderr).toMatch(/is not a readable gzip JSON archive \(unexpected "\\u0000" at character 1\)/);
    void home;
  });

  it('restores the newest complete life of each key and lists the older one as another life', async () => {
    const { home, sessionsDir, archive, state } = setup();
    await pass(home, '2026-11-30T12:00:00Z');
    expect(runCli(['restore', archive, '--home', home, '--state-dir', state, '--hold-days', '0']).code).toBe(0);
    // Changed after the restore, then deleted again: a second, newer archive of the same key.
    writeFileSync(
      join(sessionsDir, 'sk_v1_old.jsonl'),
      readFileSync(join(sessionsDir, 'sk_v1_old.jsonl'), 'utf8') +
        '{"role":"user","content":"second life","created_at":"2026-08-01T10:00:00Z"}\n',
    );
    await pass(home, '2026-11-30T13:00:00Z');
    expect(readdirSync(archive)).toHaveLength(2);
    const r = runCli(['restore', archive, '--home', home, '--state-dir', state, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const entries = JSON.parse(r.stdout).entries as { action: string; archive: string; reason: string }[];
    expect(entries.map((e) => e.action).sort()).toEqual(['other_life', 'restored']);
    expect(entries.find((e) => e.action === 'restored')!.archive).toMatch(/20261130T130000/);
    expect(entries.find((e) => e.action === 'other_life')!.reason).toMatch(/^an earlier life: archived 2026-11-30T12/);
    expect(readFileSync(join(sessionsDir, 'sk_v1_old.jsonl'), 'utf8')).toMatch(/second life/);
    // PicoClaw's own mode comes back (0644), whatever the umask of the restore.
    expect(statSync(join(sessionsDir, 'sk_v1_old.jsonl')).mode & 0o777).toBe(0o644);
    expect(statSync(join(sessionsDir, 'sk_v1_old.meta.json')).mode & 0o777).toBe(0o644);
  });

  it(
    '--key takes a unique prefix or the shortened form; ambiguous is exit 2 ' +
      'with the matches; skips end with a count',
    async () => {
      const long = 'agent:cron-0123456789abcdef-11111111-2222-4333-8444-555555555555';
      const { home, archive, state } = setup([old('sk_v1_a1'), old('sk_v1_a2'), old(long)]);
      await pass(home);
      const amb = runCli(['restore', archive, '--home', home, '--key', 'sk_v1_a', '--state-dir', state]);
      expect(amb.code).toBe(2);
      expect(amb.stderr).toMatch(/"sk_v1_a" matches 2 keys: sk_v1_a1, sk_v1_a2/);
      const list = runCli(['restore', archive, '--list'], { HOME: '/nowhere' });
      expect(list.code, list.stderr).toBe(0);
      const shown = list.stdout
        .split('\n')
        .find((l) => l.includes('agent:cron-'))!
        .split(/\s+/)[2]!;
      expect(shown).toContain('…');
      const one = runCli(['restore', archive, '--home', home, '--key', shown, '--state-dir', state, '--json']);
      expect(one.code, one.stderr).toBe(0);
      expect(JSON.parse(one.stdout).entries.map((e: { key: string }) => e.key)).toEqual([long]);
      const pre = runCli(['restore', archive, '--home', home, '--key', 'sk_v1_a1', '--state-dir', state]);
      expect(pre.code).toBe(0);
      // Run again: what is in place holds exactly the archives' bytes (done already), nothing is skipped.
      const again = runCli(['restore', archive, '--home', home, '--state-dir', state]);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(
        /Restored 3 session\(s\) \(2 of them finished from an interrupted restore, or\s+already/,
      );
      // A session changed since (PicoClaw appended to it): another session, never overwritten.
      writeFileSync(join(home, 'workspace', 'sessions', 'sk_v1_a1.jsonl'), '{"role":"user","content":"new"}\n', {
        flag: 'a',
      });
      const changed = runCli(['restore', archive, '--home', home, '--state-dir', state]);
      expect(changed.code).toBe(7);
      expect(changed.stdout).toMatch(/Skipped 1 session\(s\) \(see above\); nothing was overwritten\./);
      expect(changed.stdout).toMatch(/--beside/);
      expect(realpathSync(home)).toBeTruthy();
    },
  );
  it(
    'checks a .tar.gz against its manifest: the manifest first, every entry ' + 'listed with its size, none missing',
    () => {
      const { home, state } = setup([]);
      const dir = tempDir();
      const src = join(dir, 'src');
      mkdirSync(join(src, 'session'), { recursive: true });
      const jsonl = '{"x":1}\n';
      const meta = JSON.stringify({ key: 'sk_v1_t' });
      writeFileSync(join(src, 'session', 'sk_v1_t.jsonl'), jsonl);
      writeFileSync(join(src, 'session', 'sk_v1_t.meta.json'), meta);
      const manifest = (files: unknown[]) => ({
        format: 'picoclaw-guard-session-archive',
        version: 2,
        kind: 'session',
        archived_at: '2026-11-30T12:00:00Z',
        home: realpathSync(home),
        agent: 'main',
        sessions_dir: '/x',
        base: 'sk_v1_t',
        key: 'sk_v1_t',
        aliases: [],
        files,
        seahorse: null,
      });
      const entry = (role: string, name: string, body: string, bytes = Buffer.byteLength(body)) => ({
        role,
        name: `session/${name}`,
        bytes,
        sha256: sha(body),
      });
      const make = (name: string, m: unknown, order: string[]) => {
        writeFileSync(join(src, 'manifest.json'), JSON.stringify(m));
        const r = spawnSync('tar', ['-czf', join(dir, name), '-C', src, ...order]);
        expect(r.status).toBe(0);
        return join(dir, name);
      };
      const good = [entry('meta', 'sk_v1_t.meta.json', meta), entry('jsonl', 'sk_v1_t.jsonl', jsonl)];
      const all = ['manifest.json', 'session/sk_v1_t.meta.json', 'session/sk_v1_t.jsonl'];
      const cases: [string, unknown, string[], RegExp][] = [
        [
          'late-manifest.tar.gz',
          manifest(good),
          ['session/sk_v1_t.jsonl', 'manifest.json', 'session/sk_v1_t.meta.json'],
          /manifest\.json must be the first entry/,
        ],
        [
          'size.tar.gz',
          manifest([good[0], entry('jsonl', 'sk_v1_t.jsonl', jsonl, 4096)]),
          all,
          /"session\/sk_v1_t\.jsonl" holds 8 bytes, the manifest says 4096/,
        ],
        ['extra.tar.gz', manifest([good[0]]), all, /"session\/sk_v1_t\.jsonl" is not listed in the manifest/],
        [
          'missing.tar.gz',
          manifest(good),
          ['manifest.json', 'session/sk_v1_t.meta.json'],
          /"session\/sk_v1_t\.jsonl" is listed in the manifest but missing/,
        ],
        ['no-meta.tar.gz', manifest([good[1]]), ['manifest.json', 'session/sk_v1_t.jsonl'], /files has no meta file/],
        ['home.tar.gz', { ...manifest(good), home: 'relative/home' }, all, /home must be an absolute path/],
      ];
      for (const [name, m, order, want] of cases) {
        const p = make(name, m, order);
        const r = runCli(['restore', p, '--home', home, '--state-dir', state]);
        expect(r.code, `${name}: ${r.stderr}`).toBe(3);
        expect(r.stderr, name).toMatch(want);
      }
      const ok = make('ok.tar.gz', manifest(good), all);
      const r = runCli(['restore', ok, '--home', home, '--state-dir', state]);
      expect(r.code, r.stderr).toBe(0);
    },
  );
  it(
    'an archive of an earlier release and a newer .tar.gz of the same session: ' + 'the newer one is restored',
    async () => {
      const { home, sessionsDir, archive, state } = setup([old('sk_v1_legacy')]);
      await pass(home);
      legacyArchive(archive, '20260901T000000Z_main_sk_v1_legacy.session.json.gz', { sessions_dir: sessionsDir });
      const r = runCli(['restore', archive, '--home', home, '--state-dir', state, '--json']);
      expect(r.code, r.stderr).toBe(0);
      const entries = JSON.parse(r.stdout).entries as { action: string; archive: string }[];
      expect(entries.map((e) => `${e.action}:${e.archive.endsWith('.tar.gz') ? 'tar' : 'json'}`).sort()).toEqual([
        'other_life:json',
        'restored:tar',
      ]);
    },
  );
});
