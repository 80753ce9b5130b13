#!/usr/bin/env node
/**
 * `npm run test:system`: the units, the daemon and the pre-start pass under a real
 * systemd. Boots a Debian bookworm root file system (systemd 252, the version of
 * Raspberry Pi OS bookworm; built once by scripts/system/rootfs.sh) with systemd-nspawn,
 * with this machine's Node and the built project bound in read-only, a user owning a
 * sample PicoClaw home, a stand-in gateway (scripts/system/gateway.mjs) and a stand-in
 * vcgencmd; runs `picoclaw-guard install-units` there and checks, through systemd, what
 * the units promise. Every wait polls for an event with a bounded total.
 *
 * Needs root (debootstrap, nspawn, nsenter). Environment:
 *   PICOCLAW_GUARD_TEST_CACHE    root file system cache (default /var/cache/picoclaw-guard-test)
 *   PICOCLAW_GUARD_SYSTEM_BREAK  a sed script applied to the two installed guard units,
 *                                to see this test fail on a broken unit, e.g.
 *                                's/^KillMode=mixed/KillMode=control-group/'
 *   PICOCLAW_GUARD_SYSTEM_KEEP=1 leave the container running at the end (prints its PID)
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cache = process.env.PICOCLAW_GUARD_TEST_CACHE ?? '/var/cache/picoclaw-guard-test';
const BREAK = process.env.PICOCLAW_GUARD_SYSTEM_BREAK ?? '';
const T0 = Date.now();
const isRoot = process.getuid?.() === 0;
const skip = isRoot ? false : 'needs root: debootstrap, systemd-nspawn and nsenter';

const USER = 'picoclaw';
const HOME = `/home/${USER}/.picoclaw`;
const ARCHIVE = '/var/lib/picoclaw-guard-archive';
const TEXTFILE = '/var/lib/prometheus/node-exporter';
const STATE = '/var/lib/picoclaw-guard';
const GUARD = 'picoclaw-guard.service';
const PRESTART = 'picoclaw-guard-prestart.service';
const GATEWAY = 'picoclaw.service';
const CLI = '/opt/picoclaw-guard/dist/src/cli.js';
/** A documentation address (RFC 5737) put on the container's loopback: reachable, but not "localhost". */
const FOREIGN = '192.0.2.1';

let nspawn = null;
let leader = 0;
let stage = '';
let cgroup = '';
let sessions0 = 0;

const log = (msg) => process.stderr.write(`[test:system +${((Date.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  return r.stdout;
}

/** A shell command inside the container, in all its namespaces, as root with a clean environment. */
function inside(cmd, { check = true, timeout = 200_000 } = {}) {
  const r = spawnSync(
    'nsenter',
    [
      '-t',
      String(leader),
      '-m',
      '-u',
      '-i',
      '-n',
      '-p',
      '-C',
      '-r',
      '-w',
      '/usr/bin/env',
      '-i',
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      'LANG=C.UTF-8',
      'SYSTEMD_PAGER=',
      'SYSTEMD_COLORS=0',
      'bash',
      '-c',
      cmd,
    ],
    { encoding: 'utf8', timeout, maxBuffer: 64 << 20 },
  );
  if (check && r.status !== 0)
    throw new Error(`inside the container: ${cmd}\nexit ${r.status ?? r.signal}\n${r.stdout}${r.stderr}`);
  return check ? r.stdout : r;
}

/** A file in the container's root, seen from the host. */
const inRoot = (p) => `/proc/${leader}/root${p}`;

async function waitFor(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let last = null;
  for (;;) {
    try {
      const v = fn();
      if (v) return v;
      last = null;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(`gave up after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(250);
  }
}

