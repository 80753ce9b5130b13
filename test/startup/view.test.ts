import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { analyzeStartupLog, settleAndMarkPrunes, type StartupReport } from '../../src/startup/index.js';
import { tempDir } from '../support/tmp.js';
import { ANCHOR } from './scenario.js';

/**
 * The view the `startup` command and the daemon share: the latest restart settled against the
 * home's PID file, and the guard's prune passes of this home placed between the restarts.
 * sample-info.log: seven restarts, the last one still running when the log ends.
 */
const LOG = fileURLToPath(new URL('../fixtures/logs/sample-info.log', import.meta.url));

function setup(passes: { at: string; home?: string; deleted_sessions: number }[]) {
  const home = discoverHome({ home: tempDir('pcg-view-'), env: {} });
  const stateDir = tempDir('pcg-view-state-');
  const lines = passes.map((p) =>
    JSON.stringify({
      at: p.at,
      home: p.home ?? home.home,
      mode: 'apply',
      outcome: 'ok',
      deleted_sessions: p.deleted_sessions,
      deleted_orphans: 0,
      freed_bytes: 1000 * p.deleted_sessions,
      sessions_before: 600,
      sessions_after: 90,
      duration_ms: 40,
      reason: null,
    }),
  );
  writeFileSync(join(stateDir, 'prune-history.jsonl'), lines.map((l) => l + '\n').join(''));
  return { home, stateDir };
}

const report = (): Promise<StartupReport> => analyzeStartupLog({ path: LOG }, { dateAnchor: ANCHOR });

describe('settleAndMarkPrunes', () => {
  const passes = [
    { at: '2026-06-06T12:00:00.000Z', deleted_sessions: 510 },
    { at: '2026-06-06T13:00:00.000Z', deleted_sessions: 0 }, // deleted nothing: not a prune that matters
    { at: '2026-06-06T14:00:00.000Z', deleted_sessions: 7, home: '/another/home' },
  ];

  it("the home's own log with no gateway running: the latest restart crashed; the prune is placed", async () => {
    const { home, stateDir } = setup(passes);
    const rep = await report();
    expect(rep.restarts[6]!.end).toBe('running');
    const prunes = await settleAndMarkPrunes(rep, home, { stateDir, ownLog: true });
    expect(rep.restarts[6]!.end).toBe('crashed');
    expect(rep.restarts[6]!.end_detail).toMatch(/and no gateway runs now \(PID file absent or stale\)$/);
    expect(rep.summary).toMatchObject({ running: 0, crashed: 3 });
    expect(rep.restarts.filter((r) => r.after_prune).map((r) => r.n)).toEqual([7]);
    const pass = { at: '2026-06-06T12:00:00.000Z', deleted_sessions: 510, freed_bytes: 510_000 };
    expect(rep.restarts[6]!.after_prune).toEqual(pass);
    const gaps = { gap_before: { restart: 5, seconds: 95 }, gap_after: { restart: 7, seconds: 45 } };
    expect(prunes).toEqual([{ ...pass, ...gaps }]);
  });

  it("the gateway's PID file names a live process: the latest restart is still running", async () => {
    const { home, stateDir } = setup(passes);
    writeFileSync(home.pidPath, JSON.stringify({ pid: process.pid, token: 'not-read', version: '0.2.7' }));
    const rep = await report();
    await settleAndMarkPrunes(rep, home, { stateDir, ownLog: true });
    expect(rep.restarts[6]!.end).toBe('running');
    expect(rep.summary.running).toBe(1);
  });

  it("another log (not the home's own): not settled by this home's PID file, prunes still placed", async () => {
    const { home, stateDir } = setup(passes);
    const rep = await report();
    const prunes = await settleAndMarkPrunes(rep, home, { stateDir, ownLog: false });
    expect(rep.restarts[6]!.end).toBe('running');
    expect(prunes.map((p) => p.deleted_sessions)).toEqual([510]);
  });
});
