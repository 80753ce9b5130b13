import { chmodSync, mkdirSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inventoryJson, openInventory, renderSessions } from '../../src/commands/sessions.js';
import { writeJson } from '../../src/commands/json-stream.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { workingDirs } from '../../src/io/working-db.js';
import type { Hold } from '../../src/state/holds.js';
import type { Pin } from '../../src/state/pins.js';
import * as reference from '../support/sessions-reference.js';
import { addConversation, createSeahorse, sanitize } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * The `sessions` report read from the working database (src/picoclaw/inventory/working.ts) says
 * byte for byte what the in-memory inventory said (test/support/sessions-reference.ts, the
 * report as it was), on homes of any shape: ties in time, keys that differ by case or only
 * outside ASCII, a lone surrogate, duplicate keys, aliases, cron runs, undated sessions, bad
 * metas, metas and transcripts that are missing, symlinks, folders, FIFOs or unreadable (to an
 * ordinary user), orphan transcripts and
 * conversations, seahorse rows tied by key or alias, pins and holds, two agents' folders.
 */

const NOW = new Date('2026-11-30T12:00:00Z');
const UUID = '0b5c4a8e-1d2f-4c3b-9a7e-6f5d4c3b2a10';
const KEYS = [
  'agent:main:main',
  'agent:main:telegram:direct:7',
  'agent:main:telegram:direct:7B',
  'agent:main:Telegram:direct:7',
  'agent:main:tg:é',
  'agent:main:tg:e',
  'agent:main:tg:你好',
  'agent:main:tg:😀',
  'agent:main:x\ud800y',
  `agent:cron-job1-${UUID}`,
  `agent:cron-job2-${UUID.replace('0b', '1c')}`,
  'sk_v1_ab',
  'sk_v1_AB',
  'sk_v1-ab',
  'agent:ops:main',
  'Zeta',
];
const TIMES = [
  null,
  '2026-11-29T10:00:00Z',
  '2026-11-29T10:00:00.5+02:00',
  '2026-11-20T08:00:00Z',
  '2026-10-01T00:00:00.123456789Z',
  '0001-01-01T00:00:00Z',
  'not a time',
];
const SQL_TIMES = ['2026-11-29 09:00:00', '2026-11-29 08:00:00', '2026-11-01 00:00:00', 'garbage'];

type Shape =
  | 'ok'
  | 'corrupt'
  | 'no_jsonl'
  | 'jsonl_symlink'
  | 'jsonl_dir'
  | 'jsonl_fifo'
  | 'jsonl_unreadable'
  | 'only_jsonl'
  | 'meta_symlink'
  | 'meta_dir'
  | 'meta_fifo'
  | 'meta_unreadable'
  | 'dup_file';

const session = fc.record({
  key: fc.constantFrom(...KEYS),
  updated: fc.constantFrom(...TIMES),
  created: fc.constantFrom(...TIMES),
  lastLine: fc.constantFrom(...TIMES),
  aliases: fc.array(fc.constantFrom(...KEYS), { maxLength: 3 }),
  shape: fc.constantFrom<Shape>(
    'ok',
    'ok',
    'ok',
    'corrupt',
    'no_jsonl',
    'jsonl_symlink',
    'jsonl_dir',
    'jsonl_fifo',
    'jsonl_unreadable',
    'only_jsonl',
    'meta_symlink',
    'meta_dir',
    'meta_fifo',
    'meta_unreadable',
    'dup_file',
  ),
  second: fc.boolean(),
  scope: fc.constantFrom(null, 'main', 'ops'),
});
const conversation = fc.record({
  key: fc.constantFrom(...KEYS, 'agent:main:nobody', 'agent:main:gone'),
  times: fc.array(fc.constantFrom(...SQL_TIMES), { maxLength: 3 }),
});
const homeShape = fc.record({
  sessions: fc.array(session, { maxLength: 14 }),
  conversations: fc.uniqueArray(conversation, { maxLength: 10, selector: (c) => c.key }),
  seahorse: fc.boolean(),
  extras: fc.array(fc.constantFrom('.tmp-1', 'session-x.tmp', 'old.json', 'old.json.migrated', 'notes.txt'), {
    maxLength: 3,
  }),
  pins: fc.array(fc.record({ agent: fc.constantFrom('main', 'ops'), key: fc.constantFrom(...KEYS) }), { maxLength: 3 }),
  holds: fc.array(fc.record({ agent: fc.constantFrom('main', 'ops'), key: fc.constantFrom(...KEYS) }), {
    maxLength: 2,
  }),
});

