import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiveGateway, stopChildren, type LiveRun } from '../support/gateway-sim.js';
import { tempDir } from '../support/tmp.js';

/**
 * A live gateway: the gateway simulator (test/support/gateway-sim.ts, a
 * process of its own) serves /ready and writes the PID file, and writes turns the way
 * PicoClaw does (JSONL append + fsync, atomic meta rewrite, seahorse rows on its own
 * connection with busy_timeout 5000, now and then into an old session), while online
 * `prune --apply` passes with a falling max_age_days run against the same home.
 * One run (about 25 s) feeds every check below; the long run is bench/live-gateway-soak.ts.
 */
describe('a live gateway', () => {
  let run: LiveRun;
  beforeAll(async () => {
    // The whole run and its analysis happen here; tempDir's afterEach removes the folder after the first test.
    run = await runLiveGateway({
      dir: tempDir('pcg-live-'),
      seed: 5,
      sessions: 600,
      agents: 3,
      durationMs: 18_000,
      minPasses: 5,
      idleMs: 2_000,
      maxAgeDays: [110, 3],
      passGapMs: [100, 400],
      // About 8 turns a second (a busy board), a third of them into sessions the running
      // pass is deleting, so that the re-check before each deletion is exercised.
      turnGapMs: 120,
      oldShare: 0.3,
      // seahorse.db as the pre-start pass's VACUUM leaves it with shrink_online (the default): every online
      // pass gives its free pages back in short steps under the same write lock (src/prune/apply/shrink.ts).
      shrink: true,
    });
    // The figures the issue asks for (longest guard write lock, slowest gateway write with and without a pass).
    console.info(`live-gateway figures: ${JSON.stringify(run.figures)}`);
  }, 180_000);

  afterAll(() => stopChildren());

  const failuresMatching = (re: RegExp) => run.failures.filter((f) => re.test(f));

  it('sees the simulated gateway as ready and runs online passes (no VACUUM) that delete old sessions', () => {
    expect(run.figures.passes).toBeGreaterThanOrEqual(5);
    expect(failuresMatching(/^pass \d+ /)).toEqual([]);
    expect(run.passes.every((p) => p.report?.gateway?.state === 'ready')).toBe(true);
    expect(run.figures.deletedSessions).toBeGreaterThan(50);
    expect(run.figures.turnsDuringPasses).toBeGreaterThan(40);
    expect(run.figures.oldTurnsDuringPasses).toBeGreaterThan(10);
    expect(failuresMatching(/simulator exited/)).toEqual([]);
  });

  it('gives the free pages back online (shrink on), each step well under the gateway busy_timeout', () => {
    expect(run.figures.shrink.passes).toBeGreaterThan(0);
    expect(run.figures.shrink.returnedBytes).toBeGreaterThan(0);
    expect(run.figures.shrink.longestStepMs).toBeLessThan(2500);
    expect(failuresMatching(/online shrink|gave space back/)).toEqual([]);
  });

  it('holds no write lock anywhere near the gateway busy_timeout', () => {
    // Bounds against the gateway's busy_timeout (5000 ms), generous for a loaded machine; the
    // measured figures are printed above and by bench/live-gateway-soak.ts.
    expect(run.figures.longestGuardWriteMs).toBeGreaterThan(0);
    expect(run.figures.longestGuardWriteMs).toBeLessThan(2500);
    expect(run.figures.seahorseWrite.duringPasses.maxMs).toBeLessThan(4000);
  });

  it('makes no write of the gateway that waits on busy_timeout fail (append, meta, conversation, message)', () => {
    expect(failuresMatching(/^writer failure x\d+: (jsonl|meta|conv|msg):/)).toEqual([]);
  });

  it(
    'makes no read-then-write transaction of the gateway fail (seahorse appendContextItems: ' +
      'BEGIN; SELECT MAX(ordinal); INSERT)',
    () => {
      // SQLite does not apply busy_timeout when a transaction that has read upgrades to a write:
      // it answers SQLITE_BUSY at once if another connection holds the write lock. The guard holds it
      // only after 100 ms without a commit, so only a turn whose simulator paused that long between its
      // message and its context item can meet it: those are counted apart (run.figures), every other
      // refusal is a failure here. test/safety/write-lock-steps.test.ts puts the gateway at every step.
      expect(failuresMatching(/^writer failure x\d+: ctx:/)).toEqual([]);
      expect(run.figures.ctxRefusedAfterPauseMs.every((ms) => ms >= 100)).toBe(true);
    },
  );

  it('loses no append and deletes no session that received a message after its pass planned', () => {
    expect(failuresMatching(/^lost append|before the pass started/)).toEqual([]);
    expect(failuresMatching(/^lost seahorse message/)).toEqual([]);
    // A turn into a session its pass is deleting is caught by the re-check (kept as
    // changed_since_plan) unless it lands between the last lstat and the unlink, a
    // window of microseconds (docs/picoclaw.md#rules-for-a-separate-pruner: no cross-process lock exists).
    // Without the re-check every such turn would be lost.
    expect(run.figures.raceLostLines).toBeLessThanOrEqual(1);
  });

  it('leaves seahorse.db consistent: integrity_check ok, FTS tables in step', () => {
    expect(failuresMatching(/integrity_check|FTS tables/)).toEqual([]);
  });

  it('reports nothing else', () => {
    const known =
      /^(pass \d+ |writer failure|lost append|lost seahorse message|the guard held|integrity_check|FTS tables|the gateway simulator exited|no pass gave space back|an online shrink step)|before the pass started/;
    expect(run.failures.filter((f) => !known.test(f))).toEqual([]);
  });
});
