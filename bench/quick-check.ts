import { sqlite } from '../src/io/sqlite.js';
import { APPLY_CACHE_KIB } from '../src/prune/apply/apply.js';

/**
 * The cost of the check `prune --apply` runs before its first deletion:
 * PRAGMA quick_check(1) on the whole file, three times, and the per-table form summed over every
 * table, with the page cache the pass sets. Figures in BENCHMARKS.md ("A damaged or full disk").
 *
 *   node dist/bench/quick-check.js <seahorse.db>
 */
const path = process.argv[2];
if (!path) throw new Error('usage: quick-check.js <seahorse.db>');
const db = new (sqlite())(path, { readonly: true });
db.pragma(`cache_size = ${-APPLY_CACHE_KIB}`);
const timed = (fn: () => unknown) => {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = fn();
  const c = process.cpuUsage(c0);
  return { wallMs: Math.round(performance.now() - t0), cpuMs: Math.round((c.user + c.system) / 1000), r };
};
const whole = [0, 1, 2].map(() =>
  timed(() => (db.pragma('quick_check(1)') as { quick_check: string }[])[0]?.quick_check),
);
const tables = (
  db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'`).all() as {
    name: string;
  }[]
).map((t) => t.name);
let wall = 0;
let cpu = 0;
for (const t of tables) {
  const x = timed(() => db.pragma(`quick_check("${t.replaceAll('"', '""')}")`));
  wall += x.wallMs;
  cpu += x.cpuMs;
}
const { page_count } = db.prepare('SELECT page_count FROM pragma_page_count').get() as { page_count: number };
console.log(
  JSON.stringify({
    pages: page_count,
    whole,
    perTable: { tables: tables.length, wallMs: wall, cpuMs: cpu },
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);
