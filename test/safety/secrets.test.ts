import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { CLI, runCli } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

/**
 * Canary values in every secret-looking place of config.json and in the PID file's
 * token: no command, in any mode, may print or log one (stdout, stderr, reports,
 * archives' names, the state folder).
 */
const CANARIES_GUARD = 'sk-CANARY-guard-config-5150';
const CANARIES = {
  providerKey: 'sk-CANARY-provider-7f3a9e',
  modelKey: 'CANARY-model-list-key-44aa',
  telegramToken: '123456:CANARY-telegram-bot-token',
  discordToken: 'CANARY.discord.token.zz',
  password: 'CANARY-hunter2-password',
  webhookSecret: 'CANARY-webhook-secret-9911',
  bearer: 'CANARY-gateway-bearer',
  pidToken: 'ca7a11e5ca7a11e5ca7a11e5ca7a11e5',
  guardToken: CANARIES_GUARD,
};

/** A guard config with a syntax error right at its token (unquoted), as a hand edit leaves it. */
const BROKEN_GUARD_CONFIG = `{\n  // the daemon's token\n  "server": { "token": ${CANARIES_GUARD} }\n}\n`;

function plant(home: string): void {
  const cfgPath = join(home, 'config.json');
  const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
  cfg.providers = { openai: { api_key: CANARIES.providerKey, api_base: 'https://example.invalid' } };
  cfg.model_list = [{ model_name: 'llama3', model: 'ollama/llama3', api_key: CANARIES.modelKey }];
  cfg.channels = {
    telegram: { enabled: true, token: CANARIES.telegramToken, allow_from: ['1'] },
    discord: { enabled: false, token: CANARIES.discordToken },
    line: { channel_secret: CANARIES.webhookSecret },
  };
  cfg.tools = { web: { search: { api_key: CANARIES.providerKey } } };
  cfg.gateway.token = CANARIES.bearer;
  cfg.auth = { password: CANARIES.password };
  writeFileSync(cfgPath, JSON.stringify(cfg, null, 2));
  const pid = JSON.parse(readFileSync(join(home, '.picoclaw.pid'), 'utf8'));
  pid.token = CANARIES.pidToken;
  writeFileSync(join(home, '.picoclaw.pid'), JSON.stringify(pid, null, 2));
}

function allText(dir: string): string {
  let out = '';
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out += p + '\n';
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out += readFileSync(p).toString('latin1');
    }
  };
  walk(dir);
  return out;
}

function expectClean(text: string, what: string): void {
  for (const [name, value] of Object.entries(CANARIES)) {
    expect(text.includes(value), `${name} leaked in ${what}`).toBe(false);
  }
}

