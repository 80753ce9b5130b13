import { readFileSync } from 'node:fs';
import { openSeahorseWrite, dbFileBytes, readPages } from '../src/picoclaw/seahorse.js';
import { deleteConversationWithTriggers, SeahorseDeleter } from '../src/prune/apply/seahorse-delete.js';
import { foldFtsTombstones, MIN_RECLAIM_BYTES, MIN_RECLAIM_RATIO, runVacuum } from '../src/prune/apply/vacuum.js';

/**
 * Child process of the seahorse benchmark (items 2 and 3): one deletion on one copy of
 * seahorse.db, so that its peak RSS is the kernel's figure for exactly that work.
 *
 *   node dist/bench/seahorse-worker.js guard DB VICTIMS.json [--vacuum]
 *   node dist/bench/seahorse-worker.js triggers DB VICTIMS.json --sample-ms N --full-limit-ms N
 *
 * `guard` deletes the victims as `prune --apply` does while the gateway is stopped
 * (src/prune/apply/apply.ts: SeahorseDeleter with a 500 ms transaction target, each
 * conversation re-checked just before), then, with --vacuum, gives the space back the
 * way src/prune/apply/vacuum.ts does (FTS optimize, estimate, VACUUM) and always runs the
 * VACUUM, so that the estimate can be set against what it really gave back.
 *
 * `triggers` deletes the same victims the way PicoClaw does (plain deletes, its per-row
 * FTS triggers fire). That is quadratic, so it runs for --sample-ms first, predicts the
 * whole from that sample (each deleted row scans the FTS table, which shrinks as rows
 * go: cost = c × Σ rows-left), and only goes on when the prediction is under
 * --full-limit-ms. When it goes on, the prediction and the real time are both reported,
 * which checks the model on the sizes where the real figure exists.
 *
 * Both open the database as the guard does (src/picoclaw/seahorse.ts openSeahorseWrite:
 * foreign_keys OFF, as PicoClaw's own driver has it).
 */

const [mode, path, victimsFile, ...rest] = process.argv.slice(2);

/**
 * The kernel's high-water mark of this process so far (VmHWM, kB): read at the end of
 * each phase to say which phase set the peak. The peak itself is measured by the parent.
 */
function hwmKb(): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
const hwm: Record<string, number | null> = { opened: null };
const flag = (name: string) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : undefined;
};
const ids = JSON.parse(readFileSync(victimsFile!, 'utf8')) as number[];
const db = openSeahorseWrite(path!);
const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
const perConv = new Map<number, number>();
for (const r of db
  .prepare('SELECT conversation_id AS c, COUNT(*) AS n FROM messages GROUP BY conversation_id')
  .all() as { c: number; n: number }[])
  perConv.set(r.c, r.n);
const totalMessages = count('SELECT COUNT(*) AS n FROM messages');
const victimMessages = ids.reduce((n, id) => n + (perConv.get(id) ?? 0), 0);
hwm.opened = hwmKb();

