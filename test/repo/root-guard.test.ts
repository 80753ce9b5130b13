import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** What only root may do: change a file's owner, mount, run a child as another user, drop the page cache. */
const ROOT_ONLY = [/\bchownSync\(/, /['"]chown['"]/, /['"]mount['"]/, /\buid:\s*\d/, /drop_caches/];

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'fixtures') out.push(...testFiles(p));
    else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

describe('tests pass as an ordinary user', () => {
  it('every test file that does something only root may do skips those tests with a reason (requireRoot)', () => {
    const unguarded = testFiles(join(ROOT, 'test'))
      .filter((p) => !p.endsWith('root-guard.test.ts'))
      .filter((p) => {
        const text = readFileSync(p, 'utf8');
        // requireRoot skips a test that needs root; isRoot() branches a test that runs either way and
        // does the root-only part only as root (the ordinary-user run of the suite checks that it passes).
        return ROOT_ONLY.some((re) => re.test(text)) && !/\brequireRoot\(|\bisRoot\(\)/.test(text);
      })
      .map((p) => relative(ROOT, p));
    expect(unguarded).toEqual([]);
  });
});
