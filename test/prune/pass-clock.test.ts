import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/io/clock.js';
import { USABLE_SINCE_MS } from '../../src/picoclaw/time.js';
import { runPrunePass } from '../../src/prune/pass.js';
import { CLOCK_CONFIRMED } from '../../src/state/clock-confirmed.js';
import { readHistory } from '../../src/state/history.js';
import { downGateway } from '../support/gateway-state.js';
import { handHome } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * The pass reads time from its injected clock alone: the history line's `at`, the confirmed clock
 * (--trust-clock) and the "clock before 2024" warning all follow it, whatever the machine's clock says.
 */
const DAY = 86_400_000;
const NO_GUARD_CONFIG = fileURLToPath(new URL('../fixtures/guard-config-empty.json', import.meta.url));
const env = { HOME: '/nowhere', PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG };

function pass(now: Date, stateDir: string, trustClock = false) {
  const home = tempDir();
  handHome(home, [
    { key: 'sk_v1_old', updated: new Date(now.getTime() - 90 * DAY).toISOString() },
    { key: 'sk_v1_new', updated: now.toISOString() },
  ]);
  return runPrunePass({
    home,
    env,
    apply: true,
    clock: fixedClock(now),
    stateDir,
    probe: downGateway,
    trustClock,
    flags: { max_age_days: 30, max_sessions: 0 },
  });
}

describe("the pass's clock", () => {
  it("the history line and the confirmed clock carry the injected time, not the machine's", async () => {
    // A day the machine's clock never reads while this runs.
    const now = new Date('2025-03-04T05:06:07.000Z');
    const state = tempDir();
    const r = await pass(now, state, true);
    expect(r.exit_code, r.warnings.join(' | ')).toBe(0);
    const history = readHistory(state);
    expect(history).toHaveLength(1);
    expect(history[0]!.at).toBe(now.toISOString());
    expect(readFileSync(join(state, CLOCK_CONFIRMED), 'utf8').trim()).toBe(now.toISOString());
  });

  it('the "before 2024" warning turns on at USABLE_SINCE_MS, the same instant the plan uses', async () => {
    const before = await pass(new Date(USABLE_SINCE_MS - 1000), tempDir());
    expect(before.warnings.join('\n')).toMatch(/before 2024: the age check is skipped/);
    const at = await pass(new Date(USABLE_SINCE_MS), tempDir());
    expect(at.warnings.join('\n')).not.toMatch(/before 2024/);
  });
});
