import { statfsSync } from 'node:fs';

export interface FsSpace {
  /** Bytes available to an unprivileged user. */
  availableBytes: number;
  totalBytes: number;
  /** Free inodes (files) available, when the file system reports them. */
  availableInodes: number | null;
  totalInodes: number | null;
}

/**
 * A function that tells the free space of the file system holding a path. The deleting paths (prune --apply,
 * the daemon's pass, delete, restore) get `statfsFreeSpace`, always: a test that needs a full disk passes its
 * own reader in-process or mounts a small tmpfs. Only `health` may rehearse one (src/health/rehearsed-free-space.ts).
 */
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
