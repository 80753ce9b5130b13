/**
 * Peak memory of `prune --apply --archive` on one large session, and of `restore` of
 * its archive. Each run is a separate CLI process measured by the kernel (GNU time's
 * %M, else VmHWM polled from /proc); the home is copied fresh for every run.
 *
 *   npm run build
 *   node dist/bench/archive-rss.js [--mb 50] [--rows 5000] [--runs 3] [--cli dist/src/cli.js] [--tmp DIR]
 *
 * --cli points at another build (an older commit) to compare; its archive may be the
 * older `.session.json.gz` format.
 */
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  openSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sqlite } from '../src/io/sqlite.js';
import { seahorseSchemaSql } from '../dev/seahorse-schema.js';
import { CLI, cliEnv, fmtRss, hasGnuTime, median, runChild, setTmpBase } from './lib.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

const MB = Number(arg('mb', '50'));
const ROWS = Number(arg('rows', '5000'));
const RUNS = Number(arg('runs', '3'));
const cli = resolve(arg('cli', CLI));
const base = mkdtempSync(join(arg('tmp', tmpdir()), 'archive-rss-'));
setTmpBase(base);

/** A home with one large old session (MB of JSONL, ROWS seahorse messages) and one recent one. */
function buildTemplate(dir: string): { jsonlBytes: number; dbBytes: number } {
  const sessions = join(dir, 'workspace', 'sessions');
  mkdirSync(sessions, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ agents: { defaults: { context_manager: 'seahorse' } } }));
  const big = join(sessions, 'sk_v1_big.jsonl');
  const fd = openSync(big, 'w');
  const pad = 'x'.repeat(64 * 1024 - 100);
  let lines = 0;
  let bytes = 0;
  while (bytes < MB * 1024 * 1024) {
    const line =
      JSON.stringify({ role: 'tool', content: `${lines} ${pad}`, created_at: '2026-08-01T10:00:00Z' }) + '\n';
    writeSync(fd, line);
    bytes += Buffer.byteLength(line);
    lines++;
  }
  closeSync(fd);
  writeFileSync(
    join(sessions, 'sk_v1_big.meta.json'),
    JSON.stringify({
      key: 'sk_v1_big',
      created_at: '2026-08-01T10:00:00Z',
      updated_at: '2026-08-01T10:00:00Z',
      count: lines,
      skip: 0,
    }),
  );
  writeFileSync(
    join(sessions, 'sk_v1_recent.jsonl'),
    JSON.stringify({ role: 'user', content: 'hi', created_at: '2026-11-30T10:00:00Z' }) + '\n',
  );
  writeFileSync(
    join(sessions, 'sk_v1_recent.meta.json'),
    JSON.stringify({
      key: 'sk_v1_recent',
      created_at: '2026-11-30T10:00:00Z',
      updated_at: new Date().toISOString(),
      count: 1,
      skip: 0,
    }),
  );
  const dbPath = join(sessions, 'seahorse.db');
  const db = new (sqlite())(dbPath);
  db.pragma('journal_mode = WAL');
  db.exec(seahorseSchemaSql('current'));
  const conv = Number(db.prepare(`INSERT INTO conversations (session_key) VALUES ('sk_v1_big')`).run().lastInsertRowid);
  const msg = db.prepare(
    `INSERT INTO messages (conversation_id, role, content, token_count, created_at,` +
      ` model_name) VALUES (?, 'tool', ?, 500, '2026-08-01 10:00:00', 'llama3')`,
  );
  const part = db.prepare(`INSERT INTO message_parts (message_id, type, text, ordinal) VALUES (?, 'text', ?, 0)`);
  const text = 'lorem ipsum dolor sit amet '.repeat(75);
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) part.run(Number(msg.run(conv, `${i} ${text}`).lastInsertRowid), `${i}`);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { jsonlBytes: bytes, dbBytes: statSync(dbPath).size };
}

const template = join(base, 'template');
const built = buildTemplate(template);
const plain: number[] = [];
const prune: number[] = [];
const restore: number[] = [];
let archiveBytes = 0;
for (let i = 0; i < RUNS; i++) {
  const home = join(base, `home-${i}`);
  const archive = join(base, `archive-${i}`);
  const state = join(base, `state-${i}`);
  const args = [
    'prune',
    '--apply',
    '--home',
    home,
    '--max-age-days',
    '30',
    '--max-sessions',
    '0',
    '--max-db-size-mb',
    '0',
    '--no-vacuum',
    '--state-dir',
    state,
    '--json',
  ];
  // The same pass without an archive: what the archive adds is the difference.
  cpSync(template, home, { recursive: true });
  const q = await runChild(process.execPath, [cli, ...args], { env: cliEnv(state), capture: true });
  if (q.code !== 0) throw new Error(`prune exited ${q.code}: ${q.stderr.slice(-1000)}`);
  plain.push(q.rssKb ?? NaN);
  rmSync(home, { recursive: true, force: true });
  cpSync(template, home, { recursive: true });
  const p = await runChild(process.execPath, [cli, ...args, '--archive', archive], {
    env: cliEnv(state),
    capture: true,
  });
  if (p.code !== 0) throw new Error(`prune exited ${p.code}: ${p.stderr.slice(-1000)}`);
  const files = readdirSync(archive);
  if (files.length !== 1) throw new Error(`expected one archive, found ${files.join(', ')}`);
  archiveBytes = statSync(join(archive, files[0]!)).size;
  prune.push(p.rssKb ?? NaN);
  const r = await runChild(process.execPath, [cli, 'restore', archive, '--home', home], {
    env: cliEnv(state),
    capture: true,
  });
  if (r.code !== 0) throw new Error(`restore exited ${r.code}: ${r.stderr.slice(-1000)}`);
  restore.push(r.rssKb ?? NaN);
  rmSync(home, { recursive: true, force: true });
  rmSync(archive, { recursive: true, force: true });
}
rmSync(base, { recursive: true, force: true });
const out = {
  cli,
  measured_by: hasGnuTime() ? 'GNU time %M' : 'VmHWM polled',
  session_jsonl_mib: +(built.jsonlBytes / 2 ** 20).toFixed(1),
  seahorse_rows: ROWS,
  seahorse_db_mib: +(built.dbBytes / 2 ** 20).toFixed(1),
  archive_mib: +(archiveBytes / 2 ** 20).toFixed(1),
  runs: RUNS,
  prune_peak_rss: `${fmtRss(median(plain))} (${plain.map(fmtRss).join(', ')})`,
  prune_archive_peak_rss: `${fmtRss(median(prune))} (${prune.map(fmtRss).join(', ')})`,
  restore_peak_rss: `${fmtRss(median(restore))} (${restore.map(fmtRss).join(', ')})`,
  prune_archive_peak_kb: median(prune),
  restore_peak_kb: median(restore),
};
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
