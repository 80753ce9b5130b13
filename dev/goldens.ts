/**
 * Golden outputs: the reports a person reads (`sessions`, `prune` as text, `--wide` and `--json`,
 * `prune --apply --json`) and the files a pass leaves, on sample homes built from a seed with a frozen
 * clock. `test/repo/goldens.test.ts` compares them with `test/goldens/`; a restructuring keeps them
 * byte-identical, and a change that means to alter a report regenerates them on purpose:
 *
 *   npm run build:all && node dist/dev/goldens.js --update     (rewrite test/goldens/)
 *   node dist/dev/goldens.js                                    (compare; exit 1 and a diff on a change)
 *
 * The commands run in-process, through the same `run()` the CLI calls, with the clock passed in: no
 * environment variable or flag reaches a deleting path. What a run cannot repeat is written as a
 * placeholder: the temporary folder (`<ROOT>`), durations (`N ms`), the machine's free space, and
 * SQLite's own file bytes (a WAL's salts are random), for which the listing gives table row counts.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { createReadStream } from 'node:fs';
import tar from 'tar-stream';
import { fixedClock, type Clock } from '../src/io/clock.js';
import { sqlite, sqliteUri } from '../src/io/sqlite.js';
import { buildSampleHome, type SampleOptions } from './sample/builder.js';

/** One golden home: how it is built, and the commands whose output is kept. */
interface GoldenHome {
  name: string;
  build: Omit<SampleOptions, 'dir'>;
  /** Options of `prune` for this home (the dry-run and the apply), as commander would pass them. */
  prune: Record<string, unknown>;
  archive: boolean;
}

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

export const GOLDEN_HOMES: GoldenHome[] = [
  // Alias groups, cron runs, undated and pre-2024 sessions, orphan conversations; PicoClaw's defaults.
  { name: 'mixed', build: { seed: 7, sessions: 60, agents: 3, now: NOW, spanDays: 120 }, prune: {}, archive: true },
  // A session cap and cron rules (the guard's keys).
  {
    name: 'capped-cron',
    build: { seed: 11, sessions: 80, agents: 2, now: NOW, spanDays: 40 },
    prune: { maxSessions: 25, cronKeepRuns: 3, maxSessionsCountsCron: false },
    archive: false,
  },
  // A size limit the age step does not meet: the size guard deletes oldest first.
  {
    name: 'size-limit',
    build: { seed: 23, sessions: 70, agents: 2, now: NOW, spanDays: 25, toolResultBytes: 9000 },
    prune: { maxDbSizeMb: 1, maxAgeDays: 0 },
    archive: false,
  },
  // No seahorse.db (legacy context manager), one agent.
  { name: 'legacy', build: { seed: 5, sessions: 30, agents: 1, now: NOW, seahorse: false }, prune: {}, archive: true },
];

type Run = (opts: Record<string, unknown>, args: unknown[], deps: { clock?: Clock }) => Promise<number>;

/** What a command printed on standard output, and its exit code. */
async function capture(f: () => Promise<number>): Promise<{ out: string; code: number }> {
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const grab = (c: string | Uint8Array): boolean => {
    chunks.push(typeof c === 'string' ? c : Buffer.from(c).toString('utf8'));
    return true;
  };
  process.stdout.write = grab;
  try {
    const code = await f();
    return { out: chunks.join(''), code };
  } finally {
    process.stdout.write = write;
  }
}

/** The placeholders for what a run cannot repeat. */
function normalise(text: string, root: string): string {
  return (
    text
      .split(root)
      .join('<ROOT>')
      .replace(/"([a-z_]*_ms)": \d+(\.\d+)?/g, '"$1": "N"')
      .replace(/\b\d+(\.\d+)? ms\b/g, 'N ms')
      // The machine's free space (the VACUUM's reason names it).
      .replace(/\d+(\.\d+)? (B|KiB|MiB|GiB|TiB) free in /g, '<N> free in ')
      // An archive's name carries its pass's random id.
      .replace(/(\d{8}T\d{6}\.\d{3}Z)_[0-9a-f]{8}_/g, '$1_<pass>_')
  );
}

async function tarEntries(path: string): Promise<string[]> {
  const extract = tar.extract();
  const names: string[] = [];
  extract.on('entry', (header: { name: string; size?: number }, stream: NodeJS.ReadableStream, next: () => void) => {
    names.push(`    ${header.name} ${header.size ?? 0}`);
    stream.on('end', next);
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
    const src = createReadStream(path).pipe(createGunzip());
    src.on('error', reject);
    src.pipe(extract);
  });
  return names;
}

/**
 * Every file below `root`: its path, size and a hash; SQLite files as their tables' row counts; archives as
 * their entries.
 */