describe('secrets never reach output, logs, reports or metrics', () => {
  it('every command and mode, and a broken config.json', () => {
    const root = tempDir();
    const home = join(root, '.picoclaw');
    buildSampleHome({ dir: home, seed: 9, sessions: 40, now: Date.now() });
    plant(home);
    const state = join(root, 'state');
    const archive = join(root, 'archive');
    const runs: string[][] = [
      ['sessions'],
      ['sessions', '--json'],
      ['prune'],
      ['prune', '--json'],
      ['prune', '--apply', '--state-dir', state, '--archive', archive, '--max-age-days', '20'],
      ['prune', '--apply', '--json', '--state-dir', state, '--max-age-days', '10'],
      ['health', '--state-dir', state],
      ['health', '--json', '--state-dir', state],
      ['startup'],
      ['startup', '--json'],
      ['restore', archive, '--list'],
      ['restore', archive, '--list', '--json'],
      ['install-units', '--dry-run'],
    ];
    for (const args of runs) {
      const r = runCli([...args, '--home', home], { PICOGUARD_NO_SYSTEM_STATE: '1' });
      expectClean(r.stdout + r.stderr, args.join(' '));
    }
    expectClean(allText(state), 'the state folder');
    expectClean(allText(archive).replace(/[A-Za-z0-9+/=]{200,}/g, ''), 'archive names');

    // A config.json PicoClaw cannot parse: the error names the file but quotes none of it.
    const cfgPath = join(home, 'config.json');
    const goodConfig = readFileSync(cfgPath, 'utf8');
    writeFileSync(cfgPath, goodConfig.replace('"providers"', '"providers" oops'));
    for (const args of [
      ['sessions'],
      ['prune'],
      ['prune', '--apply', '--state-dir', state],
      ['health', '--json', '--state-dir', state],
      ['startup'],
    ]) {
      const r = runCli([...args, '--home', home], { PICOGUARD_NO_SYSTEM_STATE: '1' });
      expectClean(r.stdout + r.stderr, `${args.join(' ')} (broken config)`);
    }

    // A guard config with a syntax error at its token: the error gives line and column, no text.
    writeFileSync(cfgPath, goodConfig);
    const guardCfg = join(root, 'guard.jsonc');
    writeFileSync(guardCfg, BROKEN_GUARD_CONFIG);
    for (const args of [
      ['prune', '--config', guardCfg],
      ['health', '--json', '--config', guardCfg, '--state-dir', state],
    ]) {
      const r = runCli([...args, '--home', home], { PICOGUARD_NO_SYSTEM_STATE: '1' });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`the guard config ${guardCfg} is not valid JSON at line 3, column 24`);
      expectClean(r.stdout + r.stderr, `${args.join(' ')} (broken guard config)`);
    }
    const viaEnv = runCli(['prune', '--home', home], {
      PICOGUARD_NO_SYSTEM_STATE: '1',
      PICOCLAW_GUARD_CONFIG: guardCfg,
    });
    expect(viaEnv.code).toBe(2);
    expectClean(viaEnv.stdout + viaEnv.stderr, 'PICOCLAW_GUARD_CONFIG (broken guard config)');
  });

  it('the daemon: its log and /health, /metrics, /startup, /prune', async () => {
    const root = tempDir();
    const home = join(root, '.picoclaw');
    buildSampleHome({ dir: home, seed: 10, sessions: 30, now: Date.now() });
    plant(home);
    const cfg = join(root, 'guard.json');
    writeFileSync(cfg, JSON.stringify({ prune: { enabled: true } }));
    const child = spawn(
      process.execPath,
      [CLI, 'run', '--home', home, '--config', cfg, '--state-dir', join(root, 'state'), '--port', '0'],
      {
        env: { PATH: process.env.PATH, HOME: root, PICOGUARD_NO_SYSTEM_STATE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no listening line: ${out} ${err}`)), 20_000);
        const look = () => {
          for (const line of out.split('\n')) {
            try {
              const l = JSON.parse(line);
              if (l.msg === 'listening') {
                clearTimeout(t);
                return resolve(l.port);
              }
            } catch {
              // not yet a whole line
            }
          }
          setTimeout(look, 50);
        };
        look();
      });
      // Wait for the first pass so /prune has a report.
      for (let i = 0; i < 200 && !out.includes('"prune pass"'); i++) await new Promise((r) => setTimeout(r, 50));
      const get = (path: string) =>
        new Promise<string>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve(`${res.statusCode} ${body}`));
          });
          req.on('error', reject);
          req.end();
        });
      for (const path of ['/health', '/metrics', '/startup', '/prune', '/']) {
        const body = await get(path);
        expect(body.length).toBeGreaterThan(10);
        expectClean(body, `GET ${path}`);
      }
      // SIGHUP with a guard config broken at its token: the reload error is logged without it.
      writeFileSync(cfg, BROKEN_GUARD_CONFIG);
      child.kill('SIGHUP');
      for (let i = 0; i < 400 && !out.includes('reload failed'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(out).toContain('is not valid JSON at line 3, column 24');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    expectClean(out + err, 'the daemon log');
    expectClean(allText(join(root, 'state')), 'the daemon state folder');
  });
});
