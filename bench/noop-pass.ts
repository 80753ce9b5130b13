import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildSampleHome } from '../dev/sample/builder.js';
import { CLI, cliEnv, fmtMs, fmtRatio, hasGnuTime, median, ROOT, setTmpBase, tempDir } from './lib.js';

/**
 * What a pre-start pass with nothing to do costs, beside bare `node -e 0`:
 *
 *   npm run build:all && node dist/bench/noop-pass.js [--runs 20] [--sessions 2000] [--before CLI] [--keep]
 *
 * A home of `--sessions` sessions within policy (the sample builder's, spread over 20 days, three agents,
 * seahorse.db; the policy: 90 days, at most 10,000 sessions, no size limit) is built,
 * passes settle what the builder leaves (orphan conversations, a first VACUUM) until one takes the fast
 * path (src/prune/pass-quiet.ts), then each round runs, in turn: `node -e 0`, `prune --apply --if-enabled
 * --pre-start` on that home (the fast path), the same with a fresh state folder (the full no-op path), that
 * once more with the pre-start unit's Node flags and malloc setting (picoclaw-guard-prestart.service: as the
 * unit runs it), `--help` and
 * `prune --help`, with this build and, with `--before`, another build's cli.js (e.g. an older commit's,
 * built beside). Wall-clock medians over the rounds, and the ratio of each to `node -e 0`'s median; with GNU
 * time, one more round of each gives its CPU time (user + system), the figure a busy machine blurs least.
 * It also checks that the passes left the home as they found it (every entry's mtime and ctime): a figure
 * from a pass that wrote would not be the one asked for.
 */

interface Row {
  label: string;
  /** The arguments of round i. */
  args: (i: number) => string[];
  /** Done before each run of it, unmeasured. */
  prep?: () => void;
  /** Its environment, when not the others'. */
  env?: NodeJS.ProcessEnv;
  wall: number[];
  cpu: number[];
}

