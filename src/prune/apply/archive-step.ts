import { accessSync, constants, lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../../errors.js';
import { formatBytes } from '../../io/bytes.js';
import { fileId } from '../../io/file-id.js';
import type { FreeSpaceReader } from '../../io/freespace.js';
import type { Database } from '../../io/sqlite.js';
import type { PicoClawHome } from '../../picoclaw/home.js';
import type { SessionRecord } from '../../picoclaw/inventory/inventory.js';
import { ARCHIVE_BYTES } from '../../archive/fields.js';
import {
  archiveOrphan,
  archiveSession,
  defaultSessionArchivePath,
  removeArchive,
  type ArchiveContext,
} from '../../archive/archive.js';
import type { Plan } from '../plan/plan.js';

/**
 * The archive folder as a whole, checked once before a pass (so a bad folder gives one
 * message, not one per session), and the archives of one pass: written at the moment
 * a session is deleted, removed again if it was kept after all with nothing deleted.
 */

/** The real path of a folder that may not exist yet: its nearest existing ancestor, resolved, plus the rest. */
function realPathOf(p: string): string {
  const abs = resolve(p);
  let head = abs;
  const rest: string[] = [];
  for (;;) {
    try {
      return [realpathSync(head), ...rest].join(sep);
    } catch {
      const up = dirname(head);
      if (up === head) return abs;
      rest.unshift(head.slice(up.length).replace(/^\//, ''));
      head = up;
    }
  }
}

const inside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/**
 * Refuse an archive folder in (or under) a sessions folder: PicoClaw scans those, and a
 * pass must never write there. A configuration error: exit 2, before anything is read.
 */
export function refuseArchiveInSessions(dir: string, home: PicoClawHome): void {
  const real = realPathOf(dir);
  // The archive folder's existing ancestors (itself included), by device and inode: a sessions
  // folder bind-mounted elsewhere is inside no path prefix of its own, but it is one of these.
  const ancestors = new Set<string>();
  for (let d = real; ; d = dirname(d)) {
    const id = fileId(d);
    if (id) ancestors.add(id);
    if (dirname(d) === d) break;
  }
  for (const s of home.sessionsDirs) {
    const sdir = realPathOf(s.dir);
    const sid = fileId(s.dir);
    if (inside(real, sdir) || (sid !== null && ancestors.has(sid))) {
      throw new GuardError(`the archive folder ${dir} is inside the sessions folder ${s.dir}`, {
        exitCode: ExitCode.USAGE,
        path: dir,
        hint:
          'nothing was read or deleted; choose an archive folder outside the PicoClaw ' +
          'workspace (for example /var/backups/picoclaw)',
      });
    }
  }
}

/**
 * Can the pass write its archives? Exists or can be made (made only with apply),
 * is a writable folder, and holds the planned sessions uncompressed (an upper bound).
 * Returns what is wrong, or null.
 */
export function archiveDirProblem(
  dir: string,
  o: { apply: boolean; freeSpace: FreeSpaceReader; plan: Plan },
): string | null {
  const abs = resolve(dir);
  let existing = abs;
  try {
    if (lstatExists(abs) && !statSync(abs).isDirectory()) return `the archive folder ${abs} is not a folder`;
    if (o.apply) mkdirSync(abs, { recursive: true, mode: 0o700 });
    else while (!lstatExists(existing)) existing = dirname(existing);
    if (!statSync(existing).isDirectory()) return `the archive folder ${abs} is not a folder`;
    accessSync(existing, constants.W_OK | constants.X_OK);
  } catch (err) {
    return (
      `the archive folder ${abs} cannot be ${o.apply ? 'created or written' : 'written'}` +
      ` (${errnoCode(err) ?? errorMessage(err)})`
    );
  }
  let need = 1 << 20;
  for (const g of o.plan.groups)
    if (g.action === 'delete') for (const m of g.members) need += m.jsonlBytes + m.metaBytes;
  for (const g of o.plan.groups) if (g.action === 'delete') need += g.estimatedDbBytes;
  for (const x of o.plan.orphans) if (x.action === 'delete') need += x.estimatedDbBytes;
  try {
    const free = o.freeSpace(existing).availableBytes;
    if (free < need)
      return (
        `the archive folder ${abs} has ${formatBytes(free, ARCHIVE_BYTES)} free; the planned sessions need up to ` +
        `${formatBytes(need, ARCHIVE_BYTES)}`
      );
  } catch (err) {
    return `the free space of ${abs} cannot be read (${errnoCode(err) ?? errorMessage(err)})`;
  }
  return null;
}

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** What a kept group or conversation needs to decide whether its archive is a stale copy. */
export interface Pending {
  /** A group's: one archive per member, in the group's member order (the report names each member's own). */
  paths: string[];
  rowsBefore: number;
  files: string[];
}

/** The archives of one pass. */
export class PassArchiver {
  /** Set once an archive could not be written: the pass stops (the ones after would fail alike). */
  failure: string | null = null;
  /** The error behind `failure` (a full disk ends the pass with its own exit code). */
  failureError: unknown = null;
  private readonly ctx: ArchiveContext;

  /** rowsDeleted: the deleter's running count of deleted rows (messages, parts, summaries). */
  constructor(
    dir: string,
    homeReal: string,
    db: Database | null,
    nowMs: number,
    private readonly rowsDeleted: () => number,
  ) {
    this.ctx = { dir: resolve(dir), homeReal: resolve(homeReal), db, nowMs };
  }

  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      this.failure = errorMessage(err);
      this.failureError = err;
      throw err;
    }
  }

  /** Archive each member of a group (each conversation once); on failure nothing of it stays and it throws. */
  group(members: SessionRecord[], ownConversationIds: number[]): Pending {
    const p: Pending = {
      paths: [],
      rowsBefore: this.rowsDeleted(),
      files: members.flatMap((m) => [m.files.jsonl?.path, m.files.meta?.path].filter((x): x is string => !!x)),
    };
    const own = new Set(ownConversationIds);
    try {
      for (const m of members) {
        const convs = m.conversations.map((c) => c.conversationId).filter((id) => own.delete(id));
        p.paths.push(this.guard(() => archiveSession(this.ctx, m, convs)));
      }
    } catch (err) {
      for (const a of p.paths) removeArchive(a);
      throw err;
    }
    return p;
  }

  /** A conversation deleted on its own (no session file claims it, or every claimant is gone). */
  orphan(c: { conversationId: number; key: string }): Pending {
    return { paths: [this.guard(() => archiveOrphan(this.ctx, c))], rowsBefore: this.rowsDeleted(), files: [] };
  }

  /** Where session s's archive goes in this pass unless that name is taken (group() then returns another). */
  defaultPath(s: SessionRecord): string {
    return defaultSessionArchivePath(this.ctx, s);
  }

  /**
   * Kept after all: if no seahorse row was deleted since it was archived and every file is
   * still in place, nothing of it is gone and its archive would only be a stale copy for a
   * later restore: remove it. Otherwise it stays (it holds what was deleted).
   */
  kept(p: Pending | null): boolean {
    if (!p || this.rowsDeleted() !== p.rowsBefore || !p.files.every(lstatExists)) return false;
    for (const a of p.paths) removeArchive(a);
    return true;
  }
}

export { realPathOf };
