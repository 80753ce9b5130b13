import { closeSync, constants, mkdirSync, openSync, readdirSync, statfsSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sqlite, type Database } from './sqlite.js';

/**
 * A command's working database: a SQLite file of its own that holds a per-session working set
 * outside the JS heap, so that what a command holds in memory does not grow with the home. SQLite
 * keeps at most its page cache (CACHE_KIB) of it in memory; the rest is in the file.
 *
 * Where the file goes: the first tmpfs folder of `$XDG_RUNTIME_DIR`, `/run/user/<uid>` and
 * `/dev/shm` that this process may write, else the system's temporary folder. On tmpfs the file
 * is never written to the SD card: it is memory the kernel can page out under pressure, and it is
 * gone at the next boot whatever happens. Elsewhere it is written with no journal and no sync: a
 * command's file lives for seconds, and the page cache mostly drops it before it is written back.
 * Its name is removed as soon as it is open (SQLite keeps working on the open file, which has no
 * journal beside it): the kernel frees it when the process ends, however it ends, Ctrl-C and
 * SIGKILL included. A name left by a command killed in the instant between is removed by the
 * next one (it carries the pid of the process that made it).
 *
 * Nothing in the PicoClaw home is ever written here; the file is this process's alone.
 */

const PREFIX = 'picoclaw-guard-work-';
/** SQLite's page cache for the working database, in KiB: the bound on what of it stays in memory. */
const CACHE_KIB = 2048;
const TMPFS_MAGIC = 0x01021994;
/** A tmpfs with less free space than this is passed over. */
const MIN_FREE_BYTES = 64 * 1024 * 1024;

export interface WorkingDb {
  db: Database;
  /** Where it was made (its name is gone already). */
  path: string;
  close(): void;
}

function isTmpfsWithRoom(dir: string): boolean {
  try {
    const s = statfsSync(dir);
    return s.type === TMPFS_MAGIC && s.bavail * s.bsize >= MIN_FREE_BYTES;
  } catch {
    return false;
  }
}

/** The folders tried for the file, best first. */
export function workingDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && xdg.startsWith('/')) out.push(xdg);
  if (typeof process.getuid === 'function') out.push(`/run/user/${process.getuid()}`);
  out.push('/dev/shm');
  return [...new Set(out)].filter(isTmpfsWithRoom).concat(tmpdir());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Remove the working files a killed command of this user left in `dir`. */
function sweep(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    if (!n.startsWith(PREFIX)) continue;
    const pid = Number(n.slice(PREFIX.length).split('-')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    try {
      unlinkSync(join(dir, n));
    } catch {
      // Another user's, or gone already.
    }
  }
}

/** Create the file exclusively in the first folder that takes it. */
function createFile(dirs: string[]): string {
  let last: unknown = null;
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true });
      sweep(dir);
      const path = join(dir, `${PREFIX}${process.pid}-${randomBytes(6).toString('hex')}.db`);
      closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
      return path;
    } catch (err) {
      last = err;
    }
  }
  throw new Error(`no folder takes a working database (${dirs.join(', ')}): ${String(last)}`);
}

/** Open a new, empty working database, whose file has no name: it is freed when closed or when the process ends. */
export function openWorkingDb(dirs: string[] = workingDirs()): WorkingDb {
  const path = createFile(dirs);
  let db: Database;
  try {
    db = new (sqlite())(path);
    // No journal: the file is this command's alone and worthless after a crash. better-sqlite3's
    // defensive mode refuses journal_mode OFF; it is back on for everything after.
    db.unsafeMode(true);
    const mode = db.pragma('journal_mode = OFF', { simple: true });
    db.unsafeMode(false);
    if (mode !== 'off') throw new Error(`the working database keeps a journal (${String(mode)})`);
    unlinkSync(path);
    db.pragma('synchronous = OFF');
    db.pragma(`cache_size = -${CACHE_KIB}`);
    // Never a temporary table in memory: the queries on this file read its indexes in order and
    // need no sort of their own.
    db.pragma('temp_store = FILE');
    db.pragma('locking_mode = EXCLUSIVE');
  } catch (err) {
    try {
      unlinkSync(path);
    } catch {
      // gone already
    }
    throw err;
  }
  let open = true;
  return {
    db,
    path,
    close() {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}
