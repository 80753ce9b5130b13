import { execFileSync } from 'node:child_process';

/** Build dist/ once so that tests which spawn the real CLI run the current code. */
export default function setup(): void {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
}