function show(unit, ...props) {
  const out = inside(`systemctl show ${props.map((p) => `-p ${p}`).join(' ')} ${unit}`);
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

const cursor = () => /-- cursor: (.*)/.exec(inside('journalctl -n 0 --show-cursor -q'))?.[1] ?? '';
const journal = (since, ...units) =>
  inside(`journalctl -q -o cat --after-cursor='${since}' ${units.map((u) => `-u ${u}`).join(' ')}`);

/** An HTTP GET from inside the container (root, outside every unit): status and body. */
function get(path) {
  const out = inside(
    `node -e 'fetch("http://127.0.0.1:9109${path}").then(async (r) => console.log(r.status + "\\n" + (await r.text()))).catch((e) => { console.log("0\\n" + e.cause?.code); })'`,
  );
  const nl = out.indexOf('\n');
  return { status: Number(out.slice(0, nl)), body: out.slice(nl + 1) };
}

const countSessions = () => Number(inside(`find ${HOME} -name '*.jsonl' -path '*/sessions/*' | wc -l`).trim());

function writeConfig(prune) {
  const cfg = { prune: { archive_dir: ARCHIVE, ...prune }, metrics: { textfile_dir: TEXTFILE, refresh_seconds: 5 } };
  mkdirSync(inRoot('/etc/picoclaw-guard'), { recursive: true });
  writeFileSync(inRoot('/etc/picoclaw-guard/config.json'), JSON.stringify(cfg, null, 2) + '\n');
}

/** The container's PID 1, seen from the host: a descendant of nspawn whose NSpid ends in 1. */
function findLeader(parent) {
  const ppid = new Map();
  const candidates = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/status`, 'utf8');
      ppid.set(Number(d), Number(/PPid:\s+(\d+)/.exec(st)?.[1]));
      const ns = /NSpid:\s+([\d\s]+)/.exec(st)?.[1].trim().split(/\s+/);
      if (ns && ns.length > 1 && ns.at(-1) === '1') candidates.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return candidates.find((c) => {
    for (let p = c, hops = 0; p > 1 && hops < 10; p = ppid.get(p) ?? 0, hops++) if (p === parent) return true;
    return false;
  });
}

/**
 * The built project as a global install holds it: dist/src, the shipped units and config, runtime
 * dependencies. Plus dist/dev, which a release does not ship: the sample-home builder that makes the
 * test user's home (nothing the units run loads it).
 */
function stageProject(dest) {
  const deps = run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: repo })
    .split('\n')
    .filter((p) => p.startsWith(join(repo, 'node_modules')))
    .map((p) => relative(repo, p));
  const units = ['picoclaw-guard.service', 'picoclaw-guard-prestart.service', 'picoclaw.service.d'];
  for (const p of ['package.json', 'dist/src', 'dist/dev', ...units, 'config', ...deps]) {
    cpSync(join(repo, p), join(dest, p), { recursive: true });
  }
}

before(async () => {
  if (skip) return;
  const t = Date.now();
  const root = run('bash', [join(repo, 'scripts/system/rootfs.sh')], { stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  log(`root file system ${root} (${((Date.now() - t) / 1000).toFixed(0)} s)`);
  // build:all: the sample-home builder (dev/) too.
  run('npm', ['run', '--silent', 'build:all'], { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] });
  stage = mkdtempSync(join(cache, 'run-'));
  stageProject(join(stage, 'project'));
  log('built and staged the project');

  const out = openSync(join(stage, 'nspawn.log'), 'w');
  // With --keep-unit the container's systemd manages the cgroup nspawn runs in: give each
  // run one of its own, or two runs at once (or this machine's root cgroup) share one tree
  // and their units' cgroups collide (219/CGROUP, "Failed to kill control group").
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  cgroup = join(v2, `picoclaw-guard-test-${process.pid}`);
  mkdirSync(cgroup, { recursive: true });
  nspawn = spawn(
    'sh',
    [
      '-c',
      'echo $$ > "$0/cgroup.procs" && exec "$@"',
      cgroup,
      'systemd-nspawn',
      '-D',
      root,
      '--volatile=overlay',
      '--boot',
      '--register=no',
      '--keep-unit',
      '--private-network',
      '--machine',
      `pcg-test-${process.pid}`,
      // Without these two, DevicePolicy= and IPAddressDeny= are silently not enforced.
      '--capability=all',
      '--system-call-filter=bpf @privileged',
      `--bind-ro=${process.execPath}:/usr/local/bin/node`,
      `--bind-ro=${join(stage, 'project')}:/opt/picoclaw-guard`,
      `--bind-ro=${join(repo, 'scripts/system')}:/opt/standins`,
      '--console=read-only',
    ],
    { env: { ...process.env, SYSTEMD_NSPAWN_UNIFIED_HIERARCHY: '1' }, stdio: ['ignore', out, out] },
  );
  nspawn.on('exit', (code, sig) =>
    log(`systemd-nspawn exited (${code ?? sig}); its output: ${join(stage, 'nspawn.log')}`),
  );
  // Interrupted: no container is left behind.
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      if (nspawn.exitCode === null) nspawn.kill('SIGKILL');
      process.exit(130);
    });
  }
  leader = await waitFor(
    'the container to start (systemd-nspawn)',
    () => {
      if (nspawn.exitCode !== null) throw new Error(readFileSync(join(stage, 'nspawn.log'), 'utf8'));
      return findLeader(nspawn.pid);
    },
    60_000,
  );
  await waitFor(
    'systemd in the container to finish booting',
    () => /^(running|degraded)/.test(inside('systemctl is-system-running', { check: false }).stdout ?? ''),
    120_000,
  );
  log(`booted (container PID 1 is ${leader} here)`);

  inside(`useradd --create-home --user-group --shell /usr/sbin/nologin ${USER} && ip addr add ${FOREIGN}/32 dev lo`);
  const builder = '/opt/picoclaw-guard/dist/dev/sample/builder.js';
  const sample = `{ dir: "${HOME}", seed: 11, sessions: 400, agents: 2, spanDays: 60, now: Date.now() }`;
  const script = `const m = await import("${builder}"); m.buildSampleHome(${sample})`;
  inside(`runuser -u ${USER} -- node --input-type=module -e '${script}'`);
  sessions0 = countSessions();
  inside(
    `install -m 0755 /opt/standins/vcgencmd /usr/local/bin/vcgencmd && install -m 0644 /opt/standins/picoclaw.service /etc/systemd/system/${GATEWAY}`,
  );
  writeConfig({ enabled: false, max_age_days: 30, check_interval_minutes: 60 });
  log(`a sample home with ${sessions0} sessions for ${USER}; the stand-in gateway unit and vcgencmd are in place`);
});

after(() => {
  if (!nspawn) return;
  if (process.env.PICOCLAW_GUARD_SYSTEM_KEEP) {
    log(`container left running: nsenter -t ${leader} -a; stop it with kill ${nspawn.pid}`);
    nspawn.unref();
    return;
  }
  // nspawn shuts the container down on SIGTERM; a second one ends it at once.
  nspawn.kill('SIGTERM');
  const t = setTimeout(() => nspawn.kill('SIGKILL'), 30_000);
  nspawn.on('exit', () => {
    clearTimeout(t);
    rmSync(stage, { recursive: true, force: true });
    try {
      rmSync(cgroup, { recursive: false });
    } catch {
      // still busy or already gone: an empty cgroup costs nothing
    }
    log(`done in ${((Date.now() - T0) / 1000).toFixed(0)} s`);
  });
});

test('install-units writes units for this container, and the folders ReadWritePaths names', { skip }, () => {
  const out = inside(`node ${CLI} install-units --user ${USER}`);
  assert.match(out, /wrote \/etc\/systemd\/system\/picoclaw-guard\.service/);
  const unit = readFileSync(inRoot(`/etc/systemd/system/${GUARD}`), 'utf8');
  // The container has no Raspberry Pi firmware devices: no DeviceAllow= for them.
  assert.doesNotMatch(unit, /DeviceAllow=\/dev\/(vcio|vchiq)/);
  assert.match(unit, /^DevicePolicy=closed$/m);
  assert.match(unit, new RegExp(`^ReadWritePaths=.*-${ARCHIVE}`, 'm'));
  for (const dir of [ARCHIVE, TEXTFILE])
    assert.equal(inside(`stat -c %U ${dir}`).trim(), USER, `${dir} should exist and belong to ${USER}`);
  if (BREAK) {
    log(`PICOCLAW_GUARD_SYSTEM_BREAK: applying sed ${JSON.stringify(BREAK)} to the installed guard units`);
    run('sed', ['-i', '-e', BREAK, inRoot(`/etc/systemd/system/${GUARD}`), inRoot(`/etc/systemd/system/${PRESTART}`)]);
  }
  inside(`systemctl daemon-reload && systemctl enable ${GATEWAY} ${GUARD}`);
});

test(
  'starting the gateway runs pre-start (skipping: not enabled), then the gateway, then the guard',
  { skip },
  async () => {
    const c = cursor();
    inside(`systemctl start ${GATEWAY}`);
    await waitFor(`${GUARD} active and answering /health`, () => get('/health').status === 200, 150_000);
    const pre = show(
      PRESTART,
      'Result',
      'ExecMainStatus',
      'ExecMainStartTimestampMonotonic',
      'ExecMainExitTimestampMonotonic',
    );
    const gw = show(GATEWAY, 'ExecMainStartTimestampMonotonic');
    const guard = show(GUARD, 'ExecMainStartTimestampMonotonic');
    assert.equal(pre.Result, 'success');
    assert.ok(Number(pre.ExecMainExitTimestampMonotonic) > 0, 'pre-start ran');
    assert.ok(
      Number(pre.ExecMainExitTimestampMonotonic) <= Number(gw.ExecMainStartTimestampMonotonic),
      'pre-start ended before the gateway started',
    );
    assert.ok(
      Number(gw.ExecMainStartTimestampMonotonic) <= Number(guard.ExecMainStartTimestampMonotonic),
      'the gateway started before the guard',
    );
    assert.match(journal(c, PRESTART), /not enabled/);
    assert.equal(countSessions(), sessions0);
  },
);

test(
  "the guard's Node runs with the units' flags: gc exposed, a small young generation, one V8 platform thread",
  { skip },
  () => {
    const pid = show(GUARD, 'MainPID').MainPID;
    const env = inside(`tr '\\0' '\\n' < /proc/${pid}/environ`).split('\n');
    // systemd unquotes the Environment= line: Node reads the three flags, or would refuse to start.
    assert.ok(env.includes('NODE_OPTIONS=--expose-gc --max-semi-space-size=2 --v8-pool-size=1'), env.join(' '));
    assert.ok(env.includes('MALLOC_ARENA_MAX=1'));
  },
);

test('/health and /metrics answer through loopback; the stand-in vcgencmd is read', { skip }, async () => {
  const h = get('/health');
  assert.equal(h.status, 200, h.body);
  const health = JSON.parse(h.body);
  assert.equal(health.picoclaw.gateway.state, 'ready', 'the stand-in gateway, probed on 127.0.0.1:18790');
  assert.equal(health.throttle.source, 'vcgencmd');
  assert.equal(health.throttle.get_throttled, '0x50000', 'the stand-in vcgencmd (video group, DevicePolicy=closed)');
  assert.equal(health.throttle.since_boot.under_voltage, true);
  const m = await waitFor(
    '/metrics with a gateway reading',
    () => {
      const r = get('/metrics');
      return r.status === 200 && /picoclaw_guard_build_info/.test(r.body) ? r : null;
    },
    30_000,
  );
  assert.match(m.body, /picoclaw_guard_prune_running 0/);
});

test('IPAddressDeny= is enforced on the guard: loopback only', { skip }, () => {
  const cg = show(GUARD, 'ControlGroup').ControlGroup;
  assert.ok(cg, 'the guard has a control group');
  const probe = (host, inGuard) =>
    inside(
      `${inGuard ? `echo $$ > /sys/fs/cgroup${cg}/cgroup.procs && ` : ''}exec node -e 'const s = require("net").connect(18790, "${host}"); s.on("connect", () => { console.log("connected"); s.destroy(); }); s.on("error", (e) => console.log(e.code)); setTimeout(() => { console.log("timeout"); process.exit(0); }, 5000).unref();'`,
    ).trim();
  assert.equal(probe(FOREIGN, false), 'connected', `${FOREIGN} is reachable outside the guard's unit`);
  assert.equal(probe('127.0.0.1', true), 'connected', 'loopback is reachable from the guard');
  assert.notEqual(probe(FOREIGN, true), 'connected', `${FOREIGN} must be blocked for the guard`);
});

