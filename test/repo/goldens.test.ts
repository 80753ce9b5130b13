import { describe, expect, it } from 'vitest';
import { compareGoldens, makeGoldens } from '../../dev/goldens.js';

/**
 * The reports and the files a pass leaves, on seeded sample homes with a frozen clock, are the stored
 * goldens byte for byte. A change that means to alter a report regenerates them on purpose
 * (`npm run build:all && npm run goldens -- --update`) and says so in its commit.
 */
describe('goldens', () => {
  it('sessions, prune (text, --wide, --json) and prune --apply --json with its files are unchanged', async () => {
    const made = await makeGoldens();
    expect(made.size).toBeGreaterThan(20);
    expect(compareGoldens(made)).toEqual([]);
  }, 120_000);
});
