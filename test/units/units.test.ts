import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { allowedDevices, outermost, renderUnits, unitPath, type UnitValues } from '../../src/install/units.js';
import { NODE_FLAGS } from '../../src/daemon/pass-runner.js';
import { CLI, runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * The systemd units: `install-units` renders them with this machine's Node and this
 * checkout's CLI, then `systemd-analyze verify` must print nothing at all (it exits 0 on
 * warnings such as "Unknown key", see systemd-analyze(1)) and `systemd-analyze security
 * --offline=true` must stay under THRESHOLD (exposure 2.0 of 10: "OK").
 */
const SA = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p)) ?? null;
const THRESHOLD = 20;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI_REAL = realpathSync(CLI);

/** A PicoClaw home and a fake gateway unit beside the rendered ones (verify follows PartOf=/WantedBy=). */
function setup(gatewayUnit = 'picoclaw.service') {
  const root = tempDir('pcg-units-');
  const home = join(root, 'picoclaw-home');
  mkdirSync(join(home, 'workspace', 'sessions'), { recursive: true });
  writeFileSync(join(home, 'config.json'), '{}');
  const dest = join(root, 'units');
  mkdirSync(dest);
  writeFileSync(
    join(dest, gatewayUnit),
    `[Unit]\nDescription=fake PicoClaw gateway\n\n[Service]\nType=exec\nExecStart=${process.execPath}` +
      ` -e "setInterval(() => {}, 1000)"\n\n[Install]\nWantedBy=multi-user.target\n`,
  );
  return { root, home, dest };
}

/**
 * `--user picoclaw`: install-units resolves users through NSS (`getent passwd`), and this machine may have no
 * such user: a `getent` first on PATH answers for picoclaw (as LDAP or systemd-homed would) and hands every
 * other question to the real one.
 */
let fakeNss: string | null = null;
function nssPath(): string {
  if (!fakeNss) {
    fakeNss = mkdtempSync(join(tmpdir(), 'pcg-nss-'));
    const real = spawnSync('sh', ['-c', 'command -v getent'], { encoding: 'utf8' }).stdout.trim() || '/usr/bin/getent';
    writeFileSync(
      join(fakeNss, 'getent'),
      `#!/bin/sh\nif [ "$1" = passwd ] && [ "$2" = picoclaw ]; then\n` +
        `  echo 'picoclaw:x:64999:64999:PicoClaw:/home/picoclaw:/usr/sbin/nologin'; exit 0\nfi\nexec ${real} "$@"\n`,
      { mode: 0o755 },
    );
  }
  return `${fakeNss}:${process.env.PATH}`;
}
afterAll(() => {
  if (fakeNss) rmSync(fakeNss, { recursive: true, force: true });
});

function install(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(['install-units', ...args], { PATH: nssPath(), ...env });
}

