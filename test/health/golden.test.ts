import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderHealth } from '../../src/commands/health.js';
import { collectHealth, type CollectOptions } from '../../src/health/index.js';
import { newVcgencmdCache } from '../../src/health/vcgencmd.js';
import { fixedClock } from '../../src/io/clock.js';
import type { FreeSpaceReader } from '../../src/io/freespace.js';
import { discoverHome } from '../../src/picoclaw/home.js';
import { appendHistory } from '../../src/state/history.js';
import { tempDir } from '../support/tmp.js';
import { BOARDS, board, FIXTURES, type BoardName } from './boards.js';

/**
 * End-to-end goldens: collectHealth on each fixture board, byte for byte (key order is
 * part of the public JSON). Nothing machine-dependent goes in: the clock, the duration,
 * statfs and the state folder are injected, and paths under the fixtures are written
 * as <fixtures>. Regenerate with UPDATE_GOLDEN=1 and review the diff.
 */
const NOW = '2026-06-13T18:00:00.000Z';
const GiB = 1024 ** 3;
const fakeStatfs: FreeSpaceReader = () => ({
  availableBytes: 12 * GiB,
  totalBytes: 29 * GiB,
  availableInodes: 1_700_000,
  totalInodes: 1_900_000,
});

async function collect(name: BoardName, extra: Partial<CollectOptions> = {}) {
  const b = board(name);
  return collectHealth({
    sysRoot: b.sys,
    procRoot: b.proc,
    vcgencmd: b.vcgencmd,
    stateDir: tempDir(),
    home: null,
    clock: fixedClock(NOW),
    monotonic: () => 0,
    freeSpace: fakeStatfs,
    cache: newVcgencmdCache(),
    ...extra,
  });
}

function golden(file: string, actual: string): void {
  const text = actual.split(realpathSync(FIXTURES)).join('<fixtures>').split(FIXTURES).join('<fixtures>');
  if (process.env.UPDATE_GOLDEN || !existsSync(file)) {
    if (!process.env.UPDATE_GOLDEN) throw new Error(`missing golden ${file}: run with UPDATE_GOLDEN=1 and review it`);
    writeFileSync(file, text);
  }
  expect(text).toBe(readFileSync(file, 'utf8'));
}

describe('golden health reports', () => {
  it.each(BOARDS)('%s', async (name) => {
    const r = await collect(name);
    golden(join(board(name).dir, 'expected.json'), JSON.stringify(r, null, 2) + '\n');
    golden(join(board(name).dir, 'expected.txt'), renderHealth(r) + '\n');
  });

  it('pi4 with a PicoClaw home (gateway down, two agents, seahorse.db + WAL, last prune)', async () => {
    const home = discoverHome({ home: join(FIXTURES, 'picoclaw-home'), env: {} });
    const stateDir = tempDir();
    appendHistory(stateDir, {
      at: '2026-06-13T03:00:05Z',
      home: home.home,
      mode: 'apply',
      outcome: 'ok',
      deleted_sessions: 4,
      deleted_orphans: 0,
      freed_bytes: 81920,
      sessions_before: 6,
      sessions_after: 2,
      duration_ms: 412,
      reason: null,
    });
    const r = await collect('pi4', { home, stateDir, lastBootstrapGapSeconds: 12.5 });
    golden(join(board('pi4').dir, 'expected-with-home.json'), JSON.stringify(r, null, 2) + '\n');
    golden(join(board('pi4').dir, 'expected-with-home.txt'), renderHealth(r) + '\n');
  });

  it('the summary starts with the status line', async () => {
    const r = await collect('pi4-undervoltage');
    expect(renderHealth(r).split('\n')[0]).toMatch(/^CRITICAL: under-voltage now \(get_throttled 0x50005\)/);
    expect(renderHealth(await collect('pi4')).split('\n')[0]).toBe('OK');
  });
});
