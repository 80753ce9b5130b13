import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  readSizeEstimate,
  scaledEstimate,
  SIZE_ESTIMATE_FILE,
  writeSizeEstimate,
} from '../../src/state/size-estimate.js';
import { tempDir } from '../support/tmp.js';

const E = {
  db: '/x/seahorse.db',
  since: '2026-11-30T12:00:00.000Z',
  estimated_bytes_after: 1000,
  content_bytes: 400,
  reason: 'r',
};

describe('the size estimate in the state folder', () => {
  // A torn, foreign or odd file (none) is the state file contract's: test/state/store-contract.test.ts.
  it('is kept per database, cleared with null, and an entry of the wrong shape is dropped', () => {
    const d = tempDir();
    expect(readSizeEstimate(d, E.db)).toBeNull();
    writeSizeEstimate(d, E.db, E);
    writeSizeEstimate(d, '/y/seahorse.db', { ...E, db: '/y/seahorse.db', estimated_bytes_after: 5 });
    expect(readSizeEstimate(d, E.db)).toEqual(E);
    writeSizeEstimate(d, E.db, null);
    expect(readSizeEstimate(d, E.db)).toBeNull();
    expect(readSizeEstimate(d, '/y/seahorse.db')?.estimated_bytes_after).toBe(5);
    writeFileSync(join(d, SIZE_ESTIMATE_FILE), JSON.stringify([{ db: 1 }, { ...E, estimated_bytes_after: '1000' }]));
    expect(readSizeEstimate(d, E.db)).toBeNull();
    writeSizeEstimate(d, E.db, E);
    expect(JSON.parse(readFileSync(join(d, SIZE_ESTIMATE_FILE), 'utf8'))).toEqual([E]);
  });

  it('scales with the stored text: the same text, the same estimate; growth adds in proportion', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e9 }),
        fc.integer({ min: 1, max: 1e8 }),
        fc.integer({ min: 0, max: 1e8 }),
        (e, c, now) => {
          const rec = { estimated_bytes_after: e, content_bytes: c };
          expect(scaledEstimate(rec, c)).toBe(e);
          const s = scaledEstimate(rec, now);
          if (now >= c) expect(s).toBeGreaterThanOrEqual(e);
          else expect(s).toBeLessThanOrEqual(e);
        },
      ),
    );
  });
});
