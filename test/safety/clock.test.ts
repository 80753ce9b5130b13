import { join } from 'node:path';
import { NO_GUARD_CONFIG } from '../support/cli.js';
import { describe, expect, it } from 'vitest';
import { renderPruneText } from '../../src/commands/prune-text.js';
import { ClockWatch } from '../../src/daemon/clock-watch.js';
import { fixedClock } from '../../src/io/clock.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { handHome, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';
import { startDaemon, writeConfig } from '../daemon/support.js';
import { downGateway } from '../support/gateway-state.js';

/** A wall clock far ahead, or one that jumps between two passes. */
const NOW = new Date('2026-11-30T12:00:00Z');
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };
const down = downGateway;
const DAY = 86_400_000;

/** Sessions from `base` back, one every `gapDays` days. */
function sessions(base: number, n: number, gapDays: number): HandSession[] {
  return Array.from({ length: n }, (_, i) => ({
    key: `sk_v1_s${i}`,
    updated: new Date(base - i * gapDays * DAY).toISOString(),
  }));
}

describe('a clock far ahead deletes nothing by age until it is confirmed', () => {
  it('five years ahead: dry-run and apply refuse the age check and say why; --trust-clock acts', async () => {
    const home = tempDir();
    handHome(home, sessions(NOW.getTime() - 3_600_000, 8, 2), { seahorse: false });
    const ahead = new Date(NOW.getTime() + 5 * 365 * DAY);
    const dry = await runPrunePass({ home, env, apply: false, clock: fixedClock(ahead), stateDir: null, probe: down });
    expect(dry.age_check).toBe('refused_clock');
    expect(dry.clock_doubts[0]).toBe(
      'the age check would delete 7 of the 7 dated sessions it may delete, all silent for 1797 days before the ' +
        'cutoff: a clock far ahead looks so',
    );
    expect(dry.totals.delete).toBe(0);
    const w = dry.warnings.find((x) => x.startsWith('the clock cannot be trusted'));
    expect(w).toContain('run `picoclaw-guard prune --apply --trust-clock` once');
    expect(renderPruneText(dry, Infinity)).toContain('age check: REFUSED (the clock cannot be trusted');
    const applied = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(ahead),
      stateDir: null,
      probe: down,
    });
    expect(applied.totals.deleted_sessions).toBe(0);
    expect(applied.age_check).toBe('refused_clock');
    const trusted = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(ahead),
      stateDir: null,
      probe: down,
      trustClock: true,
    });
    expect(trusted.age_check).toBe('applied');
    expect(
      trusted.warnings.some((x) => x.includes('is the clock right?') && x.includes('7 session(s) deleted by age')),
    ).toBe(true);
    expect(trusted.totals.deleted_sessions).toBe(7);
  });

  it('says nothing when most dated sessions are recent enough to stay', async () => {
    const home = tempDir();
    handHome(home, sessions(NOW.getTime() - 3_600_000, 8, 5), { seahorse: false });
    const r = await runPrunePass({ home, env, apply: false, clock: fixedClock(NOW), stateDir: null, probe: down });
    expect(r.totals.delete).toBe(2);
    expect(r.age_check).toBe('applied');
    expect(r.warnings.filter((x) => x.includes('clock'))).toEqual([]);
  });

  it('a first pass on a board used daily for months deletes most sessions, up to the cutoff: no doubt', async () => {
    const home = tempDir();
    // One session a day for 120 days, max_age_days 30: 90 of 120 go, the newest of them just past the cutoff.
    handHome(home, sessions(NOW.getTime() - 3_600_000, 120, 1), { seahorse: false });
    const r = await runPrunePass({ home, env, apply: false, clock: fixedClock(NOW), stateDir: null, probe: down });
    expect(r.age_check).toBe('applied');
    expect(r.clock_doubts).toEqual([]);
    expect(r.totals.delete).toBeGreaterThan(80);
  });

  it('years ahead, more sessions written under the wrong clock than before it: still refused', async () => {
    const home = tempDir();
    // 10 sessions written 2 years before "now" (the true time: timestamps before 2024 would be unusable), then 30
    // written under the clock 2 years ahead.
    const before = sessions(NOW.getTime() - 730 * DAY, 10, 1).map((x, i) => ({ ...x, key: `sk_v1_old${i}` }));
    handHome(home, [...sessions(NOW.getTime() - 3_600_000, 30, 0.5), ...before], { seahorse: false });
    const r = await runPrunePass({ home, env, apply: false, clock: fixedClock(NOW), stateDir: null, probe: down });
    expect(r.age_check).toBe('refused_clock');
    expect(r.clock_doubts.join(' ')).toMatch(/fell silent \d+ days before the cutoff/);
    expect(r.totals.delete).toBe(0);
  });

  it('the daemon logs the refusal in full', async () => {
    const root = tempDir();
    const home = join(root, 'home');
    // The three older sessions fell silent 130, 260 and 390 days ago: 100 days before the 30-day cutoff.
    handHome(home, sessions(Date.now() - 3_600_000, 4, 130), { seahorse: false });
    const config = writeConfig(root, { prune: { enabled: true, max_age_days: 30 } });
    const d = await startDaemon({ home, stateDir: join(root, 'state'), config });
    const line = await d.waitForLog((l) => l.msg === 'prune pass warnings');
    expect(JSON.stringify(line.warnings)).toMatch(
      /the clock cannot be trusted \(the age check would delete 3 of the 3 dated sessions/,
    );
    expect((await d.stop()).code).toBe(0);
  });
});

