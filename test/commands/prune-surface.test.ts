import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { assertBuilt, CLI, NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * What a person sees of a prune before anything goes, through the built CLI: where it works (real
 * paths, outside-home marks, the refusal), what it does first (the summary, every warning, twice),
 * the prompt on a terminal, and Ctrl-C or SIGTERM during an apply. The terminal is a real
 * pseudo-terminal (test/support/pty-drive.py, python3's pty module).
 */
const PTY = fileURLToPath(new URL('../support/pty-drive.py', import.meta.url));
const HAVE_PY = spawnSync('python3', ['-c', 'import pty'], { stdio: 'ignore' }).status === 0;

function sample(sessions = 60, seahorse = true) {
  const root = tempDir('pcg-surface-');
  const home = join(root, 'user', '.picoclaw');
  buildSampleHome({ dir: home, seed: 11, sessions, agents: 2, seahorse, messagesPerSession: 4, spanDays: 120 });
  return { root, home, env: { HOME: join(root, 'user'), STATE_DIRECTORY: join(root, 'state') } };
}

function files(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** The CLI on a pseudo-terminal: each step waits for a pattern in the output, then types. */
function onTerminal(steps: { wait: string; send: string }[], args: string[], env: NodeJS.ProcessEnv) {
  assertBuilt();
  const r = spawnSync('python3', [PTY, JSON.stringify(steps), '--', process.execPath, CLI, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG, PICOGUARD_NO_SYSTEM_STATE: '1', ...env },
    timeout: 120_000,
  });
  // The terminal turns \n into \r\n.
  return { code: r.status ?? -1, out: (r.stdout ?? '').replace(/\r\n/g, '\n') };
}

const POLICY = ['--max-age-days', '30', '--max-sessions', '20'];

describe('where, first: the folders a pass works in, by real path', () => {
  it('a cp -a copy whose config.json names the workspaces by absolute path: marked, and its apply refused', () => {
    const s = sample();
    const copy = join(s.root, 'copy');
    execFileSync('cp', ['-a', s.home, copy]);
    const before = files(join(s.home, 'workspace', 'sessions'));

    const dry = runCli(['prune', '--home', copy, ...POLICY], s.env);
    expect(dry.code).toBe(0);
    const lines = dry.stdout.split('\n');
    const whereAt = lines.findIndex((l) => l.startsWith('where'));
    const summaryAt = lines.findIndex((l) => l.startsWith('Summary:'));
    const tableAt = lines.findIndex((l) => l.startsWith('ACTION'));
    expect(whereAt).toBeGreaterThan(0);
    expect(whereAt).toBeLessThan(summaryAt);
    expect(summaryAt).toBeLessThan(tableAt);
    expect(lines.slice(whereAt, summaryAt).join('\n')).toContain('OUTSIDE THE HOME');
    const wide = runCli(['prune', '--home', copy, ...POLICY, '--wide'], s.env).stdout;
    expect(wide).toContain(`  sessions (main): ${join(s.home, 'workspace', 'sessions')} OUTSIDE THE HOME\n`);
    expect(wide).toContain(`  seahorse.db: ${join(s.home, 'workspace', 'sessions', 'seahorse.db')} OUTSIDE THE HOME\n`);

    const json = JSON.parse(runCli(['prune', '--home', copy, ...POLICY, '--json'], s.env).stdout) as {
      where: { outside: number; paths: { real: string; inside: boolean }[] };
      totals: { would_delete_sessions: number; deleted_sessions: number };
    };
    expect(Object.keys(json)[0]).toBe('where');
    expect(json.where.outside).toBe(json.where.paths.length);
    expect(json.totals.would_delete_sessions).toBeGreaterThan(0);
    expect(json.totals.deleted_sessions).toBe(json.totals.would_delete_sessions);

    const apply = runCli(['prune', '--apply', '--home', copy, ...POLICY], s.env);
    expect(apply.code).toBe(ExitCode.USAGE);
    expect(apply.stdout).toBe('');
    expect(apply.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(apply.stderr).toMatch(
      /^picoclaw-guard: refused: the sessions folder \S+ \(agent main\) lies outside --home /,
    );
    expect(files(join(s.home, 'workspace', 'sessions'))).toEqual(before);

    // Said so, it prunes there: the original's files go (what the copy's plan named).
    const allowed = runCli(['prune', '--apply', '--allow-outside-home', '--home', copy, ...POLICY], s.env);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(files(join(s.home, 'workspace', 'sessions')).length).toBeLessThan(before.length);
  });

  it('the default home is not refused, even with its workspace named by an absolute path', () => {
    const s = sample();
    const r = runCli(['prune', '--apply', ...POLICY], s.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('OUTSIDE THE HOME');
    expect(r.stdout).toMatch(/^Summary: deleted [1-9]/m);
  });
});

describe('what, first: the summary, every warning, then the table', () => {
  it('summary and warnings before the table, warnings again at the end; all rows through a pipe', () => {
    const s = sample();
    const r = runCli(['prune', '--home', s.home, ...POLICY], s.env);
    const lines = r.stdout.trimEnd().split('\n');
    const tableAt = lines.findIndex((l) => l.startsWith('ACTION'));
    const warnings = lines.filter((l) => l.startsWith('warning: '));
    // The sample has undated sessions: their warning is in the summary and at the end.
    expect(warnings.some((w) => w.includes('undated') || w.includes('no usable timestamp'))).toBe(true);
    const first = lines.slice(0, tableAt).filter((l) => l.startsWith('warning: '));
    const last = lines.slice(tableAt).filter((l) => l.startsWith('warning: '));
    expect(first.length).toBeGreaterThan(0);
    expect(last).toEqual(first);
    const summary = lines.slice(0, tableAt).join('\n');
    expect(summary).toMatch(/Summary: would delete \d+ of 60 session\(s\)/);
    expect(summary).toMatch(
      /DELETE +\d+ +[\d.]+ \w*B +over max_sessions|DELETE +\d+ +[\d.]+ \w*B +older than max_age_days/,
    );
    expect(r.stdout).not.toContain('more row(s) not shown');
  });

  it.skipIf(!HAVE_PY)(
    'on a terminal the table stops after its first 20 rows and says how to see all; --full prints all',
    () => {
      const s = sample();
      const short = onTerminal([], ['prune', '--home', s.home, ...POLICY], s.env);
      expect(short.code).toBe(0);
      expect(short.out).toMatch(/\.\.\. 40 more row\(s\) not shown on a terminal: --full prints them all/);
      const full = onTerminal([], ['prune', '--home', s.home, ...POLICY, '--full'], s.env);
      expect(full.out).not.toContain('more row(s) not shown');
      expect(full.out.split('\n').filter((l) => /^(DELETE|keep) /.test(l)).length).toBe(60);
    },
  );
});

describe.skipIf(!HAVE_PY)('confirm: a terminal is asked before anything is deleted', () => {
  const QUESTION = 'Delete \\d+ sessions \\([\\d.]+ \\w*B\\) from these folders\\? \\[y/N\\] ';

  it('no: nothing is deleted, exit 0; the summary came before the question', () => {
    const s = sample();
    const dir = join(s.home, 'workspace', 'sessions');
    const before = files(dir);
    const r = onTerminal([{ wait: QUESTION, send: 'n\n' }], ['prune', '--apply', '--home', s.home, ...POLICY], s.env);
    expect(r.code, r.out).toBe(0);
    expect(r.out.indexOf('Summary: would delete')).toBeLessThan(r.out.search(new RegExp(QUESTION)));
    expect(r.out.indexOf('where (real paths')).toBeLessThan(r.out.indexOf('Summary: would delete'));
    expect(r.out).toContain('nothing deleted');
    expect(files(dir)).toEqual(before);
    expect(existsSync(join(s.root, 'state', 'prune-history.jsonl'))).toBe(false);
  });

  it('yes: deleted; the question names the count the summary gave', () => {
    const s = sample();
    const r = onTerminal([{ wait: QUESTION, send: 'y\n' }], ['prune', '--apply', '--home', s.home, ...POLICY], s.env);
    expect(r.code, r.out).toBe(0);
    const planned = Number(/Summary: would delete (\d+) of/.exec(r.out)![1]);
    expect(r.out).toContain(`Delete ${planned} sessions (`);
    expect(r.out).toMatch(new RegExp(`Summary: deleted ${planned} of 60`));
  });

  it('--yes and -y ask nothing; without a terminal nothing is asked', () => {
    for (const flag of ['--yes', '-y']) {
      const s = sample();
      const r = onTerminal([], ['prune', '--apply', flag, '--home', s.home, ...POLICY], s.env);
      expect(r.code, r.out).toBe(0);
      expect(r.out).not.toContain('[y/N]');
      expect(r.out).toMatch(/Summary: deleted [1-9]/);
    }
    const s = sample();
    const piped = runCli(['prune', '--apply', '--home', s.home, ...POLICY], s.env, '');
    expect(piped.code).toBe(0);
    expect(piped.stdout).not.toContain('[y/N]');
    expect(piped.stdout).toMatch(/Summary: deleted [1-9]/);
  });
});

describe('interrupted, accounted', () => {
  /** Enough sessions that the apply takes well over the time a signal takes to arrive. */
  const big = () => sample(1500);

  function history(s: { root: string }): Record<string, unknown>[] {
    return readFileSync(join(s.root, 'state', 'prune-history.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it.skipIf(!HAVE_PY)(
    'Ctrl-C on a terminal: stops between two sessions, says how far it got, writes history, exit 8',
    () => {
      const s = big();
      const r = onTerminal(
        [
          { wait: '\\[y/N\\] ', send: 'y\n' },
          { wait: 'pruning: [1-9]\\d*/', send: '\u0003' },
        ],
        ['prune', '--apply', '--home', s.home, '--max-age-days', '30', '--max-sessions', '10'],
        s.env,
      );
      expect(r.code, r.out).toBe(ExitCode.INTERRUPTED);
      const m = /interrupted: deleted (\d+) of (\d+) sessions, freed [\d.]+ \w*B; run again to finish \(SIGINT\)/.exec(
        r.out,
      );
      expect(m, r.out).not.toBeNull();
      expect(Number(m![1])).toBeLessThan(Number(m![2]));
      const h = history(s);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({
        outcome: 'partial',
        reason: 'interrupted by SIGINT',
        deleted_sessions: Number(m![1]),
      });
      // Nothing cut in half: every .jsonl left has its .meta.json and the other way round.
      for (const d of [join(s.home, 'workspace', 'sessions'), join(s.home, 'workspace-research', 'sessions')]) {
        const names = files(d);
        for (const n of names.filter((x) => x.endsWith('.jsonl')))
          expect(names).toContain(n.replace(/\.jsonl$/, '.meta.json'));
      }
      // The next run finishes.
      const again = runCli(
        ['prune', '--apply', '--home', s.home, '--max-age-days', '30', '--max-sessions', '10'],
        s.env,
      );
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^Summary: deleted [1-9]\d* of /m);
    },
  );

  it('SIGTERM without a terminal (a unit stopping): the same account, exit 8', async () => {
    assertBuilt();
    const s = big();
    const child = spawn(
      process.execPath,
      [CLI, 'prune', '--apply', '--home', s.home, '--max-age-days', '30', '--max-sessions', '10'],
      {
        env: {
          PATH: process.env.PATH,
          PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
          PICOGUARD_NO_SYSTEM_STATE: '1',
          ...s.env,
        },
      },
    );
    let err = '';
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.setEncoding('utf8');
    // The first progress line comes with the first session deleted.
    while (!/pruning: [1-9]\d*\//.test(err)) err += ((await once(child.stderr, 'data')) as [string])[0];
    child.kill('SIGTERM');
    child.stderr.on('data', (d: string) => (err += d));
    const [code] = (await once(child, 'close')) as [number];
    expect(code, err).toBe(ExitCode.INTERRUPTED);
    expect(err).toMatch(/interrupted: deleted \d+ of \d+ sessions, freed .*; run again to finish \(SIGTERM\)/);
    expect(out).toMatch(/^Summary: deleted \d+ of 1500/m);
    expect(history(s)[0]).toMatchObject({ reason: 'interrupted by SIGTERM' });
  });
});

describe('rough edges a person meets', () => {
  it('restore of a path that does not exist names the archive, not the PicoClaw home (exit 2)', () => {
    const root = tempDir('pcg-surface-');
    // No PicoClaw home anywhere: the old message was about that.
    const r = runCli(['restore', join(root, 'nosuch')], { HOME: root });
    expect(r.code).toBe(ExitCode.USAGE);
    expect(r.stderr.split('\n')[0]).toBe(
      `picoclaw-guard: no archive at ${join(root, 'nosuch')}: no such file or folder; nothing was restored`,
    );
    expect(r.stderr).not.toMatch(/PicoClaw home/);
  });

  it('prune --help never breaks a line inside a back-quoted phrase', () => {
    const help = runCli(['prune', '--help']).stdout;
    expect(help).toContain('`picoclaw-guard startup`');
    for (const line of help.split('\n')) expect((line.match(/`/g) ?? []).length % 2, line).toBe(0);
  });

  it('the dry-run JSON says would_delete_sessions; an apply says null there and deleted_sessions what went', () => {
    const s = sample();
    const dry = JSON.parse(runCli(['prune', '--home', s.home, ...POLICY, '--json'], s.env).stdout) as {
      totals: Record<string, unknown>;
    };
    expect(dry.totals.would_delete_sessions).toBeGreaterThan(0);
    const apply = JSON.parse(runCli(['prune', '--apply', '--home', s.home, ...POLICY, '--json'], s.env).stdout) as {
      totals: Record<string, unknown>;
    };
    expect(apply.totals.would_delete_sessions).toBeNull();
    expect(apply.totals.deleted_sessions).toBe(dry.totals.would_delete_sessions);
  });
});
