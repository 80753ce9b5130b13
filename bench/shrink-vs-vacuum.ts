import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildSampleHome } from '../dev/sample/builder.js';
import { systemClock } from '../src/io/clock.js';
import { sqlite } from '../src/io/sqlite.js';
import { downGateway } from '../dev/gateway-state.js';
import { dbFileBytes, readPages } from '../src/picoclaw/seahorse.js';
import { runPrunePass } from '../src/prune/pass.js';
import { shrinkOnline } from '../src/prune/apply/shrink.js';
import { foldFtsTombstones, runVacuum } from '../src/prune/apply/vacuum.js';

/**
 * Online shrink against a full VACUUM of the same database (docs/schedule-and-shrink.md):
 * a sample home's seahorse.db, converted to auto_vacuum INCREMENTAL (what the pre-start pass's
 * VACUUM does with shrink_online; timed), the oldest sessions deleted by a real `prune --apply`
 * pass with VACUUM off, then identical copies: one given its space back by the guard's full
 * VACUUM (FTS optimize + VACUUM + TRUNCATE checkpoint, what an offline pass runs), the other by
 * shrinkOnline (incremental_vacuum in steps under the quiet-moment write lock, then a PASSIVE
 * checkpoint), once alone and once with the FTS merge first (what an online pass does when the
 * deletions left enough tombstones). Nothing else writes here; the live-gateway soak (--shrink)
 * measures it beside a writer.
 *
 *   npm run build:all && node dist/bench/shrink-vs-vacuum.js [--sessions 2000] [--max-age-days 60] [--runs 3]
 */
const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '2000' },
    'max-age-days': { type: 'string', default: '60' },
    runs: { type: 'string', default: '3' },
  },
});

const down = downGateway;

const dir = mkdtempSync(join(tmpdir(), 'pcg-shrink-bench-'));
const emptyConfig = join(dir, 'guard.json');
writeFileSync(emptyConfig, '{}\n');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summary = (
  xs: { ms: number; after: number; steps: number; merge: number; longest: number; returned: number }[],
) => ({
  median_ms: Math.round(median(xs.map((v) => v.ms))),
  bytes_after: xs[0]!.after,
  returned_bytes: xs[0]!.returned,
  steps: xs[0]!.steps,
  fts_merge_steps: xs[0]!.merge,
  longest_step_ms: Math.round(Math.max(...xs.map((v) => v.longest)) * 10) / 10,
});
try {
  const built = buildSampleHome({
    dir: join(dir, 'home'),
    seed: 8,
    sessions: Number(values.sessions),
    agents: 3,
    messagesPerSession: 40,
    toolResultBytes: 600,
    seahorse: true,
    spanDays: 120,
    now: Date.now(),
    pidFile: 'none',
  });
  const dbPath = built.seahorsePath!;
  const bytesBuilt = dbFileBytes(dbPath).total;
  let db = new (sqlite())(dbPath);
  const messages = (db.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
  db.pragma('auto_vacuum = INCREMENTAL');
  let t = performance.now();
  db.exec('VACUUM');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const conversionMs = performance.now() - t;
  db.close();
  const bytesConverted = dbFileBytes(dbPath).total;

  const r = await runPrunePass({
    home: built.home,
    env: { HOME: dir, PICOCLAW_GUARD_CONFIG: emptyConfig },
    apply: true,
    clock: systemClock,
    stateDir: join(dir, 'state'),
    probe: down,
    flags: { max_age_days: Number(values['max-age-days']), max_sessions: 0, max_db_size_mb: 0, vacuum: false },
  });
  const bytesDeleted = dbFileBytes(dbPath).total;
  db = new (sqlite())(dbPath, { readonly: true });
  const p = readPages(db);
  db.close();

  const vacuum: { ms: number; after: number }[] = [];
  type Shrunk = { ms: number; after: number; steps: number; merge: number; longest: number; returned: number };
  const shrink: Shrunk[] = [];
  const merged: Shrunk[] = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const a = join(dir, `a${i}.db`);
    const b = join(dir, `b${i}.db`);
    const c = join(dir, `c${i}.db`);
    copyFileSync(dbPath, a);
    copyFileSync(dbPath, b);
    copyFileSync(dbPath, c);
    db = new (sqlite())(a);
    t = performance.now();
    foldFtsTombstones(db);
    runVacuum(db);
    vacuum.push({ ms: performance.now() - t, after: dbFileBytes(a).total });
    db.close();
    for (const [f, foldFts, list] of [
      [b, false, shrink],
      [c, true, merged],
    ] as const) {
      db = new (sqlite())(f);
      const s = shrinkOnline(db, { stop: () => false, foldFts });
      db.close();
      list.push({
        ms: s.durationMs,
        after: dbFileBytes(f).total,
        steps: s.steps,
        merge: s.mergeSteps,
        longest: s.longestStepMs,
        returned: s.returnedBytes,
      });
    }
    for (const f of [a, b, c]) for (const x of [f, `${f}-wal`, `${f}-shm`]) rmSync(x, { force: true });
  }
  const out = {
    sessions: Number(values.sessions),
    messages,
    bytes_built: bytesBuilt,
    conversion_vacuum_ms: Math.round(conversionMs),
    bytes_converted: bytesConverted,
    deleted_sessions: r.totals.deleted_sessions,
    bytes_after_delete: bytesDeleted,
    free_pages: p.freelistCount,
    page_size: p.pageSize,
    full_vacuum: { median_ms: Math.round(median(vacuum.map((v) => v.ms))), bytes_after: vacuum[0]!.after },
    online_shrink: summary(shrink),
    online_shrink_with_fts_merge: summary(merged),
  };
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
