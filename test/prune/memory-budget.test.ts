import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { DEFAULT_PASS_MEMORY_MB, memoryBudget, residentBytes } from '../../src/prune/memory-budget.js';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { dumpSeahorse, handHome, integrity } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { downGateway } from '../support/gateway-state.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const MiB = 1024 * 1024;
const down = downGateway;

/** Four old sessions (each deleted alone) and a recent one. */
function home(): { dir: string; sessionsDir: string; dbPath: string } {
  const dir = tempDir();
  const old = ['a', 'b', 'c', 'd'].map((k, i) => ({
    key: `sk_v1_old_${k}`,
    updated: `2026-0${5 + i}-01T10:00:00Z`,
    seahorse: [`2026-0${5 + i}-01 10:00:00`, `2026-0${5 + i}-01 10:00:01`],
  }));
  const { sessionsDir, dbPath } = handHome(dir, [
    ...old,
    { key: 'sk_v1_recent', updated: '2026-11-30T11:00:00Z', seahorse: ['2026-11-30 11:00:00'] },
  ]);
  return { dir, sessionsDir, dbPath };
}

function pass(dir: string, env: NodeJS.ProcessEnv, rss: () => number) {
  return runPrunePass({
    home: dir,
    env: { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG, ...env },
    apply: true,
    clock: fixedClock(NOW),
    // Deletion mechanics, not the clock: the sessions here are old and silent, a shape the age check doubts.
    trustClock: true,
    stateDir: null,
    probe: down,
    rss,
    flags: { vacuum: false },
  });
}

describe('memory budget of a pass', () => {
  it('reads PICOGUARD_PASS_MEMORY_MB (unset or 0: none; a number of MiB; nonsense is the default)', () => {
    expect(memoryBudget({}).limitBytes).toBeNull();
    expect(memoryBudget({ PICOGUARD_PASS_MEMORY_MB: '96' }).limitBytes).toBe(96 * MiB);
    expect(memoryBudget({ PICOGUARD_PASS_MEMORY_MB: '0' }).limitBytes).toBeNull();
    expect(memoryBudget({ PICOGUARD_PASS_MEMORY_MB: 'lots' }).limitBytes).toBe(DEFAULT_PASS_MEMORY_MB * MiB);
    const b = memoryBudget({ PICOGUARD_PASS_MEMORY_MB: '0' }, () => 10_000 * MiB);
    expect(b.over()).toBe(false);
  });

  it(
    'over the budget, the pass stops between two sessions: the first is deleted ' +
      'whole, the rest kept whole, and the report says why',
    async () => {
      const { dir, sessionsDir, dbPath } = home();
      // Within the budget for the first session, over it from the second on.
      let calls = 0;
      const rss = () => (++calls <= 1 ? 50 * MiB : 200 * MiB);
      const r = await pass(dir, { PICOGUARD_PASS_MEMORY_MB: '100' }, rss);
      const deleted = r.sessions.filter((s) => s.action === 'delete').map((s) => s.key);
      const stopped = r.sessions.filter((s) => s.reason === 'interrupted').map((s) => s.key);
      expect(deleted).toHaveLength(1);
      expect(stopped).toHaveLength(3);
      expect(r.exit_code).toBe(ExitCode.PARTIAL);
      expect(r.warnings.join('\n')).toMatch(
        /memory \(200 MiB resident\) passed its budget of 100 MiB \(PICOGUARD_PASS_MEMORY_MB\)/,
      );
      // The deleted one is gone from both stores, the stopped ones are untouched in both.
      const files = readdirSync(sessionsDir);
      expect(files.filter((f) => f.startsWith(deleted[0]!))).toEqual([]);
      for (const k of stopped)
        expect(files.filter((f) => f.startsWith(k!)).sort()).toEqual([`${k}.jsonl`, `${k}.meta.json`]);
      const keys = (dumpSeahorse(dbPath).conversations as { session_key: string }[]).map((c) => c.session_key).sort();
      expect(keys).toEqual([...stopped, 'sk_v1_recent'].sort());
      expect(integrity(dbPath).ok).toBe('ok');
    },
  );

  it('within the budget the same pass deletes all four', async () => {
    const { dir } = home();
    const r = await pass(dir, { PICOGUARD_PASS_MEMORY_MB: '100' }, () => 50 * MiB);
    expect(r.sessions.filter((s) => s.action === 'delete')).toHaveLength(4);
    expect(r.exit_code).toBe(0);
    expect(r.warnings.join('\n')).not.toMatch(/budget/);
  });
});

describe('the resident size a budget reads', () => {
  it('falls back to VmRSS when /proc/self/stat reads 0 (qemu-user emulates that file with its RSS field at 0)', () => {
    const status = 'Name:\tnode\nVmHWM:\t  200000 kB\nVmRSS:\t  196140 kB\nThreads:\t7\n';
    expect(
      residentBytes(
        () => 0,
        () => status,
      ),
    ).toBe(196140 * 1024);
    expect(
      residentBytes(
        () => 5 * 1024 * 1024,
        () => status,
      ),
    ).toBe(5 * 1024 * 1024);
    expect(
      residentBytes(
        () => 0,
        () => {
          throw new Error('ENOENT');
        },
      ),
    ).toBe(0);
    // So a budget trips on the fallback figure too.
    const b = memoryBudget({ PICOGUARD_PASS_MEMORY_MB: '100' }, () =>
      residentBytes(
        () => 0,
        () => status,
      ),
    );
    expect(b.over()).toBe(true);
    expect(b.why()).toMatch(/192 MiB resident\) passed its budget of 100 MiB/);
  });
  it('reads this process: a positive size', () => {
    expect(residentBytes()).toBeGreaterThan(0);
  });
});
