import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * Nothing at run time may depend on the architecture: the boards are arm64, armv7 and
 * riscv64, and better-sqlite3 has no prebuilt binary for riscv64 (docs/boards.md). The
 * lockfile says what a production install (`npm ci --omit=dev`) fetches; dev-only tools
 * (esbuild, rollup) may carry per-platform binaries, the runtime may not.
 */
interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  cpu?: string[];
  os?: string[];
  hasInstallScript?: boolean;
}
const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, LockEntry>;
};
const runtime = Object.entries(lock.packages).filter(([k, v]) => k !== '' && !v.dev);

describe('runtime dependencies', () => {
  it('none is limited to some CPUs or leaves Linux out', () => {
    expect(runtime.length).toBeGreaterThan(0);
    expect(runtime.filter(([, v]) => v.cpu).map(([k, v]) => `${k}: cpu ${v.cpu!.join(',')}`)).toEqual([]);
    expect(runtime.filter(([, v]) => v.os && !v.os.includes('linux')).map(([k]) => k)).toEqual([]);
    expect(runtime.filter(([, v]) => v.optional).map(([k]) => k)).toEqual([]);
  });

  it('the one native module, better-sqlite3, compiles where no prebuilt binary exists', () => {
    expect(runtime.filter(([, v]) => v.hasInstallScript).map(([k]) => k)).toEqual(['node_modules/better-sqlite3']);
    const pkg = JSON.parse(
      readFileSync(new URL('../../node_modules/better-sqlite3/package.json', import.meta.url), 'utf8'),
    ) as { scripts: { install: string } };
    expect(pkg.scripts.install).toMatch(/\|\|\s*node-gyp rebuild/);
  });
});