function verify(dest: string, files: string[]) {
  const r = spawnSync(SA!, ['verify', '--man=no', ...files.map((f) => join(dest, f))], { encoding: 'utf8', cwd: dest });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function security(dest: string, file: string) {
  const r = spawnSync(SA!, ['security', '--offline=true', `--threshold=${THRESHOLD}`, '--no-pager', join(dest, file)], {
    encoding: 'utf8',
    cwd: dest,
  });
  const level = /Overall exposure level for \S+: (\d+\.\d) (\w+)/.exec(r.stdout);
  return {
    code: r.status,
    exposure: level ? Number(level[1]) : null,
    level: level?.[2] ?? null,
    out: r.stdout + r.stderr,
  };
}

/** Active (uncommented) settings of a unit: key → values. */
function settings(text: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  // As systemd reads them: a line ending in a backslash goes on with the next, the backslash read as a space.
  for (const line of text.replace(/ ?\\\n\s*/g, ' ').split('\n')) {
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (kv) m.set(kv[1]!, [...(m.get(kv[1]!) ?? []), kv[2]!]);
  }
  return m;
}

describe('install-units', () => {
  it('--dry-run prints the three files and the two systemctl commands, and writes nothing', () => {
    const { home, dest } = setup();
    const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const f of [
      'picoclaw-guard.service',
      'picoclaw-guard-prestart.service',
      'picoclaw.service.d/picoclaw-guard.conf',
    ])
      expect(r.stdout).toContain(`# ---- ${join(dest, f)} ----`);
    expect(r.stdout).toMatch(/systemctl daemon-reload\n/);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(r.stdout.match(/^# Written by .*$/gm)).toEqual(
      Array(3).fill(`# Written by \`picoclaw-guard install-units\` (picoclaw-guard ${version})`),
    );
    expect(r.stdout).toMatch(/systemctl enable --now picoclaw-guard\.service\n/);
    // Long paths (a Node outside /usr/bin) are continued onto the next line: read it as systemd does.
    expect(settings(r.stdout).get('ExecStart')).toContain(`${process.execPath} ${CLI_REAL} run`);
    expect(readdirSync(dest)).toEqual(['picoclaw.service']);
  });

  it('writes the units with this Node and this CLI, the home writable, the user unprivileged', () => {
    const { home, dest } = setup();
    const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`wrote ${join(dest, 'picoclaw-guard.service')}`);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .filter((l) => l.trim().startsWith('systemctl') || l.trim().startsWith('sudo systemctl')),
    ).toHaveLength(2);

    const guard = settings(readFileSync(join(dest, 'picoclaw-guard.service'), 'utf8'));
    expect(guard.get('Type')).toEqual(['exec']);
    expect(guard.get('Restart')).toEqual(['on-failure']);
    // No /bin/kill (procps) needed: minimal Debian images do not have it.
    expect(guard.get('ExecReload')).toEqual([`/bin/sh -c 'kill -HUP "$$MAINPID"'`]);
    expect(guard.get('ExecStart')).toEqual([`${process.execPath} ${CLI_REAL} run`]);
    expect(guard.get('User')).toEqual(['picoclaw']);
    expect(guard.get('StateDirectory')).toEqual(['picoclaw-guard']);
    // After= the gateway, never PartOf=: stopping PicoClaw must not stop the monitoring (README, install-units).
    expect(guard.get('PartOf')).toBeUndefined();
    expect(guard.get('After')).toEqual(['picoclaw.service']);
    expect(guard.get('WantedBy')).toEqual(['picoclaw.service']);
    expect(guard.get('Environment')).toEqual([
      `PICOCLAW_HOME=${realpathSync(home)}`,
      `"NODE_OPTIONS=${NODE_FLAGS.join(' ')}"`,
      'MALLOC_ARENA_MAX=1',
    ]);
    expect(guard.get('ReadWritePaths')).toEqual([realpathSync(home)]);
    expect(guard.get('ProtectSystem')).toEqual(['strict']);
    expect(guard.get('NoNewPrivileges')).toEqual(['yes']);
    expect(guard.get('RestrictAddressFamilies')).toEqual(['AF_UNIX AF_INET AF_INET6']);
    expect(guard.get('SystemCallArchitectures')).toEqual(['native']);
    expect(guard.get('IOSchedulingClass')).toEqual(['idle']);
    expect(Number(guard.get('Nice')![0])).toBeGreaterThanOrEqual(10);
    // V8's JIT needs W+X pages: never MemoryDenyWriteExecute for Node.
    expect(guard.has('MemoryDenyWriteExecute')).toBe(false);

    const pre = settings(readFileSync(join(dest, 'picoclaw-guard-prestart.service'), 'utf8'));
    expect(pre.get('Type')).toEqual(['oneshot']);
    expect(pre.get('ExecStart')).toEqual([`${process.execPath} ${CLI_REAL} prune --apply --if-enabled --pre-start`]);
    expect(pre.get('TimeoutStartSec')).toEqual(['150s']);
    expect(pre.get('Environment')).toEqual([
      `PICOCLAW_HOME=${realpathSync(home)}`,
      `"NODE_OPTIONS=${NODE_FLAGS.join(' ')}"`,
      'MALLOC_ARENA_MAX=1',
      'PICOGUARD_PASS_MEMORY_MB=160',
    ]);
    expect(pre.has('RemainAfterExit')).toBe(false);
    expect(pre.has('MemoryDenyWriteExecute')).toBe(false);

    const dropin = settings(readFileSync(join(dest, 'picoclaw.service.d', 'picoclaw-guard.conf'), 'utf8'));
    expect(dropin.get('Wants')).toEqual(['picoclaw-guard-prestart.service']);
    expect(dropin.get('After')).toEqual(['picoclaw-guard-prestart.service']);
    for (const hard of ['Requires', 'Requisite', 'BindsTo']) expect(dropin.has(hard)).toBe(false);
  });

  it.skipIf(!SA)('systemd-analyze verify prints nothing at all for the units and the gateway with its drop-in', () => {
    const { home, dest } = setup();
    expect(install(['--dest', dest, '--home', home, '--user', 'picoclaw']).code).toBe(0);
    expect(verify(dest, ['picoclaw-guard.service', 'picoclaw-guard-prestart.service', 'picoclaw.service'])).toEqual({
      code: 0,
      out: '',
    });
  });

  it.skipIf(!SA)(`systemd-analyze security --offline=true: both units under ${THRESHOLD / 10} ("OK")`, () => {
    const { home, dest } = setup();
    expect(install(['--dest', dest, '--home', home, '--user', 'picoclaw']).code).toBe(0);
    for (const f of ['picoclaw-guard.service', 'picoclaw-guard-prestart.service']) {
      const s = security(dest, f);
      expect(s.code, s.out).toBe(0);
      expect(s.level).toBe('OK');
      expect(s.exposure!).toBeLessThanOrEqual(THRESHOLD / 10);
    }
  });

  it.skipIf(!SA)(
    'another gateway unit name: the drop-in goes to its .d folder and After= follows; verify stays silent',
    () => {
      const { home, dest } = setup('picoclaw-gateway.service');
      const r = install([
        '--dest',
        dest,
        '--home',
        home,
        '--user',
        'picoclaw',
        '--gateway-unit',
        'picoclaw-gateway.service',
      ]);
      expect(r.code).toBe(0);
      expect(existsSync(join(dest, 'picoclaw-gateway.service.d', 'picoclaw-guard.conf'))).toBe(true);
      expect(settings(readFileSync(join(dest, 'picoclaw-guard.service'), 'utf8')).get('After')).toEqual([
        'picoclaw-gateway.service',
      ]);
      expect(
        verify(dest, ['picoclaw-guard.service', 'picoclaw-guard-prestart.service', 'picoclaw-gateway.service']),
      ).toEqual({ code: 0, out: '' });
    },
  );

  it(
    'serving a non-loopback address (with a token) drops the loopback-only ' +
      'IP filter; agents elsewhere are writable too',
    () => {
      const { root, home, dest } = setup();
      const other = join(root, 'elsewhere', 'workspace-ops');
      writeFileSync(
        join(home, 'config.json'),
        JSON.stringify({ agents: { list: [{ id: 'main' }, { id: 'ops', workspace: other }] } }),
      );
      const cfg = join(root, 'guard.json');
      writeFileSync(cfg, JSON.stringify({ server: { host: '0.0.0.0', token: 'x'.repeat(24) } }));
      const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--config', cfg]);
      expect(r.code).toBe(0);
      const guard = settings(readFileSync(join(dest, 'picoclaw-guard.service'), 'utf8'));
      expect(guard.has('IPAddressDeny')).toBe(false);
      expect(guard.get('ReadWritePaths')).toEqual([`${realpathSync(home)} -${join(other, 'sessions')}`]);
      expect(r.stdout).toMatch(/non-loopback address/);
      expect(r.stdout).not.toContain('x'.repeat(24));
    },
  );

  it('writes DeviceAllow= for /dev/vcio and /dev/vchiq only when this machine has them', () => {
    const { home, dest } = setup();
    const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--wide']);
    expect(r.code).toBe(0);
    const allowed = settings(readFileSync(join(dest, 'picoclaw-guard.service'), 'utf8')).get('DeviceAllow') ?? [];
    const present = ['/dev/vchiq', '/dev/vcio'].filter((d) => existsSync(d));
    expect(allowed).toEqual(present.map((d) => `${d} rw`));
    if (present.length < 2)
      expect(r.stdout).toMatch(/note: no \/dev\/\S+( or \/dev\/\S+)? on this board .*DeviceAllow= lines were left out/);
  });

  it(
    'creates the archive and textfile folders for the user (ReadWritePaths=- ' +
      'skips missing ones); --dry-run says what to create',
    () => {
      // The user running the test owns the home and gets the folders: chown to oneself needs no root.
      const me = userInfo().username;
      const { root, home, dest } = setup();
      const archive = join(root, 'var', 'archive');
      const textfile = join(root, 'var', 'textfile');
      const cfg = join(root, 'guard.json');
      writeFileSync(cfg, JSON.stringify({ prune: { archive_dir: archive }, metrics: { textfile_dir: textfile } }));

      const dry = install(['--dest', dest, '--home', home, '--user', me, '--config', cfg, '--dry-run', '--wide']);
      expect(dry.code).toBe(0);
      expect(existsSync(archive) || existsSync(textfile)).toBe(false);
      expect(dry.stdout).toContain(`note: ${archive} (prune.archive_dir) does not exist`);
      expect(dry.stdout).toMatch(new RegExp(`install -d -o ${me}( -g \\S+)? -m 0750 ${archive}`));
      expect(dry.stdout).toMatch(new RegExp(`install -d -o ${me}( -g \\S+)? -m 0755 ${textfile}`));

      const r = install(['--dest', dest, '--home', home, '--user', me, '--config', cfg]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      for (const [dir, mode] of [
        [archive, 0o750],
        [textfile, 0o755],
      ] as const) {
        const st = statSync(dir);
        expect(st.isDirectory()).toBe(true);
        expect(st.uid).toBe(userInfo().uid);
        expect(st.mode & 0o777).toBe(mode);
        expect(r.stdout).toContain(`created ${dir}`);
      }
      expect(settings(readFileSync(join(dest, 'picoclaw-guard.service'), 'utf8')).get('ReadWritePaths')).toEqual([
        `${realpathSync(home)} -${join(root, 'var', 'archive')} -${join(root, 'var', 'textfile')}`,
      ]);

      // A folder that exists is never changed; one the user cannot write gets a note.
      chmodSync(archive, 0o500);
      const again = install(['--dest', dest, '--home', home, '--user', me, '--config', cfg, '--wide']);
      expect(again.code).toBe(0);
      expect(again.stdout).not.toContain('created');
      expect(again.stdout).toContain(`note: ${archive} (prune.archive_dir) exists but ${me} cannot write it`);
      expect(statSync(archive).mode & 0o777).toBe(0o500);
    },
  );

  it('refuses a root-owned home without --user, and a gateway unit name that is no service', () => {
    const { home, dest } = setup();
    const r = install(['--dest', dest, '--home', home]);
    if (process.getuid?.() === 0) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/belongs to root: the guard should not run as root/);
    } else {
      expect(r.code).toBe(0);
    }
    const bad = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--gateway-unit', 'picoclaw']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not a service unit name/);
    expect(install(['--dest', dest, '--home', join(home, 'missing'), '--user', 'picoclaw']).code).toBe(2);
    const nobody = install(['--dest', dest, '--home', home, '--user', 'nobody']);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toMatch(/should not run as nobody/);
  });
});