test('with prune enabled, pre-start prunes and archives; the guard writes its textfile', { skip }, async () => {
  writeConfig({ enabled: true, max_age_days: 30, check_interval_minutes: 60 });
  const c = cursor();
  inside(`systemctl restart ${GATEWAY}`);
  await waitFor(`${GUARD} back and answering /health`, () => get('/health').status === 200, 150_000);
  assert.equal(show(PRESTART, 'Result').Result, 'success', journal(c, PRESTART));
  const left = countSessions();
  assert.ok(left < sessions0, `sessions deleted (${sessions0} -> ${left})\n${journal(c, PRESTART)}`);
  const archives = inside(`find ${ARCHIVE} -type f -user ${USER} | wc -l`).trim();
  assert.ok(Number(archives) >= sessions0 - left, `one archive per deleted session in ${ARCHIVE} (${archives})`);
  await waitFor(`${TEXTFILE}/picoclaw_guard.prom`, () => existsSync(inRoot(`${TEXTFILE}/picoclaw_guard.prom`)), 60_000);
  assert.match(readFileSync(inRoot(`${TEXTFILE}/picoclaw_guard.prom`), 'utf8'), /picoclaw_guard_build_info/);
});

test('systemctl reload re-reads the configuration in the same process', { skip }, async () => {
  const pid = show(GUARD, 'MainPID').MainPID;
  writeConfig({ enabled: true, max_age_days: 3, check_interval_minutes: 2 });
  const c = cursor();
  inside(`systemctl reload ${GUARD}`);
  await waitFor(
    '"configuration reloaded" with the new interval',
    () => /configuration reloaded/.test(journal(c, GUARD)) && /"interval_seconds":120/.test(journal(c, GUARD)),
    30_000,
  );
  assert.equal(show(GUARD, 'MainPID').MainPID, pid);
});