describe("a wall-clock jump between two daemon passes skips that pass's age deletions", () => {
  it('ClockWatch: steady clocks say nothing; a step either way is named, and stays a doubt until confirmed', () => {
    let wall = NOW.getTime();
    let mono = 1000;
    const w = new ClockWatch(
      () => wall,
      () => mono,
    );
    expect(w.check()).toBeNull(); // the first pass has nothing to compare with
    wall += 3_600_000;
    mono += 3_600_000 + 2_000; // ordinary drift
    expect(w.check()).toBeNull();
    wall += 5 * 365 * DAY + 3_600_000;
    mono += 3_600_000;
    expect(w.check()).toMatch(/^the wall clock jumped ahead by about 1825 days since the last pass/);
    wall -= 2 * DAY - 3_600_000;
    mono += 3_600_000;
    expect(w.check()).toMatch(/jumped back by about 2 days/);
    // The next passes agree with it, but the jump is not confirmed: each is told, not only the first.
    wall += 3_600_000;
    mono += 3_600_000;
    expect(w.check()).toMatch(/jumped back by about 2 days.*not confirmed since/);
    wall += 3_600_000;
    mono += 3_600_000;
    expect(w.check(wall - 5 * 3_600_000)).toMatch(/not confirmed since/); // a confirmation from before the jump
    wall += 3_600_000;
    mono += 3_600_000;
    expect(w.check(wall - 60_000)).toBeNull(); // `prune --apply --trust-clock` ran after it
    wall += 3_600_000;
    mono += 3_600_000;
    expect(w.check()).toBeNull();
  });

  it('a pass told of a jump deletes nothing by age and says why; max_sessions still applies', async () => {
    const home = tempDir();
    handHome(home, sessions(NOW.getTime() - 3_600_000, 8, 10), { seahorse: false });
    const why = 'the wall clock jumped ahead by about 1825 days since the last pass';
    const r = await runPrunePass({
      home,
      env,
      apply: true,
      clock: fixedClock(NOW),
      stateDir: null,
      probe: down,
      skipAgeCheck: why,
      flags: { max_sessions: 6 },
    });
    expect(r.age_check).toBe('skipped_clock_jump');
    expect(r.sessions.filter((s) => s.reason === 'max_age_days')).toEqual([]);
    expect(r.totals.deleted_sessions).toBe(2);
    expect(r.warnings).toContain(
      `${why}: the age check is skipped this pass (nothing is deleted by age until two passes agree on the time)`,
    );
    expect(renderPruneText(r, Infinity)).toContain('age check: SKIPPED this pass (the wall clock jumped');
  });
});
