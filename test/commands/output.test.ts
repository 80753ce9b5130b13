import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeControl, fitTable, formatBytes, layout, LayoutWriter, outputWidth } from '../../src/commands/format.js';
import { roomForVacuum } from '../../src/prune/apply/vacuum.js';
import { buildSampleHome, type SampleHome } from '../../dev/sample/builder.js';
import { board } from '../health/boards.js';
import { runCli } from '../support/cli.js';
import { handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * What a person reads: every text report fits 80 columns when stdout is not a terminal
 * (the tests' pipes), --wide shows everything, control characters never reach the
 * terminal, and words and numbers agree between commands.
 */

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const cols = (line: string) => [...line].length;
const tooWide = (text: string, max = 80) => text.split('\n').filter((l) => cols(l) > max);

function sample(
  seed = 7,
  keep = false,
): { root: string; home: string; sample: SampleHome; env: Record<string, string> } {
  // Short enough that the folder paths in the reports can fit: /tmp/pcg-w-XXXXXX/h.
  // `keep`: shared by several tests (removed in afterAll, not after each test).
  const root = keep ? mkdtempSync(join(tmpdir(), 'pcg-w-')) : tempDir('pcg-w-');
  const home = join(root, 'h');
  const s = buildSampleHome({
    dir: home,
    seed,
    sessions: 80,
    agents: 3,
    now: Date.now(),
    logLevel: 'info',
    logEvents: true,
    restarts: 6,
  });
  return { root, home, sample: s, env: { HOME: root, STATE_DIRECTORY: join(root, 'state') } };
}

const pi4 = board('pi4');
const healthArgs = ['--sys-root', pi4.sys, '--proc-root', pi4.proc, '--vcgencmd', pi4.vcgencmd!];

describe('every text report fits 80 columns by default', () => {
  let s: ReturnType<typeof sample>;
  let archive: string;
  beforeAll(() => {
    s = sample(7, true);
    archive = join(s.root, 'archive');
  });
  afterAll(() => rmSync(s.root, { recursive: true, force: true }));

  const commands: [string, () => string[]][] = [
    ['sessions', () => ['sessions', '--home', s.home]],
    ['prune (dry-run)', () => ['prune', '--home', s.home, '--max-age-days', '30']],
    ['health', () => ['health', '--home', s.home, ...healthArgs]],
    ['startup', () => ['startup', '--home', s.home]],
    [
      'install-units --dry-run',
      () => [
        'install-units',
        '--dry-run',
        '--home',
        s.home,
        '--user',
        userInfo().username,
        '--dest',
        join(s.root, 'units'),
      ],
    ],
  ];
  for (const [name, args] of commands) {
    it(name, () => {
      const r = runCli(args(), s.env);
      expect(r.stdout.split('\n').length, r.stderr).toBeGreaterThan(5);
      expect(tooWide(r.stdout)).toEqual([]);
      // The same report with --wide is wider: the default one really was fitted.
      const wide = runCli([...args(), '--wide'], s.env);
      expect(Math.max(...wide.stdout.split('\n').map(cols))).toBeGreaterThanOrEqual(
        Math.max(...r.stdout.split('\n').map(cols)),
      );
    });
  }

  it('prune --apply --archive, then restore --list and restore, and --help', () => {
    const apply = runCli(['prune', '--apply', '--home', s.home, '--max-age-days', '30', '--archive', archive], s.env);
    expect(apply.code, apply.stderr).toBe(0);
    expect(tooWide(apply.stdout)).toEqual([]);
    const list = runCli(['restore', archive, '--home', s.home, '--list'], s.env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split('\n').length).toBeGreaterThan(10);
    expect(tooWide(list.stdout)).toEqual([]);
    const restore = runCli(['restore', archive, '--home', s.home], s.env);
    expect(restore.stdout).toContain('restored');
    expect(tooWide(restore.stdout)).toEqual([]);
    for (const help of [
      ['--help'],
      ...['sessions', 'prune', 'restore', 'health', 'startup', 'run', 'install-units'].map((c) => [c, '--help']),
    ]) {
      const h = runCli(help);
      expect(h.code).toBe(0);
      expect(tooWide(h.stdout), help.join(' ')).toEqual([]);
    }
  });

  it('--wide shows every key whole, in sessions and prune', () => {
    const t = sample(8);
    const keys = t.sample.sessions.map((x) => x.key);
    expect(keys.some((k) => k.length > 40)).toBe(true);
    const narrow = runCli(['sessions', '--home', t.home], t.env).stdout;
    expect(keys.filter((k) => k.length > 40 && narrow.includes(k))).toEqual([]);
    for (const args of [['sessions'], ['prune', '--max-age-days', '30']]) {
      const wide = runCli([...args, '--home', t.home, '--wide'], t.env).stdout;
      for (const k of keys) expect(wide).toContain(k);
    }
  });
});

describe('fitting a table', () => {
  const rows = [
    [
      'DELETE',
      'agent:cron-0123456789abcdef-11111111-2222-4333-8444-555555555555',
      '2026-08-03T03:50:25Z',
      '119d',
      'refused: another gateway was running at the time',
    ],
  ];
  const columns = [
    { header: 'ACTION' },
    { header: 'KEY', fit: 'middle' as const, min: 20 },
    { header: 'LAST ACTIVITY', drop: 1 },
    { header: 'AGE', align: 'right' as const },
    { header: 'NOTE', fit: 'wrap' as const, min: 12 },
  ];
  it('drops what may go, shortens keys in the middle and wraps the last column', () => {
    const lines = fitTable(columns, rows, 60);
    expect(lines.every((l) => cols(l) <= 60)).toBe(true);
    expect(lines[0]).not.toContain('LAST ACTIVITY');
    expect(lines.join('\n')).toMatch(/agent:cron-\S*…\S*555555/);
    expect(lines.join(' ').replace(/\s+/g, ' ')).toContain('refused: another gateway was running at the time');
  });
  it(
    'a LayoutWriter writes a table of thousands of rows in chunks, made in ' +
      'two passes, the same text as layout(fitTable())',
    () => {
      const many = Array.from({ length: 6000 }, (_, i) => [
        'keep',
        `sk_v1_${i}_\u001b[2J_${'x'.repeat(i % 70)}`,
        '2026-08-03T03:50:25Z',
        `${i % 400}d`,
        i % 97 === 0 ? 'a long note that must wrap onto more lines than one' : '',
      ]);
      for (const width of [60, 120, Infinity]) {
        let passes = 0;
        const rowsOnce = () => {
          passes++;
          return (function* () {
            yield* many;
          })();
        };
        const chunks: string[] = [];
        const w = new LayoutWriter(width, (c) => chunks.push(c));
        w.push('head line', '');
        w.table(columns, rowsOnce);
        w.push('tail');
        w.flush();
        expect(passes).toBe(2);
        expect(chunks.length).toBeGreaterThan(2);
        expect(chunks.join('')).toBe(
          layout(['head line', '', ...fitTable(columns, many, width), 'tail'], width) + '\n',
        );
      }
    },
  );
  it('keeps everything at its natural width when it fits or with --wide', () => {
    expect(fitTable(columns, rows, Infinity).join('\n')).toContain(rows[0]![1]!);
    expect(fitTable(columns, rows, Infinity)[0]).toContain('LAST ACTIVITY');
  });
  it('uses the terminal width when stdout is one, else 80; --wide is unlimited', () => {
    expect(outputWidth({}, { isTTY: true, columns: 132 })).toBe(132);
    expect(outputWidth({}, { isTTY: false, columns: 132 })).toBe(80);
    expect(outputWidth({}, {})).toBe(80);
    expect(outputWidth({ wide: true }, { isTTY: true, columns: 60 })).toBe(Infinity);
  });
});

describe('control characters in keys are shown escaped', () => {
  const evil = 'sk_v1_evil\x1b[2J\nDELETE  forged-row\x07';
  function evilHome() {
    const root = tempDir('pcg-esc-');
    const home = join(root, 'h');
    const now = Date.now();
    handHome(home, [
      {
        key: evil,
        updated: iso(now - 90 * DAY),
        seahorse: [new Date(now - 90 * DAY).toISOString().slice(0, 19).replace('T', ' ')],
      },
      { key: 'sk_v1_new', updated: iso(now - DAY) },
    ]);
    return { root, home, env: { HOME: root, STATE_DIRECTORY: join(root, 'state') } };
  }
  it('escapeControl shows ESC, newline, BEL, C1 and bidi overrides visibly', () => {
    expect(escapeControl(evil)).toBe('sk_v1_evil\\x1b[2J\\nDELETE  forged-row\\x07');
    expect(escapeControl('a\u009bb\u202ec\td')).toBe('a\\x9bb\\u202ec\\td');
  });
  for (const args of [
    ['sessions'],
    ['sessions', '--wide'],
    ['prune', '--max-age-days', '30'],
    ['prune', '--max-age-days', '30', '--wide'],
  ]) {
    it(args.join(' '), () => {
      const { home, env } = evilHome();
      const r = runCli([...args, '--home', home], env);
      expect(r.code, r.stderr).toBe(0);
      // eslint-disable-next-line no-control-regex -- the point: no control character reaches the terminal
      expect(r.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
      expect(r.stdout).not.toMatch(/^DELETE {2}forged-row/m);
      expect(r.stdout).toMatch(
        args.includes('--wide') ? /sk_v1_evil\\x1b\[2J\\nDELETE {2}forged-row\\x07/ : /sk_v1_evil\\x1b/,
      );
    });
  }
  it('an error message naming such a path', () => {
    const r = runCli(['sessions', '--home', join(tempDir(), 'no\x1b[2Jhome')]);
    expect(r.code).toBe(2);
    // eslint-disable-next-line no-control-regex -- no raw ESC in the error
    expect(r.stderr).not.toMatch(/\x1b/);
    expect(r.stderr).toContain('no\\x1b[2Jhome');
  });
  it('restore --list of an archive holding that key', () => {
    const { root, home, env } = evilHome();
    const archive = join(root, 'archive');
    expect(runCli(['prune', '--apply', '--home', home, '--max-age-days', '30', '--archive', archive], env).code).toBe(
      0,
    );
    const r = runCli(['restore', archive, '--home', home, '--list', '--wide'], env);
    // eslint-disable-next-line no-control-regex -- the point: no control character reaches the terminal
    expect(r.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
    expect(r.stdout).toContain('sk_v1_evil\\x1b[2J\\nDELETE  forged-row\\x07');
  });
});

describe('words and numbers agree', () => {
  function groupHome() {
    const root = tempDir('pcg-words-');
    const home = join(root, 'h');
    const now = Date.now();
    handHome(home, [
      // An alias group whose newer member is 7 days old: the 90-day-old member stays with it.
      { key: 'sk_v1_oldalias', updated: iso(now - 90 * DAY) },
      { key: 'agent:main:direct:1234', updated: iso(now - 7 * DAY), aliases: ['sk_v1_oldalias'] },
      // Another group, both old: deleted together; and one old single session.
      { key: 'sk_v1_gone_a', updated: iso(now - 80 * DAY) },
      { key: 'agent:main:direct:5678', updated: iso(now - 70 * DAY), aliases: ['sk_v1_gone_a'] },
      { key: 'sk_v1_gone_b', updated: iso(now - 60 * DAY) },
      { key: 'sk_v1_new', updated: iso(now - DAY) },
    ]);
    return { root, home, env: { HOME: root, STATE_DIRECTORY: join(root, 'state') } };
  }

  it('a session kept because of its alias group says so, in JSON and text', () => {
    const { home, env } = groupHome();
    const j = JSON.parse(runCli(['prune', '--home', home, '--max-age-days', '30', '--json'], env).stdout);
    const kept = j.sessions.find((x: { key: string }) => x.key === 'sk_v1_oldalias');
    expect(kept).toMatchObject({
      action: 'keep',
      detail: 'kept with its alias group: agent:main:direct:1234 is 7 days old',
    });
    const newer = j.sessions.find((x: { key: string }) => x.key === 'agent:main:direct:1234');
    expect(newer.detail).toBeNull();
    const text = runCli(['prune', '--home', home, '--max-age-days', '30'], env).stdout;
    expect(text).toContain('kept sk_v1_oldalias with its alias group: agent:main:direct:1234 is 7 days old');
  });

  it('after --apply the summary says kept, and the progress line counts the sessions the report counts', () => {
    const { home, env } = groupHome();
    const r = runCli(['prune', '--apply', '--home', home, '--max-age-days', '30'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/; deleted 3, kept 3;/);
    expect(r.stdout).not.toMatch(/\bkeep\b/);
    const progress = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('pruning:'))
      .pop();
    expect(progress).toBe('pruning: 3/3 sessions');
  });

  it('sizes of a gibibyte and more read as GiB', () => {
    expect(formatBytes(81208.4 * 1024 * 1024)).toBe('79.3 GiB');
    expect(formatBytes(1024 ** 3)).toBe('1.0 GiB');
    expect(formatBytes(1023 * 1024 * 1024)).toBe('1023 MiB');
    expect(formatBytes(3 * 1024 ** 4)).toBe('3.0 TiB');
    // The prune report's VACUUM reasons and health's disk problems use the same formatter.
    const dir = tempDir();
    const room = roomForVacuum(
      join(dir, 'seahorse.db'),
      2 * 1024 ** 2,
      () => ({
        availableBytes: 81208.4 * 1024 * 1024,
        totalBytes: 200 * 1024 ** 3,
        availableInodes: 1e6,
        totalInodes: 2e6,
      }),
      { SQLITE_TMPDIR: dir },
    );
    expect(room.reason).toContain('79.3 GiB free');
    expect(room.reason).not.toMatch(/\d{4,}(\.\d)? MiB/);
  });

  it('health, startup and sessions give the sessions of a home one size, each saying what it counts', () => {
    const s = sample(9);
    const inv = JSON.parse(runCli(['sessions', '--home', s.home, '--json'], s.env).stdout);
    const health = JSON.parse(runCli(['health', '--home', s.home, '--json', ...healthArgs], s.env).stdout);
    const startup = JSON.parse(runCli(['startup', '--home', s.home, '--json'], s.env).stdout);
    const jsonl = inv.totals.jsonl_bytes + inv.orphan_jsonl.reduce((n: number, o: { bytes: number }) => n + o.bytes, 0);
    const all = inv.sessions.reduce(
      (n: number, x: { jsonl_bytes: number; meta_bytes: number }) => n + x.jsonl_bytes + x.meta_bytes,
      0,
    );
    expect(health.picoclaw.sessions.jsonl_bytes).toBe(jsonl);
    expect(health.picoclaw.sessions.count).toBe(inv.totals.sessions + 0);
    expect(startup.sessions_now.bytes).toBe(all);
    const wide = (args: string[]) => runCli([...args, '--home', s.home, '--wide'], s.env).stdout;
    expect(wide(['health', ...healthArgs])).toContain(`.jsonl files ${formatBytes(jsonl)}`);
    expect(wide(['sessions'])).toContain(
      `Total: ${inv.totals.sessions} sessions, ${formatBytes(all)} (.jsonl ${formatBytes(inv.totals.jsonl_bytes)}`,
    );
    expect(wide(['startup'])).toContain(`${formatBytes(all)} of .jsonl + .meta.json`);
  });
});

describe('startup reads a log the same way however it is named', () => {
  it("--log <the home's gateway.log>, a symlink to it, and no --log give one answer", () => {
    const s = sample(10);
    const log = join(s.home, 'logs', 'gateway.log');
    const link = join(s.root, 'link.log');
    symlinkSync(log, link);
    const read = (extra: string[]) => {
      const j = JSON.parse(runCli(['startup', '--home', s.home, '--json', ...extra], s.env).stdout);
      return j.restarts.map((x: { n: number; end: string; end_detail: string | null }) => [x.n, x.end, x.end_detail]);
    };
    const plain = read([]);
    // The sample's PID file names a process that is gone: the latest restart did not survive.
    expect(plain[plain.length - 1][2]).toMatch(/no gateway runs now/);
    expect(read(['--log', log])).toEqual(plain);
    expect(read(['--log', link])).toEqual(plain);
    const text = (extra: string[]) =>
      runCli(['startup', '--home', s.home, '--wide', ...extra], s.env).stdout.replace(/^.*gateway\.log: /m, '');
    expect(text(['--log', log])).toBe(text([]));
  });
});
