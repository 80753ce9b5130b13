import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The guard's version, from its own package.json: the one source for `-V`, the daemon's
 * status and /metrics build_info, and the header of the installed units. It is found by
 * walking up from this file (src/ when run from a clone, dist/src/ when installed), not
 * taken from $npm_package_version, which names whatever package an `npm run` belongs to.
 * A package.json that cannot be read (a broken install) gives `unknown`, never a made-up number.
 */
let cached: string | undefined;

export function guardVersion(): string {
  cached ??= readVersion();
  return cached;
}

function readVersion(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const v = versionIn(join(d, 'package.json'));
    if (v !== undefined) return v;
    const up = dirname(d);
    if (up === d) return 'unknown';
    d = up;
  }
}

function versionIn(file: string): string | undefined {
  try {
    const p = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    return p.name === 'picoclaw-guard' && typeof p.version === 'string' && p.version !== '' ? p.version : undefined;
  } catch {
    return undefined;
  }
}