test('a stop in the middle of a prune pass exits 0 within TimeoutStopSec', { skip }, async () => {
  // Each session step takes 0.5 s (a test hook of the pass child), so the pass is long
  // enough to be caught in the middle; without the state files the pass starts at once.
  mkdirSync(inRoot(`/etc/systemd/system/${GUARD}.d`), { recursive: true });
  writeFileSync(
    inRoot(`/etc/systemd/system/${GUARD}.d/50-system-test.conf`),
    '[Service]\nEnvironment=PICOGUARD_TEST_STEP_DELAY_MS=500\n',
  );
  inside(
    `systemctl daemon-reload && rm -f ${STATE}/daemon-last-run-*.json ${STATE}/prune-history.jsonl && systemctl restart ${GUARD}`,
  );
  await waitFor(
    'a prune pass running (picoclaw_guard_prune_running 1)',
    () => /picoclaw_guard_prune_running 1/.test(get('/metrics').body),
    90_000,
  );
  const c = cursor();
  inside(`systemctl stop ${GUARD}`, { timeout: 60_000 });
  const s = show(GUARD, 'Result', 'ExecMainStatus', 'ExecMainCode');
  const j = journal(c, GUARD);
  assert.equal(s.Result, 'success', `stop result (timeout means TimeoutStopSec was exceeded)\n${j}`);
  assert.equal(s.ExecMainStatus, '0', j);
  assert.match(j, /"msg":"stopping".*"pass_running":true|"pass_running":true.*"msg":"stopping"/);
  assert.match(j, /"msg":"stopped"/);
  // The pass child stopped between two sessions and reported: not killed, not failed.
  const pass = j
    .split('\n')
    .filter((l) => l.includes('"msg":"prune pass"'))
    .map((l) => JSON.parse(l));
  assert.equal(pass.length, 1, j);
  assert.equal(pass[0].stopped_early, true);
  assert.notEqual(pass[0].outcome, 'failed', j);
  rmSync(inRoot(`/etc/systemd/system/${GUARD}.d/50-system-test.conf`));
  inside('systemctl daemon-reload');
});