describe('the shipped units (package root)', () => {
  const values: UnitValues = {
    node: '/usr/bin/node',
    cli: '/opt/pcg/dist/src/cli.js',
    user: 'pi',
    group: 'pi',
    home: '/home/pi/.picoclaw',
    readWritePaths: [],
    protectHome: 'read-only',
    gatewayUnit: 'picoclaw.service',
    videoGroup: true,
    devices: ['/dev/vchiq', '/dev/vcio'],
    loopbackOnly: true,
    version: 'test',
  };

  it('are what install-units rewrites: only the board-specific lines change', () => {
    const shipped = readFileSync(join(ROOT, 'picoclaw-guard.service'), 'utf8').split('\n');
    const rendered = renderUnits(values)[0]!.text.split('\n').slice(2); // minus the two-line "Written by" header
    const changed = rendered.filter((l, i) => l !== shipped[i]);
    expect(changed).toEqual([
      'ExecStart=/usr/bin/node /opt/pcg/dist/src/cli.js run',
      'User=pi',
      'Group=pi',
      'Environment=PICOCLAW_HOME=/home/pi/.picoclaw',
      'ReadWritePaths=/home/pi/.picoclaw',
      'SupplementaryGroups=video',
    ]);
    for (const f of ['picoclaw-guard.service', 'picoclaw-guard-prestart.service']) {
      expect(readFileSync(join(ROOT, f), 'utf8')).not.toMatch(/^MemoryDenyWriteExecute=/m);
    }
  });

  it('DeviceAllow= only for the firmware devices this board has', () => {
    const deviceLines = (devices: string[]) =>
      renderUnits({ ...values, devices })[0]!
        .text.split('\n')
        .filter((l) => l.startsWith('DeviceAllow='));
    expect(deviceLines(['/dev/vchiq', '/dev/vcio'])).toEqual(['DeviceAllow=/dev/vchiq rw', 'DeviceAllow=/dev/vcio rw']);
    expect(deviceLines(['/dev/vcio'])).toEqual(['DeviceAllow=/dev/vcio rw']);
    expect(deviceLines([])).toEqual([]);
    // Without them the policy stays closed: no device at all beyond systemd's pseudo devices.
    expect(renderUnits({ ...values, devices: [] })[0]!.text).toMatch(/^DevicePolicy=closed$/m);
    expect(allowedDevices()).toEqual(['/dev/vchiq', '/dev/vcio']);
  });

  it('paths are escaped for systemd or refused', () => {
    expect(unitPath('/opt/100%/x', 'p')).toBe('/opt/100%%/x');
    expect(unitPath('/opt/$HOME/x', 'p', true)).toBe('/opt/$$HOME/x');
    expect(() => unitPath('/opt/my dir', 'p')).toThrow(/space, quote or backslash/);
    expect(() => unitPath('relative', 'p')).toThrow(/absolute/);
    expect(outermost(['/a/b', '/a', '/c/d/', '/c/de'])).toEqual(['/a', '/c/d', '/c/de']);
  });
});