function snapshot(dir: string): string {
  const out: string[] = [];
  const walk = (p: string) => {
    const st = lstatSync(p, { bigint: true });
    out.push(`${p} ${st.size} ${st.mtimeNs} ${st.ctimeNs} ${st.ino}`);
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(dir);
  return out.join('\n');
}

function main(): number {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '20' },
      sessions: { type: 'string', default: '2000' },
      before: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const runs = Number(values.runs);
  setTmpBase(tmpdir());
  const dir = tempDir('noop-pass');
  const home = join(dir, 'home');
  const state = join(dir, 'state');
  const config = join(dir, 'guard.json');
  buildSampleHome({ dir: home, seed: 29, sessions: Number(values.sessions), agents: 3, now: Date.now(), spanDays: 20 });
  writeFileSync(
    config,
    JSON.stringify({ prune: { enabled: true, max_age_days: 90, max_sessions: 10_000, max_db_size_mb: 0 } }),
  );
  const env = { ...cliEnv(state), PICOCLAW_GUARD_CONFIG: config, PICOGUARD_NO_SYSTEM_STATE: '1' };
  const pass = ['prune', '--apply', '--if-enabled', '--pre-start', '--home', home, '--state-dir', state];
  // Until a pass takes the fast path (src/prune/pass-quiet.ts): the first settles what the builder leaves, a
  // later one finds the home still for the settle time and records it.
  let recorded = false;
  for (let i = 0; i < 10 && !recorded; i++) {
    const settle = spawnSync(process.execPath, [CLI, ...pass], { env, encoding: 'utf8' });
    if (settle.status !== 0) throw new Error(`the settling pass exited ${settle.status}`);
    recorded = settle.stdout.startsWith('nothing to do: the home is as the pass at');
  }
  if (!recorded) throw new Error('no settling pass took the fast path');
  // The full no-op path: a state folder of its own each round, so no record is ever found.
  // A folder per build, row and round: one build's record would be the other's fast path.
  const fresh = (build: string, row: string, i: number) => [
    ...pass.slice(0, -1),
    join(dir, `state-full-${build}-${row}-${i}`),
  ];

  // A gateway's run that took no message: its PID file written (temp file and rename, as pkg/pid does) and
  // removed, which moves the home root's times.
  const pidPath = join(home, '.picoclaw.pid');
  const gatewayRan = () => {
    writeFileSync(`${pidPath}.tmp`, JSON.stringify({ pid: 999_999_999, token: 'bench', version: 'v0.2.9' }));
    renameSync(`${pidPath}.tmp`, pidPath);
    unlinkSync(pidPath);
  };
  // The pre-start unit's Node flags and malloc setting (picoclaw-guard-prestart.service), given on the command line.
  const unit = readFileSync(join(ROOT, 'picoclaw-guard-prestart.service'), 'utf8');
  const unitFlags = (/^Environment="NODE_OPTIONS=([^"]*)"$/m.exec(unit)?.[1] ?? '').split(/\s+/).filter(Boolean);
  if (unitFlags.length === 0) throw new Error('no NODE_OPTIONS in picoclaw-guard-prestart.service');
  const unitEnv = { ...env, MALLOC_ARENA_MAX: /^Environment=MALLOC_ARENA_MAX=(\d+)$/m.exec(unit)?.[1] ?? '1' };
  const builds: [string, string][] = [['after', CLI]];
  if (values.before) {
    if (!existsSync(values.before)) throw new Error(`${values.before}: no such file`);
    builds.unshift(['before', values.before]);
  }
  const rows: Row[] = [{ label: 'node -e 0', args: () => ['-e', '0'], wall: [], cpu: [] }];
  for (const [name, cli] of builds)
    rows.push(
      { label: `${name}: pre-start pass`, args: () => [cli, ...pass], wall: [], cpu: [] },
      {
        label: `${name}: pre-start pass after a gateway's run`,
        args: () => [cli, ...pass],
        prep: gatewayRan,
        wall: [],
        cpu: [],
      },
      {
        label: `${name}: pre-start, full no-op path`,
        args: (i) => [cli, ...fresh(name, 'bare', i)],
        wall: [],
        cpu: [],
      },
      {
        label: `${name}: pre-start, full no-op path, as the unit runs it`,
        args: (i) => [...unitFlags, cli, ...fresh(name, 'unit', i)],
        env: unitEnv,
        wall: [],
        cpu: [],
      },
      { label: `${name}: --help`, args: () => [cli, '--help'], wall: [], cpu: [] },
      { label: `${name}: prune --help`, args: () => [cli, 'prune', '--help'], wall: [], cpu: [] },
    );
  let touched = false;
  for (let i = 0; i < runs; i++)
    for (const r of rows) {
      // The before build's pass writes in the home (that is what is measured against): the check is this build's.
      const mine = r.label.startsWith('after: pre-start');
      r.prep?.();
      const untouched = mine ? snapshot(home) : '';
      const t = performance.now();
      const res = spawnSync(process.execPath, r.args(i), { env: r.env ?? env, stdio: 'ignore', cwd: ROOT });
      r.wall.push(performance.now() - t);
      if (res.status !== 0) throw new Error(`${r.label} exited ${res.status}`);
      if (mine && snapshot(home) !== untouched) touched = true;
    }
  if (hasGnuTime())
    for (let i = 0; i < Math.min(runs, 5); i++)
      for (const r of rows) {
        r.prep?.();
        const res = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, ...r.args(runs + i)], {
          env: r.env ?? env,
          cwd: ROOT,
          encoding: 'utf8',
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        const m = /(\d+\.\d+) (\d+\.\d+)\s*$/.exec(res.stderr);
        if (m) r.cpu.push((Number(m[1]) + Number(m[2])) * 1000);
      }
  const base = median(rows[0]!.wall);
  const baseCpu = median(rows[0]!.cpu);
  const lines = [
    `noop-pass: ${values.sessions} sessions within policy, ${runs} rounds (alternating), medians`,
    '',
    '| command | wall | x node -e 0 | CPU (user+sys) | x node -e 0 |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const w = median(r.wall);
    const c = r.cpu.length ? median(r.cpu) : NaN;
    lines.push(
      `| ${r.label} | ${fmtMs(w)} | ${fmtRatio(w / base)} | ${fmtMs(c)} | ${Number.isFinite(c) ? fmtRatio(c / baseCpu) : '-'} |`,
    );
  }
  lines.push(
    '',
    touched ? "MISSED: this build's pass changed the home" : "this build's passes left the home untouched",
  );
  process.stdout.write(lines.join('\n') + '\n');
  if (values.keep) process.stdout.write(`home kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
  return touched ? 1 : 0;
}

process.exitCode = main();
