import { statfsSync } from 'node:fs';

export interface FsSpace {
  /** Bytes available to an unprivileged user. */
  availableBytes: number;
  totalBytes: number;
  /** Free inodes (files) available, when the file system reports them. */
  availableInodes: number | null;
  totalInodes: number | null;
}

/** A function that tells the free space of the file system holding a path; injected so tests can fake a full disk. */
export type FreeSpaceReader = (path: string) => FsSpace;

export const statfsFreeSpace: FreeSpaceReader = (path) => {
  const s = statfsSync(path);
  return {
    availableBytes: s.bavail * s.bsize,
    totalBytes: s.blocks * s.bsize,
    availableInodes: s.files > 0 ? s.ffree : null,
    totalInodes: s.files > 0 ? s.files : null,
  };
};

/**
 * A reader for tests and for operators who want to dry-run a tight disk:
 * PICOGUARD_FAKE_FREE_BYTES="<path-prefix>=<bytes>[,<prefix>=<bytes>]" overrides
 * the available bytes of any path under that prefix.
 */
export function freeSpaceFromEnv(env: NodeJS.ProcessEnv = process.env): FreeSpaceReader {
  const spec = env.PICOGUARD_FAKE_FREE_BYTES;
  if (!spec) return statfsFreeSpace;
  const rules = spec.split(',').map((part) => {
    const eq = part.lastIndexOf('=');
    return { prefix: part.slice(0, eq), bytes: Number(part.slice(eq + 1)) };
  });
  return (path) => {
    const real = statfsFreeSpace(path);
    const rule = rules.find((r) => path.startsWith(r.prefix));
    return rule && Number.isFinite(rule.bytes) ? { ...real, availableBytes: rule.bytes } : real;
  };
}
