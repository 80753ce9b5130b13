import { statSync } from 'node:fs';

/**
 * What a file or folder is, whatever path reaches it: its device and inode, `dev:ino`.
 *
 * A path names a place, not a file. The same sessions folder is reached through a symlink,
 * through a bind mount at a second workspace (realpath(3) resolves symlinks only: a bind
 * mount has two real paths), or through two agents whose configured workspaces resolve to
 * one folder; the same seahorse.db through a hard link. Anything that must be counted,
 * locked or recorded once per file is keyed by this, never by a path.
 *
 * stat(2) follows symlinks: the identity is the target's. Null when nothing is there
 * (or it cannot be looked at): the caller then falls back on the path, which is all there is.
 */
export function fileId(path: string): string | null {
  try {
    const st = statSync(path, { bigint: true, throwIfNoEntry: false });
    return st ? `${st.dev}:${st.ino}` : null;
  } catch {
    return null;
  }
}
