import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../errors.js';
import { fsyncDir } from '../io/atomic.js';
import { ArchiveInvalid, isObj, type ArchiveInfo } from './fields.js';
import { readArchiveFiles } from './read.js';
import { hashFd, sha256, writeAll } from './tar.js';

/**
 * Writing one archived session into a sessions folder so that a kill at any step leaves
 * something the next run recognises and finishes:
 *   1. the .jsonl streams into a temp file as the archive is read (`.tmp-picoclaw-guard-restore-*`,
 *      a name PicoClaw ignores), the meta is held (small) and written to a temp file once the
 *      whole archive checked out (shape, every SHA-256);
 *   2. the .jsonl is linked to its name, then the .meta.json (PicoClaw lists a session by its
 *      meta: it never sees a half-restored one);
 *   3. the temp files are removed.
 * link() never replaces a file. Before any of it, each of the two names is compared with what the
 * archive holds (size, then SHA-256): a name that holds exactly the archive's bytes is this
 * restore's own earlier work (or the session as it was, half-deleted), and only the missing names
 * are written; a name that holds anything else is another session, never touched. The temp files
 * of a killed restore are removed by the next one (which holds the pass lock: no other restore or
 * pass runs meanwhile).
 */

export type RestoreStep = 'holds' | 'temp-jsonl' | 'temp-meta' | 'link-jsonl' | 'link-meta' | 'temps-removed';
export const RESTORE_STEPS: readonly RestoreStep[] = [
  'holds',
  'temp-jsonl',
  'temp-meta',
  'link-jsonl',
  'link-meta',
  'temps-removed',
];

export const RESTORE_TMP_PREFIX = '.tmp-picoclaw-guard-restore-';

/** Where an archive goes: its own key and file base, or a new key beside a later life. */
export interface Target {
  dir: string;
  key: string;
  base: string;
  /** The key changed (restored beside another life): the meta is rewritten with it. */
  beside: boolean;
}

