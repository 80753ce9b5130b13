import { spawn } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  statfsSync,
  watch,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NO_GUARD_CONFIG, runCli } from '../support/cli.js';
import { skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';
import { childWriter, logLine, numbersOf } from '../logs/support.js';

/**
 * `picoclaw-guard logs` killed with SIGKILL at any moment while another process appends to
 * the log (O_APPEND, as PicoClaw does): after the next run, the kept parts followed by the
 * file hold every line written, exactly once, in order, and no journal is left. Kills are
 * placed at seeded moments over the whole run (calibrated on an uninterrupted one) and at file
 * events: the part's temporary file appearing, and the part appearing under its name.
 */

const LINES = 50_000; // about 8 MB of numbered lines: a cut takes a noticeable time
const EXT = new Set([0xef53, 0x58465342]);

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

describe('a cut killed at any moment', () => {
  it('finishes or is undone by the next run, with every line kept once, in order', async (ctx) => {
    const base = tempDir('pcg-cut-kill-');
    if (!EXT.has(statfsSync(base).type)) return skipWithReason(ctx, 'the temporary folder is not ext4/xfs');
    const template = join(base, 'template.log');
    const fd = openSync(template, 'w');
    for (let n = 1; n <= LINES; n++) writeSync(fd, logLine(n, 60 + (n % 200)));
    closeSync(fd);

    const env = { PATH: process.env.PATH, HOME: process.env.HOME, PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
    const setup = (name: string) => {
      const home = join(base, name, 'home');
      mkdirSync(join(home, 'logs'), { recursive: true });
      mkdirSync(join(home, 'workspace', 'sessions'), { recursive: true });
      copyFileSync(template, join(home, 'logs', 'gateway.log'));
      writeFileSync(join(home, 'config.json'), '{}\n');
      const args = [CLI, 'logs', '--home', home, '--state-dir', join(base, name, 'state'), '--max-size-mb', '2'];
      return { home, log: join(home, 'logs', 'gateway.log'), state: join(base, name, 'state'), args };
    };

    // Calibration: one run, not killed.
    const cal = setup('calibrate');
    const t0 = performance.now();
    const first = runCli(cal.args.slice(1), env);
    const runMs = performance.now() - t0;
    expect(first.code, first.stderr).toBe(0);
    expect(numbersOf(cal.log)).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));

    const rnd = seeded(30);
    const kills: ({ afterMs: number } | { on: 'tmp' | 'part' })[] = [
      ...Array.from({ length: 6 }, () => ({ afterMs: Math.floor(rnd() * runMs) })),
      { on: 'tmp' },
      { on: 'part' },
    ];
    let killedMidway = 0;
    for (const [i, k] of kills.entries()) {
      const t = setup(`kill-${i}`);
      const writer = childWriter(t.log, { after: LINES, first: LINES + 50, paced: true });
      await writer.ready;
      const child = spawn(process.execPath, t.args, { env, stdio: 'ignore' });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        child.once('exit', (code, signal) => r({ code, signal })),
      );
      let watcher: ReturnType<typeof watch> | null = null;
      if ('afterMs' in k) setTimeout(() => child.kill('SIGKILL'), k.afterMs);
      else {
        const want = k.on === 'tmp' ? '.gateway.log.1.gz.tmp' : 'gateway.log.1.gz';
        watcher = watch(join(t.home, 'logs'), (_e, name) => {
          if (name === want) child.kill('SIGKILL');
        });
      }
      const end = await exited;
      watcher?.close();
      if (end.signal === 'SIGKILL') killedMidway++;
      // The next run, while the writer still writes.
      const again = runCli(t.args.slice(1), env);
      expect(again.code, again.stderr).toBe(0);
      const n = await writer.stop();
      expect(existsSync(join(t.state, 'log-cut.json'))).toBe(false);
      expect(numbersOf(t.log)).toEqual(Array.from({ length: n }, (_, j) => j + 1));
    }
    // Most kills land inside the run (the event ones always do).
    expect(killedMidway).toBeGreaterThanOrEqual(3);
  });
});
