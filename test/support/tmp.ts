import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/** A fresh temporary folder, removed after the test. */
export function tempDir(prefix = 'pcg-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

afterEach(() => {
  while (made.length > 0) {
    const d = made.pop()!;
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      // a test left it read-only; leave it to the OS
    }
  }
});