function build(home: string, h: Home): void {
  const main = join(home, 'workspace', 'sessions');
  const ops = join(home, 'workspace-ops', 'sessions');
  mkdirSync(main, { recursive: true });
  mkdirSync(ops, { recursive: true });
  writeFileSync(
    join(home, 'config.json'),
    JSON.stringify({
      agents: {
        defaults: { context_manager: 'seahorse', workspace: join(home, 'workspace') },
        list: [
          { id: 'main', default: true },
          { id: 'ops', workspace: join(home, 'workspace-ops') },
        ],
      },
    }),
  );
  const used = new Set<string>();
  h.sessions.forEach((s, i) => {
    const dir = s.second ? ops : main;
    let base = s.shape === 'dup_file' ? `${sanitize(s.key)}-${i}` : sanitize(s.key);
    if (used.has(`${dir}/${base}`)) base = `${base}-${i}`;
    used.add(`${dir}/${base}`);
    const line = (t: string | null) =>
      JSON.stringify({ role: 'user', content: `m${i}`, ...(t ? { created_at: t } : {}) });
    const meta = JSON.stringify({
      key: s.key,
      count: 2,
      skip: 0,
      ...(s.created ? { created_at: s.created } : {}),
      ...(s.updated ? { updated_at: s.updated } : {}),
      ...(s.aliases.length > 0 ? { aliases: s.aliases } : {}),
      ...(s.scope ? { scope: { agent_id: s.scope } } : {}),
    });
    const jsonl = join(dir, `${base}.jsonl`);
    const metaPath = join(dir, `${base}.meta.json`);
    if (s.shape === 'jsonl_symlink') symlinkSync('/etc/hostname', jsonl);
    else if (s.shape === 'jsonl_dir') mkdirSync(jsonl, { recursive: true });
    else if (s.shape === 'jsonl_fifo') execFileSync('mkfifo', [jsonl]);
    else if (s.shape !== 'no_jsonl') writeFileSync(jsonl, `${line(s.created)}\n${line(s.lastLine)}\n`);
    // Unreadable only to an ordinary user (root reads it all the same): both readers must agree either way.
    if (s.shape === 'jsonl_unreadable') chmodSync(jsonl, 0);
    if (s.shape === 'only_jsonl') return;
    if (s.shape === 'meta_symlink') {
      writeFileSync(join(dir, `${base}.target`), meta);
      symlinkSync(`${base}.target`, metaPath);
    } else if (s.shape === 'meta_dir') mkdirSync(metaPath);
    else if (s.shape === 'meta_fifo') execFileSync('mkfifo', [metaPath]);
    else writeFileSync(metaPath, s.shape === 'corrupt' ? '{"key": ' : meta);
    if (s.shape === 'meta_unreadable') chmodSync(metaPath, 0);
  });
  for (const e of h.extras) writeFileSync(join(main, e), 'x');
  if (h.seahorse) {
    const db = createSeahorse(join(main, 'seahorse.db'));
    for (const c of h.conversations) addConversation(db, c.key, c.times);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
}

interface Home {
  sessions: {
    key: string;
    updated: string | null;
    created: string | null;
    lastLine: string | null;
    aliases: string[];
    shape: Shape;
    second: boolean;
    scope: string | null;
  }[];
  conversations: { key: string; times: string[] }[];
  seahorse: boolean;
  extras: string[];
  pins: { agent: string; key: string }[];
  holds: { agent: string; key: string }[];
}

function streamed(v: unknown): string {
  const parts: string[] = [];
  writeJson(v, (s) => parts.push(s));
  return parts.join('');
}

describe('the sessions report from the working database', () => {
  it('says byte for byte what the in-memory inventory said, on homes of any shape (property)', () => {
    fc.assert(
      fc.property(homeShape, (h) => {
        const home = tempDir();
        build(home, h);
        const hh = discoverHome({ home, env: {} });
        const pins: Pin[] = h.pins.map((p) => ({ home, ...p, pinned_at: '2026-11-01T00:00:00Z', note: null }));
        const holds: Hold[] = h.holds.map((x) => ({
          home,
          ...x,
          restored_at: '2026-11-29T00:00:00Z',
          until: '2026-12-29T00:00:00Z',
        }));
        const old = buildInventory(hh);
        const work = openInventory(hh);
        try {
          expect(streamed(inventoryJson(work, NOW, holds, pins))).toBe(
            JSON.stringify(reference.inventoryJson(old, NOW, holds, pins), null, 2) + '\n',
          );
          for (const width of [60, 100, Infinity])
            expect(renderSessions(work, NOW, width, holds, 'a problem', pins)).toBe(
              reference.renderSessions(old, NOW, width, holds, 'a problem', pins),
            );
        } finally {
          work.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('leaves no file behind: its file has no name once open, and a name a killed command left goes next time', () => {
    const home = tempDir();
    build(home, { sessions: [], conversations: [], seahorse: false, extras: [], pins: [], holds: [] });
    const dir = tempDir();
    // A working file whose process is gone (a child that exited): swept by the next open.
    const dead = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']));
    writeFileSync(join(dir, `picoclaw-guard-work-${dead}-abc.db`), '');
    writeFileSync(join(dir, `picoclaw-guard-work-${process.pid}-live.db`), '');
    expect(readdirSync(dir).length).toBe(2);
    const work = openInventory(discoverHome({ home, env: {} }), [dir]);
    expect(work.path.startsWith(dir)).toBe(true);
    expect(readdirSync(dir)).toEqual([`picoclaw-guard-work-${process.pid}-live.db`]);
    work.close();
    expect(readdirSync(dir)).toEqual([`picoclaw-guard-work-${process.pid}-live.db`]);
  });

  it('frees its file when the process is killed in the middle of a report', async () => {
    // A child lists a home into a pipe it never drains, and is killed while it waits to write.
    const home = tempDir();
    build(home, {
      sessions: Array.from({ length: 40 }, (_, i) => ({
        key: `agent:main:telegram:direct:${i}`,
        updated: '2026-11-29T10:00:00Z',
        created: null,
        lastLine: null,
        aliases: [],
        shape: 'ok' as const,
        second: false,
        scope: null,
      })),
      conversations: [],
      seahorse: false,
      extras: [],
      pins: [],
      holds: [],
    });
    const dir = tempDir();
    const { spawn } = await import('node:child_process');
    const code = `
      const { discoverHome } = await import(${JSON.stringify(new URL('../../dist/src/picoclaw/home.js', import.meta.url).href)});
      const { openInventory } = await import(${JSON.stringify(new URL('../../dist/src/commands/sessions.js', import.meta.url).href)});
      const inv = openInventory(discoverHome({ home: ${JSON.stringify(home)}, env: {} }), [${JSON.stringify(dir)}]);
      console.log('open');
      for (const s of inv.byActivity()) {}
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (c) => reject(new Error(`the child ended first (${c})`)));
    });
    // Its file is open and has no name: the kernel frees it when the process ends, however it ends.
    expect(readdirSync(dir)).toEqual([]);
    const open = readdirSync(`/proc/${child.pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${child.pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(open.filter((l) => l.startsWith(`${dir}/picoclaw-guard-work-${child.pid}-`))).toEqual([
      expect.stringMatching(/\.db \(deleted\)$/),
    ]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(readdirSync(dir)).toEqual([]);
  });

  it('goes to a tmpfs folder when one has room, never to the PicoClaw home', () => {
    const dirs = workingDirs({ XDG_RUNTIME_DIR: '/dev/shm' });
    expect(dirs[dirs.length - 1]).not.toContain('picoclaw');
    if (dirs.length > 1) expect(dirs[0]).toBe('/dev/shm');
  });
});
