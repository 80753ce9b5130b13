import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { keptParts } from '../../src/picoclaw/gatewaylog/parts.js';
import { runCli } from '../support/cli.js';
import { skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';
import { sampleHome, startDaemon, writeConfig } from '../daemon/support.js';

/**
 * The cut end to end: `picoclaw-guard logs` (exit codes, --dry-run, --json) and the daemon,
 * which cuts at its refresh and still reports every restart of the cut lines (/startup reads
 * the parts).
 */

/** The non-blank lines of the kept parts followed by the file: what the gateway wrote. */
function linesOf(file: string): string[] {
  const text =
    keptParts(file)
      .map((p) => gunzipSync(readFileSync(p.path)).toString('utf8'))
      .join('') + readFileSync(file, 'utf8');
  return text.split('\n').filter((l) => l.trim() !== '');
}

function filler(from: number, bytes: number): string {
  const out: string[] = [];
  let size = 0;
  for (let n = from; size < bytes; n++) {
    const l = `{"level":"warn","component":"filler","n":${n},"time":"2026-06-20T10:00:00Z","message":"filler ${n}"}\n`;
    out.push(l);
    size += l.length;
  }
  return out.join('');
}

const EXT = new Set([0xef53, 0x58465342]);

describe('picoclaw-guard run cuts the gateway log', () => {
  it('at its refresh, and /startup still finds every restart of the lines it cut', async (ctx) => {
    const h = sampleHome({ sessions: 10 });
    if (!EXT.has(statfsSync(h.root).type)) return skipWithReason(ctx, 'the temporary folder is not ext4/xfs');
    const log = join(h.home, 'logs', 'gateway.log');
    const panic = join(h.home, 'logs', 'gateway_panic.log');
    appendFileSync(log, filler(1, 3 * 1024 * 1024));
    appendFileSync(panic, 'panic: something\n'.repeat(1000) + 'x'.repeat(100) + '\n');
    const before = linesOf(log);
    const config = writeConfig(h.root, { logs: { max_size_mb: 1, keep_parts: 2 }, metrics: { refresh_seconds: 1 } });
    const d = await startDaemon({ home: h.home, stateDir: join(h.root, 'state'), config });
    const cut = await d.waitForLog((l) => l.msg === 'gateway log cut');
    expect(cut.file).toBe(log);
    expect(statSync(log).size).toBeLessThanOrEqual(1024 * 1024);
    expect(linesOf(log)).toEqual(before);
    // The restarts were in the head of the file: all in the part now, and still in the report.
    const startup = await d.json('/startup');
    expect(startup.status).toBe(200);
    expect(startup.body.summary.restarts).toBe(4);
    expect(startup.body.source.parts).toHaveLength(1);
    // The panic log is under the limit: left alone, no part.
    expect(keptParts(panic)).toEqual([]);
    expect((await d.stop()).code).toBe(0);
  });
});

describe('picoclaw-guard logs', () => {
  function home() {
    const root = tempDir('pcg-logs-cli-');
    const h = join(root, 'home');
    mkdirSync(join(h, 'logs'), { recursive: true });
    mkdirSync(join(h, 'workspace', 'sessions'), { recursive: true });
    appendFileSync(join(h, 'config.json'), '{}\n');
    return { root, home: h, log: join(h, 'logs', 'gateway.log'), state: join(root, 'state') };
  }

  it('--dry-run --json says what it would cut and writes nothing; then a run cuts, exit 0', (ctx) => {
    const t = home();
    if (!EXT.has(statfsSync(t.root).type)) return skipWithReason(ctx, 'the temporary folder is not ext4/xfs');
    appendFileSync(t.log, filler(1, 2.5 * 1024 * 1024));
    const before = readFileSync(t.log);
    const args = ['logs', '--home', t.home, '--state-dir', t.state, '--max-size-mb', '1'];
    const dry = runCli([...args, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    const r = JSON.parse(dry.stdout);
    expect(r.dry_run).toBe(true);
    expect(r.files[0].action).toBe('would_cut');
    expect(r.files[0].part).toBe(`${t.log}.1.gz`);
    expect(r.files[1].action).toBe('absent');
    expect(readFileSync(t.log).equals(before)).toBe(true);
    expect(readdirSync(join(t.home, 'logs'))).toEqual(['gateway.log']);
    expect(existsSync(t.state)).toBe(false);

    const run = runCli(args);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/cut .* off the head; its lines are in .*gateway\.log\.1\.gz/);
    expect(linesOf(t.log)).toEqual(before.toString('utf8').split('\n').filter(Boolean));
    const again = runCli([...args, '--json']);
    expect(JSON.parse(again.stdout).files[0].action).toBe('under_limit');
  });

  it('exit 6 with the reason where the file system cannot collapse, and nothing changed', (ctx) => {
    let tmpfs = false;
    try {
      tmpfs = statfsSync('/dev/shm').type === 0x01021994;
    } catch {
      /* none */
    }
    if (!tmpfs) return skipWithReason(ctx, '/dev/shm is not a tmpfs here');
    const root = join('/dev/shm', `pcg-logs-cli-${process.pid}`);
    try {
      mkdirSync(join(root, 'home', 'logs'), { recursive: true });
      mkdirSync(join(root, 'home', 'workspace', 'sessions'), { recursive: true });
      appendFileSync(join(root, 'home', 'config.json'), '{}\n');
      const log = join(root, 'home', 'logs', 'gateway.log');
      appendFileSync(log, filler(1, 1.5 * 1024 * 1024));
      const before = readFileSync(log);
      const r = runCli([
        'logs',
        '--home',
        join(root, 'home'),
        '--state-dir',
        join(root, 'state'),
        '--max-size-mb',
        '1',
      ]);
      expect(r.code).toBe(6);
      expect(r.stdout).toMatch(/NOT cut: tmpfs cannot collapse/);
      expect(readFileSync(log).equals(before)).toBe(true);
      expect(readdirSync(join(root, 'home', 'logs'))).toEqual(['gateway.log']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a bad value is a usage error naming the key (exit 2)', () => {
    const t = home();
    const bad = runCli(['logs', '--home', t.home, '--max-size-mb', 'ten']);
    expect(bad.code).toBe(2);
    const cfg = writeConfig(t.root, { logs: { keep_parts: 0 } });
    const r = runCli(['logs', '--home', t.home, '--config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/"logs\.keep_parts" must be a whole number from 1 to 1000/);
  });
});