describe('install-units: what a person runs into', () => {
  /** Invariant: every line of a unit --dry-run prints is one systemd reads as meant; none is cut from its `#`. */
  it('--dry-run prints units a person can paste: comments keep their #, values continue with a backslash', () => {
    const { home: short, dest: dest0, root } = setup();
    // And a destination whose `# ---- <path> ----` line is wider than 80 columns, with spaces to wrap at.
    const dest = join(dest0, 'units-'.repeat(12));
    mkdirSync(dest);
    // A home whose path alone is wider than 80 columns: Environment=PICOCLAW_HOME= cannot be continued.
    const long = join(root, 'a-folder-with-a-long-name-'.repeat(3), 'picoclaw-home');
    mkdirSync(join(long, 'workspace', 'sessions'), { recursive: true });
    writeFileSync(join(long, 'config.json'), '{}');
    for (const home of [short, long]) {
      const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--dry-run']);
      expect(r.code, r.stderr).toBe(0);
      const blocks = r.stdout.split(/^# ---- (.+) ----$/m).slice(1);
      expect(blocks.length).toBe(6);
      for (let i = 0; i < blocks.length; i += 2) {
        const text = blocks[i + 1]!.replace(/^\n/, '').split(/\n\n(?=Dry run:|created|note:)/)[0]!;
        let continued = false;
        for (const line of text.split('\n')) {
          const ok =
            continued ||
            line === '' ||
            line.startsWith('#') ||
            /^\[[A-Za-z]+\]$/.test(line) ||
            /^[A-Za-z]+=/.test(line);
          expect(ok, `${blocks[i]}: ${JSON.stringify(line)}`).toBe(true);
          continued = line.endsWith('\\');
        }
        // The same text the non-dry run writes.
        const shipped = blocks[i]!.slice(dest.length + 1);
        expect(text.trimEnd()).toBe(renderedText(home, dest, shipped).trimEnd());
      }
    }
  });

  function renderedText(home: string, dest: string, file: string): string {
    const out = join(dest, 'written');
    mkdirSync(out, { recursive: true });
    expect(install(['--dest', out, '--home', home, '--user', 'picoclaw']).code).toBe(0);
    return readFileSync(join(out, file), 'utf8');
  }

  it('--user that NSS does not know: exit 2, one line naming it, nothing written', () => {
    const { home, dest } = setup();
    const before = readdirSync(dest);
    const r = install(['--dest', dest, '--home', home, '--user', 'nosuchuser-pcg']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^picoclaw-guard: there is no user nosuchuser-pcg on this system \(getent passwd/);
    expect(readdirSync(dest)).toEqual(before);
  });

  it('a user only NSS knows (not in /etc/passwd) is accepted', () => {
    expect(readFileSync('/etc/passwd', 'utf8')).not.toMatch(/^picoclaw:/m);
    const { home, dest } = setup();
    const r = install(['--dest', dest, '--home', home, '--user', 'picoclaw', '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^User=picoclaw$/m);
  });
});
