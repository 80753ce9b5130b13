import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  existsSync,
  lstatSync,
} from 'node:fs';
import { join } from 'node:path';
import { sqlite } from '../../src/io/sqlite.js';
import { seahorseSchemaSql } from '../../dev/seahorse-schema.js';
import { DAY, type ModelSession } from './model.js';
import type { Scenario, SimSession, When } from './scenario.js';

/** Builds a scenario's PicoClaw home on disk, and says what it wrote (the model's input). */

export const NOW = Date.parse('2026-11-30T12:00:00Z');
export const AHEAD_MS = 5 * 365 * DAY;

export interface BuiltSession {
  id: string;
  agent: number;
  dir: string;
  folder: string;
  base: string;
  key: string;
  sim: SimSession;
  metaPath: string;
  jsonlPath: string;
  timeMs: number | null;
  aliases: string[];
  conversation: string | null;
  /** A hard-linked transcript's other session's time (its last line is that session's). */
  linkedTime?: number | null;
}

export interface BuiltHome {
  home: string;
  dirs: string[];
  dbPath: string;
  sessions: BuiltSession[];
  model: ModelSession[];
  /** Mount points to undo. */
  mounts: string[];
  nowMs: number;
}

export const sanitize = (k: string) => k.replace(/[:/\\]/g, '_');
const hex = (s: string, n = 64) => createHash('sha256').update(s).digest('hex').slice(0, n);
const goTime = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const sqlTime = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

function keyOf(s: SimSession, i: number, seed: string): string {
  switch (s.keyKind) {
    case 'opaque':
      return `sk_v1_${hex(`${seed}/${i}`)}`;
    case 'legacy':
      return `agent:main:telegram:direct:${1000 + i}`;
    case 'cron':
      return `agent:cron-${hex(`${seed}/job`, 16)}-${hex(`${seed}/u${i}`, 8)}-${hex(`${i}a`, 4)}-4${hex(`${i}b`, 3)}-8${hex(`${i}c`, 3)}-${hex(`${i}d`, 12)}`;
    case 'collide':
      // The file name of the session before it, when that one is a legacy key: both map to one file.
      return `agent_main_telegram_direct_${1000 + i - 1}`;
    case 'case':
      return `sk_v1_${hex(`${seed}/${i - 1}`).toUpperCase()}`;
    case 'nfd':
      return i % 2 === 0 ? `agent:main:caf\u00e9:${i >> 1}` : `agent:main:cafe\u0301:${i >> 1}`;
    case 'long':
      return `sk_v1_${'l'.repeat(200)}${i}`;
  }
}

function timeOf(w: When, i: number, nowMs: number): number | null {
  switch (w.kind) {
    case 'age':
      return nowMs - w.days * DAY - (i + 1) * 1000;
    case 'undated':
      return null;
    case 'pre2024':
      return Date.UTC(2023, 4, 1) + i * 1000;
    case 'future':
      return nowMs + 10 * DAY + i * 1000;
  }
}

function wrongTypeMeta(key: string, i: number, t: string): string {
  const base: Record<string, unknown> = { key, summary: '', skip: 0, count: 1, created_at: t, updated_at: t };
  switch (i % 5) {
    case 0:
      base.count = '1';
      break;
    case 1:
      base.key = 12345;
      break;
    case 2:
      base.updated_at = 'yesterday';
      break;
    case 3:
      base.aliases = [7];
      break;
    case 4:
      return JSON.stringify(base, null, 2).replace('"skip": 0', '"skip": 1.0');
  }
  return JSON.stringify(base, null, 2);
}

/** The agents' ids, by index (BuiltSession.agent). */
export const AGENT_IDS = ['main', 'a1', 'a2'];

/**
 * The folder of agent `a`: main's is <home>/workspace/sessions, the others' <home>/ws-a<N>/sessions.
 * Shared: agent 1's workspace is agent 0's (a symlink), or its sessions folder is agent 0's bind-mounted.
 */
