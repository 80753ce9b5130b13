import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';

const ROOT = join(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  license: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

/** The files `npm pack` would put in the tarball; scripts off, so dist/ is what globalSetup built. */
function packList(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'silent' },
  });
  const [report] = JSON.parse(out) as { files: { path: string }[] }[];
  return report!.files.map((f) => f.path).sort();
}

/** The repository's own .ts files the shipping build compiles (imports followed). */
function shippedSources(): string[] {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const out = execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--listFilesOnly'], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith(ROOT) && !l.includes('/node_modules/'))
    .map((l) => relative(ROOT, l))
    .sort();
}

describe('npm pack ships what a board needs and nothing else', () => {
  it('no benchmarks, test helpers, demo or sample builder; LICENSE, README and BENCHMARKS.md are in', () => {
    const files = packList();
    expect(files.filter((f) => /^dist\/(bench|dev|test)\//.test(f))).toEqual([]);
    expect(files.filter((f) => /(^|\/)(demo\.js|sample\/)/.test(f))).toEqual([]);
    expect(files.filter((f) => /^(src|dev|test|bench)\//.test(f) || f.endsWith('.ts'))).toEqual([]);
    for (const f of [
      'LICENSE',
      'README.md',
      'BENCHMARKS.md',
      'package.json',
      pkg.bin['picoclaw-guard']!,
      'config/picoclaw-guard.example.jsonc',
      'picoclaw-guard.service',
      'picoclaw-guard-prestart.service',
    ]) {
      expect(files, f).toContain(f);
    }
  });

  it(
    'the compiled files shipped are exactly what tsconfig.build.json compiles,' +
      ' and it pulls in no demo or test code',
    () => {
      const sources = shippedSources();
      expect(sources.length).toBeGreaterThan(30);
      expect(sources.filter((s) => !s.startsWith('src/'))).toEqual([]);
      const shippedJs = packList().filter((f) => f.startsWith('dist/'));
      // Declaration files (.d.ts) compile to nothing.
      expect(shippedJs).toEqual(
        sources
          .filter((s) => !s.endsWith('.d.ts'))
          .map((s) => `dist/${s.replace(/\.ts$/, '.js')}`)
          .sort(),
      );
    },
  );

  it('LICENSE is the MIT licence package.json names, with the copyright holder', () => {
    const text = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    expect(pkg.license).toBe('MIT');
    expect(text.split('\n')[0]).toBe('MIT License');
    expect(text).toMatch(/^Copyright \(c\) 2026 picoclaw-guard contributors$/m);
    expect(text).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
  });

  it('an install without the dev tools does not fail at prepare: it says what to do and compiles nothing', () => {
    // A copy of the package without node_modules, as `npm ci --omit=dev` leaves it: no TypeScript.
    const dir = tempDir('pcg-prod-');
    for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts', 'src'])
      cpSync(join(ROOT, f), join(dir, f), { recursive: true });
    mkdirSync(join(dir, 'node_modules'));
    const prepare = spawnSync('npm', ['run', 'prepare'], { cwd: dir, encoding: 'utf8' });
    expect(prepare.status, prepare.stderr).toBe(0);
    expect(prepare.stdout).toMatch(/TypeScript is not installed/);
    expect(prepare.stdout).toMatch(/npm install -g \.\/picoclaw-guard-<version>\.tgz/);
    expect(existsSync(join(dir, 'dist'))).toBe(false);
    // Packing needs the compiler: prepack refuses instead of emptying dist/ and shipping nothing.
    const prepack = spawnSync('npm', ['run', 'prepack'], { cwd: dir, encoding: 'utf8' });
    expect(prepack.status).not.toBe(0);
    expect(prepack.stderr).toMatch(/needs TypeScript: run npm ci/);
  });
});
