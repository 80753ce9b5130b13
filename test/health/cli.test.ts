import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LATCH_FILE } from '../../src/state/uvlatch.js';
import { CLI, NO_GUARD_CONFIG } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';
import { board, type BoardName } from './boards.js';

/**
 * The built CLI (dist/, built once by test/support/global-setup.ts) against fixture
 * boards. Spawned asynchronously so this process can serve the fake gateway meanwhile.
 */
const TOKEN = '0123456789abcdef0123456789abcdef';
const SECRET = 'sk-CONFIG-SECRET-CANARY';
const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function gateway(ready: 200 | 503): Promise<number> {
  const s = createServer((req, res) => {
    if (req.url === '/ready')
      res
        .writeHead(ready)
        .end(ready === 200 ? '{"status":"ready","uptime":"5m"}' : '{"status":"not ready","uptime":""}');
    else res.writeHead(200).end(JSON.stringify({ status: 'ok', uptime: '5m', pid: process.pid }));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

/** A home whose PID file names this (live) process and the fake gateway's port. */
function home(port: number): string {
  const dir = join(tempDir(), '.picoclaw');
  mkdirSync(join(dir, 'workspace', 'sessions'), { recursive: true });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ providers: { openai: { api_key: SECRET } }, gateway: { port } }),
  );
  writeFileSync(
    join(dir, '.picoclaw.pid'),
    JSON.stringify({ pid: process.pid, token: TOKEN, version: 'v0.2.9', port, host: '127.0.0.1' }),
  );
  return dir;
}

function health(
  name: BoardName,
  homeDir: string | null,
  stateDir: string,
  extra: string[] = [],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const b = board(name);
  const args = [
    CLI,
    'health',
    '--sys-root',
    b.sys,
    '--proc-root',
    b.proc,
    ...(homeDir === null ? [] : ['--home', homeDir]),
    '--state-dir',
    stateDir,
    ...(b.vcgencmd ? ['--vcgencmd', b.vcgencmd] : []),
    ...extra,
  ];
  // Plenty of free space whatever this machine's disk says: health alone may rehearse one
  // (src/health/rehearsed-free-space.ts).
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
    PICOGUARD_FAKE_FREE_BYTES: `/=${100 * 1024 ** 3}`,
    ...extraEnv,
  };
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('picoclaw-guard health (built CLI)', () => {
  it('exit 0: healthy Pi 4, gateway ready; one JSON object, units in names, no token, no config value', async () => {
    const h = home(await gateway(200));
    const r = await health('pi4', h, tempDir(), ['--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({
      status: 'OK',
      problems: [],
      temperature: { cpu_celsius: 52.582 },
      throttle: { source: 'vcgencmd', get_throttled: '0x0' },
      picoclaw: { gateway: { state: 'ready', pid: process.pid } },
    });
    expect(Object.keys(j)).toEqual([
      'status',
      'problems',
      'collected_at',
      'collect_duration_seconds',
      'board',
      'temperature',
      'throttle',
      'cpufreq',
      'resources',
      'filesystem',
      'storage',
      'picoclaw',
      'thresholds',
    ]);
    expect(r.stdout).not.toContain(TOKEN);
    expect(r.stdout).not.toContain(SECRET);
  });

  it('exit 10: gateway starting (/ready 503) is a WARN; the summary starts with the status line', async () => {
    const h = home(await gateway(503));
    const r = await health('pi4', h, tempDir());
    expect(r.code).toBe(10);
    expect(r.stdout.split('\n')[0]).toMatch(/^WARN: gateway starting: \/ready answered 503/);
    expect(r.stdout).not.toContain(TOKEN);
  });

  it('exit 11: under-voltage now; the latch, kept in the state folder, still warns in a new process', async () => {
    const h = home(await gateway(200));
    const state = tempDir();
    const first = await health('pi4-undervoltage', h, state, ['--json']);
    expect(first.code).toBe(11);
    expect(JSON.parse(first.stdout).problems[0].code).toBe('under_voltage_now');
    expect(existsSync(join(state, LATCH_FILE))).toBe(true);
    // Same boot, the firmware and the kernel say all is well again: the latch remembers.
    const second = await health('pi4', h, state, ['--json']);
    expect(second.code).toBe(10);
    expect(JSON.parse(second.stdout).problems.map((p: { code: string }) => p.code)).toEqual([
      'under_voltage_since_boot',
    ]);
  });

  it('thresholds from --config change the status', async () => {
    const h = home(await gateway(200));
    const cfg = join(tempDir(), 'guard.json');
    writeFileSync(cfg, JSON.stringify({ health: { temp_warn_celsius: 50, temp_critical_celsius: 52 } }));
    const r = await health('pi4', h, tempDir(), ['--config', cfg]);
    expect(r.code).toBe(11);
    expect(r.stdout.split('\n')[0]).toBe('CRITICAL: CPU at 52.6 °C (critical from 52 °C)');
  });

  it('exit 2: a bad health key names the file and the key', async () => {
    const cfg = join(tempDir(), 'guard.json');
    writeFileSync(cfg, JSON.stringify({ health: { temp_warn: 70 } }));
    const r = await health('pi4', home(1), tempDir(), ['--config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(cfg);
    expect(r.stderr).toContain('health.temp_warn');
    expect(r.stdout).toBe('');
  });

  it('a missing $PICOCLAW_HOME (or default home) is CRITICAL (PicoClaw is what the board is for)', async () => {
    const r = await health('visionfive2', null, tempDir(), ['--json'], { PICOCLAW_HOME: join(tempDir(), 'nope') });
    expect(r.code).toBe(11);
    expect(JSON.parse(r.stdout).problems.map((p: { code: string }) => p.code)).toEqual(['picoclaw_missing']);
  });

  it('a --home that is missing or empty is a command-line mistake: exit 2 both, one line', async () => {
    const empty = tempDir();
    for (const dir of [join(tempDir(), 'nonexistent'), empty]) {
      const r = await health('pi4', dir, tempDir(), ['--json']);
      expect(r.code, dir).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^picoclaw-guard: .*${dir.replace(/[/.]/g, '\\$&')}.*\\(from --home\\)`));
    }
  });

  it('a config.json PicoClaw cannot parse is a CRITICAL finding, and its text is never echoed', async () => {
    const h = home(1);
    writeFileSync(join(h, 'config.json'), `{"providers": {"openai": {"api_key": "${SECRET}"`);
    const r = await health('pi4', h, tempDir(), ['--json']);
    expect(r.code).toBe(11);
    const j = JSON.parse(r.stdout);
    expect(j.problems[0]).toMatchObject({
      code: 'picoclaw_missing',
      message: expect.stringContaining('not valid JSON'),
    });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });
});