export function buildHome(root: string, sc: Scenario, seed: string, root_: boolean, mounts: string[] = []): BuiltHome {
  const home = join(root, 'home');
  const outside = join(root, 'outside');
  mkdirSync(outside, { recursive: true });
  const agentIds = AGENT_IDS.slice(0, sc.agents);
  const dirs: string[] = [];
  for (let a = 0; a < sc.agents; a++) {
    const ws = a === 0 ? join(home, 'workspace') : join(home, `ws-a${a}`);
    if (a === 1 && sc.share === 'symlink') {
      mkdirSync(home, { recursive: true });
      symlinkSync('workspace', ws);
    } else mkdirSync(join(ws, 'sessions'), { recursive: true });
    if (a === 1 && sc.share === 'bind' && root_) {
      execFileSync('mount', ['--bind', join(home, 'workspace', 'sessions'), join(ws, 'sessions')]);
      mounts.push(join(ws, 'sessions'));
    }
    dirs.push(join(ws, 'sessions'));
  }
  writeFileSync(
    join(home, 'config.json'),
    JSON.stringify({
      agents: {
        defaults: { context_manager: 'seahorse', workspace: join(home, 'workspace') },
        list: agentIds.map((id, a) => (a === 0 ? { id, default: true } : { id, workspace: join(home, `ws-a${a}`) })),
      },
    }),
  );
  const folderOf = (a: number) => realpathSync(dirs[a === 1 && sc.share === 'bind' ? 0 : a]!);
  const nowMs = sc.fault === 'clock_ahead' ? NOW + AHEAD_MS : NOW;
  // Sessions written under the clock that is now ahead: the first few valid, regular ones.
  let bad = sc.fault === 'clock_ahead' ? sc.writtenUnderBadClock : 0;
  const built: BuiltSession[] = [];
  sc.sessions.forEach((sim, i) => {
    const a = Math.min(sim.agent, sc.agents - 1);
    const dir = dirs[a]!;
    const key = keyOf(sim, i, seed);
    const base = sanitize(key);
    let t = timeOf(sim.when, i, NOW);
    if (bad > 0 && sim.meta === 'valid' && sim.jsonl === 'regular') {
      t = NOW + AHEAD_MS - (i + 1) * 3_600_000;
      bad--;
    }
    built.push({
      id: `${folderOf(a)}/${base}`,
      agent: a,
      dir,
      folder: folderOf(a),
      base,
      key,
      sim,
      metaPath: join(dir, `${base}.meta.json`),
      jsonlPath: join(dir, `${base}.jsonl`),
      timeMs: t,
      aliases: [],
      conversation: null,
    });
  });
  // The last writer of a file is the session that lives there (keys that collide after sanitizeKey).
  const byId = new Map<string, BuiltSession>();
  for (const b of built) byId.set(b.id, b);
  const live = [...byId.values()];
  // Aliases: session i listed by session aliasOf (same folder, both valid).
  live.forEach((b) => {
    if (b.sim.aliasOf === null) return;
    const owner = live[b.sim.aliasOf % live.length]!;
    if (owner === b || owner.folder !== b.folder) return;
    owner.aliases.push(b.key);
  });
  if (sc.sharedConversation) {
    const claim = live.filter((b) => b.sim.meta === 'valid').slice(0, 2);
    if (claim.length === 2) for (const b of claim) b.aliases.push('agent:main:shared:1');
  }
  for (const [i, b] of live.entries()) {
    const t = b.timeMs;
    const stamp = t === null ? '0001-01-01T00:00:00Z' : goTime(t);
    const aliases = b.key.startsWith('sk_v1_') ? ['agent:main:main', ...b.aliases] : b.aliases;
    let metaText: string;
    switch (b.sim.meta) {
      case 'valid':
        metaText = JSON.stringify(
          { key: b.key, summary: '', skip: 0, count: 2, created_at: stamp, updated_at: stamp, aliases },
          null,
          2,
        );
        break;
      case 'corrupt':
        metaText = `{"key": ${JSON.stringify(b.key)}, `;
        break;
      case 'wrong_type':
        metaText = wrongTypeMeta(b.key, i, stamp);
        break;
      case 'empty':
        metaText = '';
        break;
      case 'no_key':
        metaText = JSON.stringify({ summary: '', count: 1, updated_at: stamp });
        break;
    }
    writeFileSync(b.metaPath, metaText);
    const line = (n: number) =>
      JSON.stringify({
        role: n % 2 ? 'assistant' : 'user',
        content: `message ${n} of ${b.key}`,
        ...(t !== null ? { created_at: goTime(t) } : {}),
      });
    const body = [line(0), line(1)].join('\n') + '\n';
    const mtime = (t ?? NOW - 100 * DAY) / 1000;
    switch (b.sim.jsonl) {
      case 'regular':
        writeFileSync(b.jsonlPath, body);
        break;
      case 'empty':
        writeFileSync(b.jsonlPath, '');
        break;
      case 'missing':
        break;
      case 'symlink': {
        const target = join(outside, `${b.base}.jsonl`);
        writeFileSync(target, body);
        symlinkSync(target, b.jsonlPath);
        break;
      }
      case 'fifo':
        execFileSync('mkfifo', [b.jsonlPath]);
        break;
      case 'device':
        execFileSync('mknod', [b.jsonlPath, 'c', '1', '3']);
        break;
      case 'hardlink': {
        const prev = live
          .slice(0, i)
          .find((p) => p.dir === b.dir && p.sim.jsonl === 'regular' && existsSync(p.jsonlPath));
        if (prev) {
          linkSync(prev.jsonlPath, b.jsonlPath);
          b.linkedTime = prev.timeMs;
        } else writeFileSync(b.jsonlPath, body);
        break;
      }
    }
    utimesSync(b.metaPath, mtime, mtime);
    if (existsSync(b.jsonlPath) && lstatSync(b.jsonlPath).isFile()) utimesSync(b.jsonlPath, mtime, mtime);
  }
  // seahorse: in the default agent's folder.
  const dbPath = join(dirs[0]!, 'seahorse.db');
  const db = new (sqlite())(dbPath);
  db.pragma('journal_mode = WAL');
  db.exec(seahorseSchemaSql('current'));
  /** Each conversation written: its key and its messages' time (every message of one gets the same). */
  const convTimes = new Map<string, number>();
  const conv = (key: string, at: number, n = 2) => {
    const id = Number(db.prepare(`INSERT INTO conversations (session_key) VALUES (?)`).run(key).lastInsertRowid);
    convTimes.set(key, at);
    for (let m = 0; m < n; m++) {
      const mid = Number(
        db
          .prepare(
            `INSERT INTO messages (conversation_id, role, content, token_count, created_at) VALUES (?, 'user', ?, 3, ?)`,
          )
          .run(id, `text ${m} of ${key}`, sqlTime(at)).lastInsertRowid,
      );
      db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', ?, 0)`).run(
        mid,
        `t${m}`,
      );
    }
  };
  db.transaction(() => {
    for (const b of live)
      if (b.sim.seahorse && b.timeMs !== null && b.timeMs >= Date.UTC(2024, 0, 1) && b.sim.meta === 'valid') {
        try {
          conv(b.key, b.timeMs);
          b.conversation = b.key;
        } catch {
          // two sessions of one key in two folders: one conversation
        }
      }
    for (let o = 0; o < sc.orphans; o++) conv(`agent:main:gone:${o}`, NOW - (o * 50 + 5) * DAY);
    const claimants = live.filter((b) => b.aliases.includes('agent:main:shared:1'));
    if (claimants.length > 0) {
      const oldest = Math.min(...claimants.map((b) => b.timeMs ?? NOW));
      conv('agent:main:shared:1', Math.max(oldest - DAY, Date.UTC(2024, 1, 1)));
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const model: ModelSession[] = live.map((b) => {
    const listed = b.sim.meta === 'valid';
    const ok = (t: number | null | undefined) => (t != null && t >= Date.UTC(2024, 0, 1) ? t : null);
    const aliases = b.key.startsWith('sk_v1_') ? ['agent:main:main', ...b.aliases] : b.aliases;
    // The seahorse messages of the conversations it claims (its key, its aliases but the main one) are its
    // activity too: the shared conversation dates an undated claimant (its time is the oldest claimant's
    // less a day, so it dates no dated one).
    const claimed = [b.key, ...aliases.filter((a) => !/^agent:[^:]+:main$/.test(a))].map((k) => ok(convTimes.get(k)));
    const times = [ok(b.timeMs), ok(b.linkedTime), ...claimed].filter((t): t is number => t !== null);
    const usable = times.length ? Math.max(...times) : null;
    return {
      id: b.id,
      folder: b.folder,
      key: b.key,
      listed,
      deletable: !['symlink', 'fifo', 'device'].includes(b.sim.jsonl),
      aliases: listed ? aliases : [],
      timeMs: listed ? usable : null,
    };
  });
  return { home, dirs, dbPath, sessions: live, model, mounts, nowMs };
}

/** Every regular file's bytes under the home's sessions folders (one entry per real folder). */
export function filesOf(b: BuiltHome): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const s of b.sessions)
    for (const p of [s.metaPath, s.jsonlPath]) {
      try {
        if (lstatSync(p).isFile()) out.set(p, readFileSync(p));
      } catch {
        // absent
      }
    }
  return out;
}

export function undoMounts(b: BuiltHome): void {
  for (const m of b.mounts.reverse()) {
    try {
      execFileSync('umount', [m]);
    } catch {
      execFileSync('umount', ['-l', m]);
    }
  }
}
