import { createHash } from 'node:crypto';
import { sqlite } from '../src/io/sqlite.js';
import { addConversation, handHome, type HandSession } from '../test/support/home.js';

/**
 * A home of one shape the sample homes (dev/sample/builder.ts) do not have: every session a scoped
 * direct chat (an `sk_v1_` key and the four aliases PicoClaw writes for one), all in the main
 * agent's one folder, each with a seahorse conversation of ten messages. Scoped sessions hold the
 * most of any in the inventory (their aliases), and one folder lists every file at once: the
 * heaviest shape per session for BENCHMARKS.md, memory (10h).
 *
 *   node dist/bench/scoped-home.js DIR SESSIONS      (the home is DIR; it must not exist yet)
 */
const [home, count] = process.argv.slice(2);
const n = Number(count);
if (!home || !Number.isInteger(n) || n < 1) {
  process.stderr.write('usage: node dist/bench/scoped-home.js DIR SESSIONS\n');
  process.exit(2);
}
const sessions: HandSession[] = [];
const t0 = Date.UTC(2026, 5, 1);
for (let i = 0; i < n; i++) {
  const chat = 100_000_000 + i * 7;
  // Ten minutes apart, with Go's nine-digit fractions, as PicoClaw writes them.
  const at = new Date(t0 + i * 600_000).toISOString().replace('Z', '123456Z');
  sessions.push({
    key: `sk_v1_${createHash('sha256').update(String(i)).digest('hex')}`,
    updated: at,
    created: at,
    lastLine: at,
    lines: 10,
    aliases: [
      'agent:main:main',
      `agent:main:direct:${chat}`,
      `agent:main:telegram:direct:${chat}`,
      `agent:main:telegram:default:direct:${chat}`,
    ],
  });
}
const { dbPath } = handHome(home, sessions);
const db = new (sqlite())(dbPath);
db.transaction(() => {
  for (const s of sessions) {
    const t = `${s.updated!.slice(0, 10)} ${s.updated!.slice(11, 19)}`;
    addConversation(db, s.key, Array<string>(10).fill(t), { contentBytes: 200 });
  }
})();
db.pragma('wal_checkpoint(TRUNCATE)');
db.close();
process.stdout.write(`${home}: ${n} scoped sessions, ${n} seahorse conversations of 10 messages\n`);
