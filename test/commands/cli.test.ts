import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { tryLock } from '../../src/io/lock.js';
import { sqlite } from '../../src/io/sqlite.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { board } from '../health/boards.js';
import { CLI, NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { handHome } from '../support/home.js';
import { requireRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * The command line as a newcomer meets it: every mistake is exit 2 with one line in the
 * tool's voice, each row of the exit-code tables (README and --help) is produced by a real
 * run, and the README's command sections name every option --help lists.
 */
const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
/** The README and the reference pages it links (docs/*.md): where a command's section may live. */
const DOCS_DIR = fileURLToPath(new URL('../../docs/', import.meta.url));
const REFERENCE = [
  README,
  ...readdirSync(DOCS_DIR)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => readFileSync(join(DOCS_DIR, f), 'utf8')),
].join('\n');
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function home() {
  const root = tempDir('pcg-cli-');
  const h = join(root, 'h');
  const now = Date.now();
  const made = handHome(h, [
    {
      key: 'sk_v1_old',
      updated: iso(now - 90 * DAY),
      seahorse: [new Date(now - 90 * DAY).toISOString().slice(0, 19).replace('T', ' ')],
    },
    { key: 'sk_v1_new', updated: iso(now - DAY) },
  ]);
  return { root, home: h, ...made, env: { HOME: root, STATE_DIRECTORY: join(root, 'state') } };
}

describe("command-line mistakes: exit 2, one line on stderr, in the tool's voice", () => {
  const cases: [string[], RegExp][] = [
    [
      ['prune', '--max-age-day', '5'],
      /^picoclaw-guard: unknown option '--max-age-day' \(did you mean --max-age-days\?\)$/,
    ],
    [['health', '--jsn'], /^picoclaw-guard: unknown option '--jsn' \(did you mean --json\?\)$/],
    [['prune', '--home'], /^picoclaw-guard: option '--home <dir>' argument missing$/],
    [['sessions', 'extra'], /^picoclaw-guard: too many arguments for 'sessions'/],
    [
      ['restore'],
      /^picoclaw-guard: missing required argument 'DIR\|FILE' \(an archive folder or file; or --release KEY\)$/,
    ],
    [['sesions'], /^picoclaw-guard: unknown command 'sesions' \(did you mean sessions\?\)$/],
    [['prun'], /^picoclaw-guard: unknown command 'prun' \(did you mean one of prune, run\?\)$/],
    [
      ['prune', '--max-age-days', 'x'],
      /^picoclaw-guard: option '--max-age-days <n>' argument 'x' is invalid\. Expected a whole number of 0 or more\.$/,
    ],
    [['prune', '--deadline', '1.5'], /^picoclaw-guard: option '--deadline <seconds>' argument '1\.5' is invalid/],
    [
      ['startup', '--log', ''],
      /^picoclaw-guard: option '--log <file>' argument '' is invalid\. Expected a file name, or - for standard input\.$/,
    ],
    [
      ['startup', '--last', '0'],
      /^picoclaw-guard: option '--last <n>' argument '0' is invalid\. Expected a whole number of 1 or more\.$/,
    ],
  ];
  for (const [args, message] of cases) {
    it(args.join(' '), () => {
      const r = runCli(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(message);
    });
  }
  it('--help and --version exit 0', () => {
    expect(runCli(['--help']).code).toBe(0);
    expect(runCli(['prune', '--help']).code).toBe(0);
    expect(runCli(['--version']).code).toBe(0);
  });
  it("--version prints the version in package.json, also inside another package's `npm run`", () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const env of [{}, { npm_package_version: '9.9.9' }]) {
      const r = runCli(['--version'], env);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });
});

/** Rows of the README's exit-code table and of the top-level help's: code → text. */
function readmeCodes(): Map<number, string> {
  const section = README.slice(
    README.indexOf('## Exit codes'),
    README.indexOf('\n## ', README.indexOf('## Exit codes') + 3),
  );
  return new Map([...section.matchAll(/^\| (\d+) \| (.+) \|$/gm)].map((m) => [Number(m[1]), m[2]!]));
}
function helpCodes(): Map<number, string> {
  const help = runCli(['--help']).stdout;
  const section = help.slice(help.indexOf('Exit codes:'), help.indexOf('\n\n', help.indexOf('Exit codes:')));
  return new Map([...section.matchAll(/^ {2}(\d+) +(.+)$/gm)].map((m) => [Number(m[1]), m[2]!]));
}

/** A gateway that is alive and listening but not ready: /ready answers 503 (the seahorse bootstrap). */
async function startingGateway(): Promise<{ pid: number; port: number; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `
    const http = require('node:http');
    const s = http.createServer((req, res) => {
      if (req.url === '/health') { res.setHeader('content-type', 'application/json');` +
        ` res.end(JSON.stringify({ status: 'ok', pid: process.pid })); }
      else { res.statusCode = 503; res.end('not ready'); }
    });
    s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  while (!/listening \d+\n/.test(out)) {
    const [chunk] = (await once(child.stdout, 'data')) as [string];
    out += chunk;
  }
  return { pid: child.pid!, port: Number(/listening (\d+)/.exec(out)![1]), stop: () => child.kill('SIGTERM') };
}

describe('the exit-code tables are true', () => {
  it('the README and --help list the same codes, and every code the tool has', () => {
    const all = [...new Set(Object.values(ExitCode))].sort((a, b) => a - b);
    expect([...readmeCodes().keys()].sort((a, b) => a - b)).toEqual(all);
    expect([...helpCodes().keys()].sort((a, b) => a - b)).toEqual(all);
  });

  /** For each code, a run that ends with it; the row's words are checked against what happened. */
  const scenarios: Record<
    number,
    {
      what: RegExp;
      run: () => Promise<{ code: number; out: string }> | { code: number; out: string };
      /** What the scenario needs root for (it is skipped, saying so, without). */
      root?: string;
    }
  > = {
    0: {
      what: /success/,
      run: () => {
        const h = home();
        const r = runCli(['sessions', '--home', h.home], h.env);
        return { code: r.code, out: r.stdout };
      },
    },
    1: {
      what: /unexpected failure/,
      run: () => {
        // An I/O error nobody planned for: the units' folder lies under a regular file.
        const h = home();
        const file = join(h.root, 'file');
        writeFileSync(file, 'x');
        const r = runCli(['install-units', '--home', h.home, '--user', 'root', '--dest', join(file, 'units')], h.env);
        return { code: r.code, out: r.stderr };
      },
    },
    2: {
      what: /bad command line or configuration/,
      run: () => {
        const r = runCli(['prune', '--max-age-day', '5']);
        return { code: r.code, out: r.stderr };
      },
    },
    3: {
      what: /seahorse\.db is not a database|PicoClaw data/,
      run: () => {
        const h = home();
        writeFileSync(h.dbPath, 'this is not a database, just text that is long enough to be looked at');
        const r = runCli(['prune', '--apply', '--home', h.home], h.env);
        return { code: r.code, out: r.stdout + r.stderr };
      },
    },
    4: {
      what: /another prune pass/,
      run: () => {
        const h = home();
        const held = tryLock(join(h.home, '.picoclaw-guard.lock'), 'test');
        try {
          const r = runCli(['prune', '--apply', '--home', h.home], h.env);
          return { code: r.code, out: r.stdout };
        } finally {
          if (held.ok) held.lock.release();
        }
      },
    },
    5: {
      what: /gateway is starting/,
      run: async () => {
        const gw = await startingGateway();
        try {
          const root = tempDir('pcg-cli-');
          const h = join(root, 'h');
          buildSampleHome({ dir: h, seed: 3, sessions: 10, pidFile: { pid: gw.pid, port: gw.port } });
          const r = runCli(['prune', '--apply', '--home', h], { HOME: root, STATE_DIRECTORY: join(root, 'state') });
          return { code: r.code, out: r.stdout };
        } finally {
          gw.stop();
        }
      },
    },
    6: {
      what: /a store cannot delete/,
      run: () => {
        const h = home();
        const holder = new (sqlite())(h.dbPath);
        holder.exec('BEGIN IMMEDIATE');
        holder.exec(`INSERT INTO conversations (session_key) VALUES ('writer')`);
        try {
          const r = runCli(['prune', '--apply', '--home', h.home], { ...h.env, PICOGUARD_BUSY_TIMEOUT_MS: '300' });
          return { code: r.code, out: r.stdout };
        } finally {
          holder.exec('ROLLBACK');
          holder.close();
        }
      },
    },
    7: {
      what: /restore.*skipped/,
      run: () => {
        const h = home();
        const archive = join(h.root, 'archive');
        expect(
          runCli(['prune', '--apply', '--home', h.home, '--max-age-days', '30', '--archive', archive], h.env).code,
        ).toBe(0);
        expect(runCli(['restore', archive, '--home', h.home], h.env).code).toBe(0);
        // The restored session changes (PicoClaw appends): another restore finds another session there.
        writeFileSync(join(h.sessionsDir, 'sk_v1_old.jsonl'), '{"role":"user","content":"later"}\n', { flag: 'a' });
        const r = runCli(['restore', archive, '--home', h.home], h.env);
        return { code: r.code, out: r.stdout };
      },
    },
    8: {
      what: /interrupted.*SIGINT.*SIGTERM|SIGINT.*SIGTERM.*between two sessions/,
      run: async () => {
        // SIGTERM once the first session is gone (prune-surface.test.ts drives Ctrl-C on a terminal).
        const root = tempDir('pcg-cli-');
        const h = join(root, 'h');
        buildSampleHome({ dir: h, seed: 5, sessions: 1500, agents: 2, messagesPerSession: 4, spanDays: 120 });
        const child = spawn(process.execPath, [CLI, 'prune', '--apply', '--home', h, '--max-sessions', '10'], {
          env: {
            PATH: process.env.PATH,
            HOME: root,
            STATE_DIRECTORY: join(root, 'state'),
            PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
          },
        });
        let err = '';
        child.stdout.resume();
        child.stderr.setEncoding('utf8');
        while (!/pruning: [1-9]/.test(err)) err += ((await once(child.stderr, 'data')) as [string])[0];
        child.kill('SIGTERM');
        child.stderr.on('data', (d: string) => (err += d));
        const [code] = (await once(child, 'close')) as [number];
        return { code, out: err };
      },
    },
    9: {
      what: /disk filled/,
      root: 'mount a small tmpfs for the state folder and fill it (mount -t tmpfs)',
      run: () => {
        const h = home();
        const state = join(h.root, 'state');
        mkdirSync(state);
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', state]);
        try {
          spawnSync('dd', ['if=/dev/zero', `of=${join(state, 'fill')}`, 'bs=4k'], { stdio: 'ignore' });
          const r = runCli(['prune', '--apply', '--home', h.home, '--max-age-days', '30'], h.env);
          return { code: r.code, out: r.stdout + r.stderr };
        } finally {
          execFileSync('umount', ['-l', state]);
        }
      },
    },
    10: { what: /health.*WARN/, run: () => health('pi4', ['--state-dir', tempDir()], { temp_warn_celsius: 50 }) },
    11: { what: /health.*CRITICAL/, run: () => health('pi4-undervoltage', ['--state-dir', tempDir()]) },
  };

  function health(name: 'pi4' | 'pi4-undervoltage', extra: string[], thresholds: Record<string, unknown> = {}) {
    const b = board(name);
    const cfg = join(tempDir(), 'guard.json');
    writeFileSync(cfg, JSON.stringify({ health: { gateway_not_ready: 'ok', ...thresholds } }));
    const r = runCli(
      ['health', '--sys-root', b.sys, '--proc-root', b.proc, '--vcgencmd', b.vcgencmd!, '--config', cfg, ...extra],
      { PICOCLAW_HOME: join(tempDir(), 'none') },
    );
    return { code: r.code, out: r.stdout };
  }

  for (const [code, row] of readmeCodes()) {
    it(`${code}: ${row.slice(0, 60)}`, async (ctx) => {
      const s = scenarios[code];
      expect(s, `no scenario for exit code ${code}`).toBeDefined();
      if (s!.root) requireRoot(ctx, s!.root);
      expect(row).toMatch(s!.what);
      expect(helpCodes().get(code)).toMatch(s!.what);
      const r = await s!.run();
      expect(r.code, r.out).toBe(code);
    });
  }
});

/**
 * A command's reference section, in the README or a docs/ page: from its `## \`picoclaw-guard <name>` heading
 * (level 2 or deeper) to the next such heading.
 */
function readmeSection(name: string): string {
  const m = new RegExp(`\\n##+ \`picoclaw-guard ${name}[\` ]`).exec(REFERENCE);
  expect(m, `neither the README nor docs/ has a section for ${name}`).not.toBeNull();
  const start = m!.index + 1;
  const rest = REFERENCE.slice(start + 4);
  const end = rest.search(/\n##+ /);
  return REFERENCE.slice(start, end < 0 ? undefined : start + 4 + end);
}

describe('the README and --help agree', () => {
  for (const name of ['sessions', 'prune', 'restore', 'health', 'startup', 'run', 'install-units', 'notify']) {
    it(`every option of ${name} is in its README section`, () => {
      const help = runCli([name, '--help']).stdout;
      const flags = [...help.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z-]*)/gm)]
        .map((m) => m[1]!)
        .filter((f) => f !== '--help');
      expect(flags.length).toBeGreaterThan(1);
      const section = readmeSection(name);
      expect(flags.filter((f) => !new RegExp(`${f}(?![a-z-])`).test(section))).toEqual([]);
    });
  }

  it('restore takes DIR|FILE in both', () => {
    expect(runCli(['restore', '--help']).stdout).toMatch(/restore \[options\] \[DIR\|FILE\]/);
    expect(REFERENCE).toContain('picoclaw-guard restore DIR|FILE');
  });

  it("the state folder's default reads the same in both", () => {
    const norm = (s: string) => s.replace(/`/g, '').replace(/\s+/g, ' ');
    for (const name of ['prune', 'health', 'startup', 'run']) {
      const help = norm(runCli([name, '--help']).stdout);
      const chain = /--state-dir <dir> .*?\(default: ([^)]*)\)/.exec(help)?.[1];
      expect(chain, name).toBeDefined();
      expect(norm(REFERENCE)).toContain(chain!);
    }
  });
});