if (mode === 'guard') {
  const convStat = db.prepare('SELECT COUNT(*) AS n, MAX(created_at) AS last FROM messages WHERE conversation_id = ?');
  const t0 = performance.now();
  const deleter = new SeahorseDeleter(db, { targetTxnMs: 500 });
  deleter.prepare(ids);
  const prepareMs = performance.now() - t0;
  hwm.prepared = hwmKb();
  let changed = 0;
  for (const id of ids) {
    const before = convStat.get(id) as { n: number; last: string | null };
    const ok = deleter.deleteConversation(id, () => {
      const now = convStat.get(id) as { n: number; last: string | null };
      return now.n === before.n && now.last === before.last;
    });
    if (!ok.complete) changed++;
  }
  const deleteMs = performance.now() - t0;
  hwm.deleted = hwmKb();
  const left = count('SELECT COUNT(*) AS n FROM messages');
  const ftsLeft = count('SELECT COUNT(*) AS n FROM messages_fts_content');
  let vacuum: unknown = null;
  if (rest.includes('--vacuum')) {
    // What src/prune/apply/vacuum.ts vacuumAfterPass does, step by step, with each step measured.
    const files0 = dbFileBytes(path!);
    const p0 = readPages(db);
    const tf = performance.now();
    foldFtsTombstones(db);
    const foldMs = performance.now() - tf;
    hwm.folded = hwmKb();
    const p1 = readPages(db);
    const estimate = p1.freelistCount * p1.pageSize;
    const logical = p1.pageCount * p1.pageSize;
    const wouldRun = estimate >= MIN_RECLAIM_BYTES && estimate >= logical * MIN_RECLAIM_RATIO;
    const v = runVacuum(db);
    hwm.vacuumed = hwmKb();
    const p2 = readPages(db);
    const files2 = dbFileBytes(path!);
    vacuum = {
      before: {
        fileBytes: files0.db,
        walBytes: files0.wal,
        pageCount: p0.pageCount,
        freelist: p0.freelistCount,
        pageSize: p0.pageSize,
      },
      afterFold: { pageCount: p1.pageCount, freelist: p1.freelistCount },
      foldMs,
      vacuumMs: v.durationMs,
      estimateBytes: estimate,
      wouldRun,
      after: { fileBytes: files2.db, walBytes: files2.wal, pageCount: p2.pageCount },
      /** What the report calls reclaimed_bytes: file + WAL before the fold, minus after. */
      reportReclaimedBytes: files0.db + files0.wal - (files2.db + files2.wal),
      /** The logical size after the fold minus the vacuumed file: what the estimate predicts. */
      logicalReclaimedBytes: logical - p2.pageCount * p2.pageSize,
    };
  }
  db.close();
  const s = deleter.stats;
  process.stdout.write(
    JSON.stringify({
      mode,
      totalMessages,
      victims: ids.length,
      victimMessages,
      deletedMessages: s.messages,
      messagesLeft: left,
      ftsRowsLeft: ftsLeft,
      changed,
      prepareMs,
      deleteMs,
      transactions: s.transactions,
      longestTxnMs: s.longestTxnMs,
      vacuum,
      hwmKb: hwm,
    }) + '\n',
  );
} else if (mode === 'triggers') {
  const sampleMs = Number(flag('--sample-ms') ?? 20_000);
  const fullLimitMs = Number(flag('--full-limit-ms') ?? 300_000);
  const r0 = totalMessages;
  // Σ over the deleted rows of the FTS rows present when each was deleted (rows shrink by one each).
  const work = (k: number) => k * r0 - (k * (k - 1)) / 2;
  const t0 = performance.now();
  let done = 0;
  let convsDone = 0;
  let predictedMs: number | null = null;
  let sample: { ms: number; messages: number } | null = null;
  let complete = true;
  for (const id of ids) {
    deleteConversationWithTriggers(db, id);
    done += perConv.get(id) ?? 0;
    convsDone++;
    const ms = performance.now() - t0;
    if (sample === null && ms >= sampleMs && convsDone < ids.length) {
      sample = { ms, messages: done };
      predictedMs = (ms / work(done)) * work(victimMessages);
      if (predictedMs > fullLimitMs) {
        complete = false;
        break;
      }
    }
  }
  const ms = performance.now() - t0;
  hwm.deleted = hwmKb();
  db.close();
  process.stdout.write(
    JSON.stringify({
      mode,
      totalMessages,
      victims: ids.length,
      victimMessages,
      deletedMessages: done,
      conversationsDone: convsDone,
      complete,
      ms,
      sample,
      predictedMs,
      hwmKb: hwm,
    }) + '\n',
  );
} else {
  process.stderr.write('usage: seahorse-worker.js guard|triggers DB VICTIMS.json [...]\n');
  process.exitCode = 2;
}
