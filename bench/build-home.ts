import { buildSampleHome, type SampleOptions } from '../dev/sample/builder.js';
import { sqlite } from '../src/io/sqlite.js';
import { treeBytes } from './lib.js';

/**
 * Child process of the suite: builds one sample home (dev/sample/builder.ts) and prints
 * what it holds as one JSON line. Run apart so that the gigabyte homes' build memory never
 * sits in the process that measures.
 *
 *   node dist/bench/build-home.js '{"dir": "...", "sessions": 2000, ...}'
 */
export interface BuiltHome {
  home: string;
  seahorsePath: string | null;
  sessions: number;
  sessionsInSeahorse: number;
  jsonlBytes: number;
  jsonlFiles: number;
  metaFiles: number;
  seahorseBytes: number;
  conversations: number;
  messages: number;
  buildMs: number;
}

const opts = JSON.parse(process.argv[2] ?? '{}') as SampleOptions;
const t0 = performance.now();
const s = buildSampleHome(opts);
const buildMs = performance.now() - t0;
let jsonlBytes = 0;
let jsonlFiles = 0;
let metaFiles = 0;
for (const a of s.agents) {
  const j = treeBytes(a.sessionsDir, (n) => n.endsWith('.jsonl'));
  jsonlBytes += j.bytes;
  jsonlFiles += j.files;
  metaFiles += treeBytes(a.sessionsDir, (n) => n.endsWith('.meta.json')).files;
}
let conversations = 0;
let messages = 0;
let seahorseBytes = 0;
if (s.seahorsePath) {
  const Database = sqlite();
  const db = new Database(s.seahorsePath, { readonly: true });
  conversations = (db.prepare('SELECT COUNT(*) AS n FROM conversations').get() as { n: number }).n;
  messages = (db.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
  db.close();
  seahorseBytes = treeBytes(s.agents[0]!.sessionsDir, (n) => n.startsWith('seahorse.db')).bytes;
}
const out: BuiltHome = {
  home: s.home,
  seahorsePath: s.seahorsePath,
  sessions: s.sessions.length,
  sessionsInSeahorse: s.sessions.filter((x) => x.inSeahorse).length,
  jsonlBytes,
  jsonlFiles,
  metaFiles,
  seahorseBytes,
  conversations,
  messages,
  buildMs: Math.round(buildMs),
};
process.stdout.write(JSON.stringify(out) + '\n');
