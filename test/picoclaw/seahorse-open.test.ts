import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSeahorseRead, readConversations, seahorseReadMode } from '../../src/picoclaw/seahorse.js';
import { addConversation, createSeahorse } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * How a dry-run opens seahorse.db: `immutable` only when nothing can be writing it,
 * else a plain read-only open that sees what an --apply pass would see.
 */
const times = (n: number) => Array.from({ length: n }, (_, i) => `2026-01-01 00:00:${String(i % 60).padStart(2, '0')}`);

describe('opening seahorse.db for a dry-run', () => {
  it('a symlinked seahorse.db whose WAL sits beside the real file: the WAL is read', () => {
    const d = tempDir();
    const realDir = join(d, 'data');
    const realDb = join(realDir, 'seahorse.db');
    // The gateway: connected, WAL mode, nothing checkpointed into the main file yet.
    const writer = createSeahorse(realDb);
    writer.pragma('wal_autocheckpoint = 0');
    addConversation(writer, 'agent:main:telegram:1', times(40));
    try {
      expect(existsSync(`${realDb}-wal`)).toBe(true);
      const sessions = join(d, 'home', 'workspace', 'sessions');
      mkdirSync(sessions, { recursive: true });
      symlinkSync(realDb, join(sessions, 'seahorse.db'));
      const before = readdirSync(sessions);
      expect(seahorseReadMode(join(sessions, 'seahorse.db'))).toEqual({
        realPath: realDb,
        mode: 'readonly',
        writesBeside: true,
      });
      const r = openSeahorseRead(join(sessions, 'seahorse.db'));
      if (r.state !== 'open') throw new Error(`not open: ${JSON.stringify(r)}`);
      expect(r.mode).toBe('readonly');
      expect(readConversations(r.db)).toMatchObject([{ key: 'agent:main:telegram:1', messages: 40 }]);
      r.db.close();
      expect(readdirSync(sessions)).toEqual(before);
    } finally {
      writer.close();
    }
  });

  it('a WAL database nobody has open (no -wal, no -shm): immutable, and nothing is created beside it', () => {
    const d = tempDir();
    const db = join(d, 'seahorse.db');
    const w = createSeahorse(db);
    addConversation(w, 'k', times(3));
    w.close();
    expect(readdirSync(d)).toEqual(['seahorse.db']);
    const r = openSeahorseRead(db);
    if (r.state !== 'open') throw new Error('not open');
    expect(r.mode).toBe('immutable');
    expect(readConversations(r.db)).toMatchObject([{ messages: 3 }]);
    r.db.close();
    expect(readdirSync(d)).toEqual(['seahorse.db']);
  });

  it(
    'rollback-journal (DELETE) mode with a writer busy meanwhile: read-only ' + 'with locking, every read consistent',
    async () => {
      const d = tempDir();
      const db = join(d, 'seahorse.db');
      const w = createSeahorse(db);
      w.pragma('journal_mode = DELETE');
      w.transaction(() => {
        for (let i = 0; i < 20; i++) addConversation(w, `seed-${i}`, times(30));
      })();
      w.close();
      expect(seahorseReadMode(db).mode).toBe('readonly');

      // A writer in another process: inserts and deletes conversations in a loop until told to stop.
      const betterSqlite = fileURLToPath(new URL('../../node_modules/better-sqlite3/lib/index.js', import.meta.url));
      const script =
        `
      const Database = require(${JSON.stringify(betterSqlite)});
      const db = new Database(${JSON.stringify(db)}, { timeout: 5000 });
      db.pragma('synchronous = OFF');
      let n = 0; let stop = false;
      process.stdin.on('data', () => { stop = true; });
      const ins = db.prepare("INSERT INTO messages (conversation_id, role,` +
        ` content, token_count) VALUES (?, 'user', ?, 1)");
      function step() {
        if (stop) { db.close(); console.log('wrote ' + n); return; }
        db.transaction(() => {
          const c = db.prepare("INSERT INTO conversations (session_key) ` +
        `VALUES (?)").run('w-' + n).lastInsertRowid;
          for (let i = 0; i < 10; i++) ins.run(c, 'x'.repeat(200));
          if (n > 2) db.prepare("DELETE FROM messages WHERE conversation_id ` +
        `IN (SELECT conversation_id FROM conversations WHERE session_key = ?)").run('w-' ` +
        `+ (n - 2));
        })();
        n++;
        if (n === 1) console.log('writing');
        setTimeout(step, 2);
      }
      step();`;
      const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      const writing = new Promise<void>((r) =>
        child.stdout.on('data', (c: string) => {
          out += c;
          if (out.includes('writing')) r();
        }),
      );
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      await writing;
      try {
        for (let i = 0; i < 20; i++) {
          const r = openSeahorseRead(db);
          if (r.state !== 'open') throw new Error(`read ${i}: ${JSON.stringify(r)}`);
          expect(r.mode).toBe('readonly');
          const convs = readConversations(r.db);
          expect(convs.filter((c) => c.key.startsWith('seed-')).every((c) => c.messages === 30)).toBe(true);
          expect(r.db.pragma('quick_check', { simple: true })).toBe('ok');
          r.db.close();
        }
      } finally {
        child.stdin.end('stop\n');
      }
      expect(await exited).toBe(0);
      expect(out).toMatch(/wrote \d+/);
    },
  );
});
