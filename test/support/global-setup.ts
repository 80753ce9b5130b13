import { execFileSync } from 'node:child_process';

/**
 * Build dist/ so that tests which spawn the real CLI, daemon or gateway simulator run the
 * current code. Only the e2e and safety projects name this file (unit tests import the
 * sources); when both run, the second finds the flag and does not build again. The flag
 * also reaches the test workers, which refuse to spawn dist/ without it (test/support/cli.ts).
 */
export default function setup(): void {
  if (process.env.PICOGUARD_TEST_BUILT === '1') return;
  execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
  process.env.PICOGUARD_TEST_BUILT = '1';
}