test('kill -9 of the guard is restarted by systemd', { skip }, async () => {
  inside(`systemctl start ${GUARD}`);
  await waitFor(`${GUARD} answering /health`, () => get('/health').status === 200, 60_000);
  const before = show(GUARD, 'MainPID', 'NRestarts');
  inside(`systemctl kill --signal=SIGKILL --kill-who=main ${GUARD}`);
  const now = await waitFor(
    `${GUARD} restarted (RestartSec=10s)`,
    () => {
      const s = show(GUARD, 'MainPID', 'NRestarts', 'ActiveState');
      return s.ActiveState === 'active' && s.MainPID !== '0' && s.MainPID !== before.MainPID ? s : null;
    },
    60_000,
  );
  assert.equal(Number(now.NRestarts), Number(before.NRestarts) + 1);
  await waitFor('/health after the restart', () => get('/health').status === 200, 60_000);
});

test("the guard's units logged no EPERM, EACCES, SIGSYS or missing device", { skip }, () => {
  // systemd logs "Couldn't stat device" as PID 1 (init.scope), not as the unit.
  const j = inside(
    `journalctl -b -q -o cat -u ${GUARD} -u ${PRESTART}; journalctl -b -q -o cat _PID=1 | grep -E "picoclaw-guard|Couldn't stat device" || true`,
  );
  const bad = j
    .split('\n')
    .filter((l) =>
      /EPERM|EACCES|EROFS|SIGSYS|Couldn't stat device|Operation not permitted|Permission denied|Read-only file system/.test(
        l,
      ),
    );
  assert.deepEqual(bad, []);
  assert.equal(
    inside(`systemctl is-failed ${GUARD} ${PRESTART} ${GATEWAY}`, { check: false }).stdout.includes('failed'),
    false,
  );
});
