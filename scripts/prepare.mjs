// `npm ci` / `npm install` in a clone: compile everything (CLI, demo, benchmarks, test
// helpers) when TypeScript is installed. A board install with `npm ci --omit=dev` has no
// TypeScript: say so and succeed, instead of failing at `tsc`; such an install gets its
// compiled code from a packed release (see README, "Installing on a board").
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `prepack` passes --clean: it empties dist/, and npm runs `prepare` right after it while
// packing, so a packed release is compiled from scratch and ships no file an older build
// left behind (a module since removed).
const clean = process.argv.includes('--clean');
let tsc;
try {
  tsc = join(dirname(createRequire(join(root, 'package.json')).resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  if (clean) {
    process.stderr.write(
      'picoclaw-guard: npm pack compiles what it ships and needs TypeScript: run npm ci (with the dev tools) first.\n',
    );
    process.exit(1);
  }
  process.stdout.write(
    'picoclaw-guard: TypeScript is not installed (a production install), so nothing is compiled.\n' +
      '  To run from this clone, install the dev tools too (npm ci), or install a packed release:\n' +
      '  npm pack && npm install -g ./picoclaw-guard-<version>.tgz\n',
  );
  process.exit(0);
}
if (clean) {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  process.exit(0);
}
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
execFileSync(process.execPath, [join(root, 'scripts', 'postbuild.mjs')], { stdio: 'inherit' });
