import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverHome, normalizeAgentId } from '../../src/picoclaw/home.js';
import { GuardError } from '../../src/errors.js';
import { tempDir } from '../support/tmp.js';

describe('finding PicoClaw', () => {
  it('uses --home, then $PICOCLAW_HOME, then ~/.picoclaw', () => {
    const env = { HOME: '/home/pi', PICOCLAW_HOME: '/srv/pc' };
    expect(discoverHome({ home: '/x/y', env }).home).toBe('/x/y');
    expect(discoverHome({ env }).home).toBe('/srv/pc');
    expect(discoverHome({ env: { HOME: '/home/pi' } }).home).toBe('/home/pi/.picoclaw');
    expect(discoverHome({ env: { HOME: '/home/pi' } }).homeSource).toBe('default');
  });

  it('with no config.json uses PicoClaw defaults: one implicit main agent in <home>/workspace', () => {
    const home = tempDir();
    const h = discoverHome({ home, env: { HOME: '/nowhere' } });
    expect(h.configFound).toBe(false);
    expect(h.agents).toEqual([
      {
        id: 'main',
        workspace: join(home, 'workspace'),
        sessionsDir: join(home, 'workspace', 'sessions'),
        isDefault: true,
      },
    ]);
    expect(h.seahorsePath).toBe(join(home, 'workspace', 'sessions', 'seahorse.db'));
    expect(h.pidPath).toBe(join(home, '.picoclaw.pid'));
    expect(h.logPath).toBe(join(home, 'logs', 'gateway.log'));
    expect(h.gateway).toEqual({ host: 'localhost', port: 18790, logLevel: 'warn' });
    expect(h.contextManager).toBe('legacy');
  });

  it('resolves agent workspaces by PicoClaw rules and honours env overrides', () => {
    const home = tempDir();
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({
        agents: {
          defaults: { workspace: '~/ws', context_manager: 'seahorse' },
          list: [{ id: 'Research' }, { id: 'boss', default: true }, { id: 'x', workspace: '~/elsewhere' }, { id: '' }],
        },
        gateway: { host: '127.0.0.1', port: 18888, log_level: 'INFO' },
        providers: { openai: { api_key: 'sk-should-never-be-read' } },
      }),
    );
    const h = discoverHome({ home, env: { HOME: '/home/pi' } });
    expect(h.defaultWorkspace).toBe('/home/pi/ws');
    expect(h.agents.map((a) => [a.id, a.workspace])).toEqual([
      ['research', '/home/pi/workspace-research'],
      ['boss', '/home/pi/ws'],
      ['x', '/home/pi/elsewhere'],
      ['main', '/home/pi/ws'],
    ]);
    expect(h.defaultAgent).toBe('main');
    // main and the default:true agent share one sessions folder.
    expect(h.sessionsDirs).toEqual([
      { dir: '/home/pi/workspace-research/sessions', agents: ['research'] },
      { dir: '/home/pi/ws/sessions', agents: ['boss', 'main'] },
      { dir: '/home/pi/elsewhere/sessions', agents: ['x'] },
    ]);
    expect(h.gateway).toEqual({ host: '127.0.0.1', port: 18888, logLevel: 'info' });
    expect(JSON.stringify(h)).not.toContain('sk-should-never-be-read');

    const e = discoverHome({
      home,
      env: {
        HOME: '/home/pi',
        PICOCLAW_AGENTS_DEFAULTS_WORKSPACE: '/data/ws',
        PICOCLAW_GATEWAY_PORT: '19000',
        PICOCLAW_LOG_LEVEL: 'debug',
        PICOCLAW_AGENTS_DEFAULTS_CONTEXT_MANAGER: 'legacy',
      },
    });
    expect(e.defaultWorkspace).toBe('/data/ws');
    expect(e.agents.find((a) => a.id === 'research')!.workspace).toBe('/data/workspace-research');
    expect(e.gateway.port).toBe(19000);
    expect(e.gateway.logLevel).toBe('debug');
    expect(e.contextManager).toBe('legacy');
  });

  it('picks the default agent as PicoClaw does: main, else the first default:true, else the first', () => {
    const home = tempDir();
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ agents: { list: [{ id: 'a' }, { id: 'b', default: true }] } }),
    );
    const h = discoverHome({ home, env: { HOME: '/h' } });
    expect(h.defaultAgent).toBe('b');
    expect(h.seahorsePath).toBe(join(home, 'workspace', 'sessions', 'seahorse.db'));
    writeFileSync(join(home, 'config.json'), JSON.stringify({ agents: { list: [{ id: 'a' }, { id: 'c' }] } }));
    expect(discoverHome({ home, env: { HOME: '/h' } }).defaultAgent).toBe('a');
  });

  it('reads $PICOCLAW_CONFIG instead of <home>/config.json', () => {
    const home = tempDir();
    const cfgDir = tempDir();
    mkdirSync(join(cfgDir, 'etc'));
    writeFileSync(join(cfgDir, 'etc', 'pc.json'), JSON.stringify({ gateway: { port: 1234 } }));
    expect(
      discoverHome({ home, env: { HOME: '/h', PICOCLAW_CONFIG: join(cfgDir, 'etc', 'pc.json') } }).gateway.port,
    ).toBe(1234);
  });

  it('a broken config.json is a clear error that never quotes the file', () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.json'), '{"providers":{"openai":{"api_key":"sk-canary-123"}}, oops}');
    let err: unknown;
    try {
      discoverHome({ home, env: { HOME: '/h' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GuardError);
    expect((err as GuardError).message).toContain(join(home, 'config.json'));
    expect((err as GuardError).message + (err as GuardError).hint).not.toContain('sk-canary-123');
  });

  it('normalizes agent ids', () => {
    expect(normalizeAgentId('  Main ')).toBe('main');
    expect(normalizeAgentId('My Agent!')).toBe('my-agent');
    expect(normalizeAgentId('')).toBe('main');
    expect(normalizeAgentId(undefined)).toBe('main');
    expect(normalizeAgentId('x'.repeat(80))).toHaveLength(64);
  });
});