/** The key a life restored beside another gets: the archived key and the time it was archived. */
export function besideKey(key: string, archivedAt: string): string {
  const t = new Date(Date.parse(archivedAt))
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${key}.restored-${t}`;
}

/** PicoClaw's sanitizeKey (pkg/memory/jsonl.go): `:`, `/` and `\` become `_`. */
export function sanitizeKey(key: string): string {
  return key.replace(/[:/\\]/g, '_');
}

/**
 * The meta of a life restored under a new key: the archived one with that key and without its
 * aliases (an alias would make PicoClaw resolve a chat's legacy key to this copy instead of the
 * live session, pkg/memory/jsonl.go ResolveSessionKey), indented as PicoClaw writes it.
 */
export function besideMeta(meta: Buffer, key: string): Buffer {
  const m = JSON.parse(meta.toString('utf8')) as unknown;
  if (!isObj(m)) throw new Error('the meta is not an object');
  m.key = key;
  delete m.aliases;
  return Buffer.from(JSON.stringify(m, null, 2));
}

export type NameState = 'absent' | 'same' | 'other';

/** What a name holds compared with the bytes it should get: nothing, exactly them, or something else. */
export function nameState(path: string, want: { bytes: number; sha256: string }): NameState {
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return 'absent';
    return 'other';
  }
  if (!st.isFile() || st.size !== want.bytes) return 'other';
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return 'other';
  }
  try {
    const now = fstatSync(fd);
    if (!now.isFile() || now.size !== want.bytes) return 'other';
    return hashFd(fd, want.bytes) === want.sha256 ? 'same' : 'other';
  } catch {
    return 'other';
  } finally {
    closeSync(fd);
  }
}

/** Remove the temp files a killed restore left in dir; returns how many. */
export function removeStaleTemps(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let n = 0;
  for (const name of names) {
    if (!name.startsWith(RESTORE_TMP_PREFIX)) continue;
    try {
      unlinkSync(join(dir, name));
      n++;
    } catch {
      // gone already
    }
  }
  if (n > 0) fsyncDir(dir);
  return n;
}

export interface WriteOutcome {
  /** The names linked by this run. */
  linked: string[];
  /** Names already holding the archive's bytes (an earlier, interrupted run's). */
  inPlace: string[];
}

export type Verdict =
  | { kind: 'write'; need: ('jsonl' | 'meta')[]; inPlace: string[] }
  | { kind: 'done'; inPlace: string[] }
  | { kind: 'occupied'; names: string[] };

const nameOf = (t: Target, role: 'jsonl' | 'meta') => `${t.base}${role === 'jsonl' ? '.jsonl' : '.meta.json'}`;

/**
 * The two names against the archive: which are missing, which hold its bytes already, and whether
 * anything else is there. metaWant is the meta as it will be written (rewritten when beside).
 */
export function verdict(info: ArchiveInfo, t: Target, metaWant: { bytes: number; sha256: string }): Verdict {
  const jsonl = info.files.find((f) => f.role === 'jsonl');
  const wants: ['jsonl' | 'meta', { bytes: number; sha256: string } | null][] = [
    ['jsonl', jsonl ? { bytes: jsonl.bytes, sha256: jsonl.sha256 } : null],
    ['meta', metaWant],
  ];
  const need: ('jsonl' | 'meta')[] = [];
  const inPlace: string[] = [];
  const occupied: string[] = [];
  for (const [role, want] of wants) {
    const name = nameOf(t, role);
    const path = join(t.dir, name);
    // A meta-only archive: a .jsonl there belongs to another session.
    const st = want ? nameState(path, want) : nameState(path, { bytes: -1, sha256: '' });
    if (st === 'other') occupied.push(name);
    else if (st === 'same') inPlace.push(name);
    else if (want) need.push(role);
  }
  if (occupied.length > 0) return { kind: 'occupied', names: occupied };
  if (need.length === 0) return { kind: 'done', inPlace };
  return { kind: 'write', need, inPlace };
}

function tempIn(dir: string): string {
  return join(dir, `${RESTORE_TMP_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** Give a written temp file its mode (and, for root, the folder's owner), and sync it. */
function settle(fd: number, mode: number, owner: { uid: number; gid: number } | null): void {
  fchmodSync(fd, mode);
  // Root restoring for the gateway's user: the files belong to the folder's owner.
  if (owner) fchownSync(fd, owner.uid, owner.gid);
  fsyncSync(fd);
}

/**
 * Write the missing names of one session (v.need) from the archive. Throws ArchiveInvalid when the
 * archive fails a check on this read (nothing linked), or the I/O error (nothing this run linked is
 * left).
 */
export async function writeSession(
  info: ArchiveInfo,
  t: Target,
  need: ('jsonl' | 'meta')[],
  onStep: (step: RestoreStep) => void,
): Promise<string[]> {
  mkdirSync(t.dir, { recursive: true });
  const owner = process.getuid?.() === 0 ? statSync(t.dir) : null;
  const temps = new Map<'jsonl' | 'meta', string>();
  let jsonlFd: number | null = null;
  const metaParts: Buffer[] = [];
  const linked: string[] = [];
  try {
    const read = await readArchiveFiles(info.path, (role) => {
      if (role === 'meta') return { write: (b) => metaParts.push(Buffer.from(b)) };
      if (!need.includes('jsonl')) return { write: () => undefined };
      const tmp = tempIn(t.dir);
      temps.set('jsonl', tmp);
      jsonlFd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      const fd = jsonlFd;
      return { write: (b) => writeAll(fd, b) };
    });
    if (read.life.metaProblem) throw new ArchiveInvalid(info.path, 'the meta file', read.life.metaProblem);
    const mode = (role: 'jsonl' | 'meta') => read.files.find((f) => f.role === role)?.mode ?? 0o644;
    if (jsonlFd !== null) {
      settle(jsonlFd, mode('jsonl'), owner);
      closeSync(jsonlFd);
      jsonlFd = null;
      onStep('temp-jsonl');
    }
    if (need.includes('meta')) {
      const archived = Buffer.concat(metaParts);
      const bytes = t.beside ? besideMeta(archived, t.key) : archived;
      const tmp = tempIn(t.dir);
      temps.set('meta', tmp);
      const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        writeAll(fd, bytes);
        settle(fd, mode('meta'), owner);
      } finally {
        closeSync(fd);
      }
      onStep('temp-meta');
    }
    try {
      for (const role of ['jsonl', 'meta'] as const) {
        const tmp = temps.get(role);
        if (!tmp) continue;
        const target = join(t.dir, nameOf(t, role));
        linkSync(tmp, target);
        linked.push(target);
        fsyncDir(t.dir);
        onStep(role === 'jsonl' ? 'link-jsonl' : 'link-meta');
      }
    } catch (err) {
      // Neither: take back what this run linked (the same inode as its temp file).
      for (const p of linked) {
        const tmp = temps.get(p.endsWith('.jsonl') ? 'jsonl' : 'meta')!;
        try {
          if (statSync(p).ino === statSync(tmp).ino) unlinkSync(p);
        } catch {
          // gone
        }
      }
      fsyncDir(t.dir);
      throw err;
    }
    for (const tmp of temps.values()) unlinkSync(tmp);
    temps.clear();
    fsyncDir(t.dir);
    onStep('temps-removed');
    return linked;
  } finally {
    if (jsonlFd !== null) closeSync(jsonlFd);
    for (const tmp of temps.values()) {
      try {
        unlinkSync(tmp);
      } catch {
        // not written
      }
    }
  }
}

/** SHA-256 and size of the meta as it will be written (for the check of what a name holds). */
export function metaWant(meta: Buffer, t: Target): { bytes: number; sha256: string } {
  const b = t.beside ? besideMeta(meta, t.key) : meta;
  return { bytes: b.length, sha256: sha256().update(b).digest('hex') };
}
