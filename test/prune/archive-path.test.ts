import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARCHIVE_SUFFIX, archivePath, homeTag } from '../../src/archive/archive.js';
import { settledHeapData } from '../support/heap.js';

const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, '');

describe('archivePath', () => {
  it('is the folder joined with the stamp, the home tag, the name and the suffix, for any folder', () => {
    const nowMs = Date.UTC(2026, 10, 30, 12, 0, 0, 123);
    for (const dir of ['/var/backups/picoclaw', '/var/backups/picoclaw/', '/', 'rel/dir', './x/../y', '/a//b'])
      for (const homeReal of ['/home/pi/.picoclaw', '/srv/h'])
        for (const [name, i] of [
          ['main_sk_v1_abc', 1],
          ['ops_agent_cron-1-2', 2],
          ['conversation-7', 3],
        ] as const) {
          const want = join(
            dir,
            `${stamp(nowMs)}_${homeTag(homeReal)}_${name}${i === 1 ? '' : `-${i}`}${ARCHIVE_SUFFIX}`,
          );
          // Two places in turn: a made prefix is never served to another place.
          expect(archivePath({ dir, homeReal, nowMs }, name, i)).toBe(want);
          expect(archivePath({ dir, homeReal, nowMs: nowMs + 1 }, name, i)).toBe(
            join(dir, `${stamp(nowMs + 1)}_${homeTag(homeReal)}_${name}${i === 1 ? '' : `-${i}`}${ARCHIVE_SUFFIX}`),
          );
        }
  });

  it('is one flat string: a pass report holds one a deletion', () => {
    const place = {
      dir: '/var/backups/picoclaw/archives',
      homeReal: '/home/pi/.picoclaw',
      nowMs: Date.UTC(2026, 10, 30),
    };
    const n = 5000;
    const names = Array.from({ length: n }, (_, i) => `main_sk_v1_${String(i).padStart(64, '0')}`);
    archivePath(place, names[0]!);
    const before = settledHeapData();
    const paths = names.map((x) => archivePath(place, x));
    const perPath = (settledHeapData() - before) / n;
    const chars = paths[0]!.length;
    // A flat one-byte string is its characters and a 16-byte header, rounded to 8 (and 8 for its slot in
    // `paths`); one made by join() is a chain of pieces over a copy of its text, about three times that. The
    // bound sits between the two: in a full suite on a loaded machine the heap's own noise measured 209 bytes a
    // path against the 183 of a tight bound, and a rope is still well over it.
    expect(perPath).toBeLessThan(2 * chars);
    expect(paths[n - 1]).toBe(
      join(place.dir, `20261130T000000.000Z_${homeTag(place.homeReal)}_${names[n - 1]}.tar.gz`),
    );
  });
});
