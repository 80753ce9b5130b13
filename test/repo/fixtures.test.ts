import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures');
const CAPTURE = join(FIXTURES, 'real-picoclaw-capture');

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

describe('the repository stands on its own', () => {
  it('the real PicoClaw capture is byte for byte what its PROVENANCE.md records', () => {
    const provenance = readFileSync(join(CAPTURE, 'PROVENANCE.md'), 'utf8');
    const recorded = [...provenance.matchAll(/^\| `([^`]+)` \| `([0-9a-f]{64})` \|$/gm)].map(
      (m) => [m[1]!, m[2]!] as const,
    );
    const files = walk(join(CAPTURE, 'sessions'))
      .map((p) => relative(CAPTURE, p))
      .sort();
    expect(recorded.map(([f]) => f).sort()).toEqual(files);
    expect(files).toHaveLength(2);
    for (const [file, sha] of recorded) {
      expect(
        createHash('sha256')
          .update(readFileSync(join(CAPTURE, file)))
          .digest('hex'),
        file,
      ).toBe(sha);
    }
  });

  it('no test or source file reaches outside the repository for fixtures or docs', () => {
    const offenders: string[] = [];
    for (const dir of ['src', 'test', 'bench', 'scripts']) {
      for (const p of walk(join(ROOT, dir))) {
        if (!/\.(ts|mjs|js)$/.test(p) || p.includes(`${join('test', 'fixtures')}`)) continue;
        const text = readFileSync(p, 'utf8');
        if (/\.\.\/shared\/|\/work\/shared/.test(text)) offenders.push(relative(ROOT, p));
      }
    }
    expect(offenders).toEqual([]);
  });

  it('git ignores no fixture file (a fresh clone gets every one)', (ctx) => {
    const inGit = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT, encoding: 'utf8' });
    if (inGit.status !== 0) ctx.skip('not a git checkout (for example an unpacked tarball): nothing to check');
    const files = walk(FIXTURES)
      .filter((p) => statSync(p).isFile())
      .map((p) => relative(ROOT, p));
    expect(files.length).toBeGreaterThan(10);
    const r = spawnSync('git', ['check-ignore', '--no-index', '--stdin'], {
      cwd: ROOT,
      encoding: 'utf8',
      input: files.join('\n'),
    });
    // check-ignore exits 1 when no path is ignored, 0 when some are (and prints them).
    expect(r.stdout.trim()).toBe('');
    expect(r.status).toBe(1);
  });
});