async function listing(root: string): Promise<string> {
  const lines: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const rel = relative(root, p);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        lines.push(`${rel}/`);
        await walk(p);
      } else if (/\.db-(wal|shm)$/.test(name)) lines.push(`${rel} (SQLite's own)`);
      else if (name.endsWith('.db')) {
        const Database = sqlite();
        const db = new Database(sqliteUri(p, { immutable: '1' }), { readonly: true });
        try {
          const tables = db
            .prepare(
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE " +
                "'%VIRTUAL%' AND name NOT LIKE '%\\_fts\\_%' ESCAPE '\\' ORDER BY name",
            )
            .pluck()
            .all() as string[];
          const counts = tables.map((t) => `${t}=${String(db.prepare(`SELECT count(*) FROM "${t}"`).pluck().get())}`);
          lines.push(`${rel} rows: ${counts.join(' ')}`);
        } finally {
          db.close();
        }
      } else if (name.endsWith('.tar.gz')) {
        lines.push(`${rel} (archive)`);
        lines.push(...(await tarEntries(p)));
      } else if (dir.endsWith('state')) lines.push(`${rel} (the guard's state)`);
      else {
        // config.json and gateway.log name the home: hashed as they read with the placeholder.
        const text = readFileSync(p).toString('latin1').split(root).join('<ROOT>');
        const hash = createHash('sha256').update(text, 'latin1').digest('hex').slice(0, 16);
        lines.push(`${rel} ${text.length} ${hash}`);
      }
    }
  };
  await walk(root);
  return lines.join('\n') + '\n';
}

/** Builds every golden home under a new temporary folder and returns each output file's name and text. */
export async function makeGoldens(): Promise<Map<string, string>> {
  const sessions = (await import('../src/commands/sessions.js')).run as Run;
  // The pass and its report as `prune` runs them (an apply runs this same function in its worker thread).
  const { execute, mainIo } = await import('../src/commands/prune-pass.js');
  const prune: Run = (opts, _args, deps) => execute(opts, mainIo(opts), deps);
  const clock = fixedClock(NOW);
  const out = new Map<string, string>();
  // Always under /tmp, whatever TMPDIR says: a report wraps its paths, so their length must not vary.
  const root = mkdtempSync('/tmp/pg-goldens-');
  const saved = { ...process.env };
  for (const k of Object.keys(process.env))
    if (k.startsWith('PICOCLAW_') || k.startsWith('PICOGUARD_')) delete process.env[k];
  try {
    for (const g of GOLDEN_HOMES) {
      const dir = join(root, g.name);
      const home = join(dir, 'home');
      buildSampleHome({ ...g.build, dir: home });
      const common = { home, stateDir: join(dir, 'state'), ...g.prune };
      const keep = (file: string, r: { out: string; code: number }): void => {
        out.set(`${g.name}/${file}`, normalise(r.out, root) + `(exit ${r.code})\n`);
      };
      keep('sessions.txt', await capture(() => sessions({ home }, [], { clock })));
      keep('sessions.json', await capture(() => sessions({ home, json: true }, [], { clock })));
      keep('prune.txt', await capture(() => prune(common, [], { clock })));
      keep('prune-wide.txt', await capture(() => prune({ ...common, wide: true }, [], { clock })));
      keep('prune.json', await capture(() => prune({ ...common, json: true }, [], { clock })));
      const archive = g.archive ? { archive: join(dir, 'archive') } : {};
      keep('apply.json', await capture(() => prune({ ...common, ...archive, apply: true, json: true }, [], { clock })));
      out.set(`${g.name}/files-after.txt`, normalise(await listing(dir), root));
    }
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}

/** The repository's test/goldens/ folder. */
export function goldensDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return join(dir, 'test', 'goldens');
}

/** The names whose text differs from the stored goldens (missing and extra files included). */
export function compareGoldens(made: Map<string, string>, dir = goldensDir()): string[] {
  const differ: string[] = [];
  for (const [name, text] of made) {
    const p = join(dir, name);
    if (!existsSync(p) || readFileSync(p, 'utf8') !== text) differ.push(name);
  }
  if (existsSync(dir))
    for (const home of readdirSync(dir))
      for (const f of readdirSync(join(dir, home))) if (!made.has(`${home}/${f}`)) differ.push(`${home}/${f} (extra)`);
  return differ;
}

async function main(): Promise<void> {
  const made = await makeGoldens();
  const dir = goldensDir();
  if (process.argv.includes('--update')) {
    rmSync(dir, { recursive: true, force: true });
    for (const [name, text] of made) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    process.stdout.write(`goldens: wrote ${made.size} files to ${dir}\n`);
    return;
  }
  const differ = compareGoldens(made, dir);
  if (differ.length === 0) {
    process.stdout.write(`goldens: ${made.size} files, all identical\n`);
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'pg-goldens-new-'));
  for (const [name, text] of made) {
    mkdirSync(dirname(join(out, name)), { recursive: true });
    writeFileSync(join(out, name), text);
  }
  process.stdout.write(
    `goldens: ${differ.length} of ${made.size} differ:\n${differ.map((d) => `  ${d}`).join('\n')}\n` +
      `new outputs in ${out}; see: diff -r ${dir} ${out}\n`,
  );
  process.exitCode = 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
