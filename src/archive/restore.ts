import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export { resolveKey } from './lives.js';
export { keyMatcher } from '../picoclaw/session-key.js';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { tryLock } from '../io/lock.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { activeHolds, addHolds, releaseHolds } from '../state/holds.js';
import { ARCHIVE_SUFFIX, LEGACY_SUFFIX } from './archive.js';
import { ArchiveInvalid, type ArchiveInfo } from './fields.js';
import { inspectArchive } from './read.js';
import { lockPathFor } from '../state/pass-lock.js';
import { choose, later, lifeText, otherReason, resolveKey, restoreCommand } from './lives.js';
import {
  besideKey,
  metaWant,
  removeStaleTemps,
  sanitizeKey,
  verdict,
  writeSession,
  type RestoreStep,
  type Target,
} from './restore-write.js';

/**
 * Putting archived sessions back into the sessions folder of the same agent in the given home
 * (the rules: docs/restore.md). Every archive is checked whole first (its type without blocking,
 * its shape, every SHA-256, size caps), as a stream. A key has lives: each archive of it is one
 * (pruned, came back, pruned again), complete or not (an archive of a half-deleted session holds
 * only the meta). A folder restores the latest complete life of each key and lists the others with
 * the command that restores one; a file restores that life, under its key or, with `beside`, under
 * a new key PicoClaw lists beside a later life. Nothing is ever overwritten; the writing survives a
 * kill at any step (./restore-write.ts). Seahorse rows are not written back: PicoClaw's bootstrap
 * re-indexes the sessions from their JSONL at its next start.
 */
export type RestoreAction = 'restored' | 'skipped' | 'other_life' | 'invalid' | 'listed' | 'rows_only';

export interface RestoreEntry {
  archive: string;
  key: string | null;
  agent: string | null;
  archived_at: string | null;
  action: RestoreAction;
  reason: string | null;
  /** The paths this run linked. */
  files: string[];
  /** The life the archive holds: non-empty .jsonl lines, bytes of its files, whether it is whole. */
  messages: number | null;
  bytes: number | null;
  complete: boolean | null;
  /** The key the restored session has (another than `key` when restored beside a later life). */
  restored_as: string | null;
  /** An earlier, interrupted restore of it: finished now, or found complete. */
  resumed: 'finished' | 'already_done' | null;
  /** The command that restores this life (other lives, and refusals that name a choice). */
  command: string | null;
}

export interface RestoreOptions {
  /** The home to restore into (and whose archives alone are used); null: list every archive. */
  home: PicoClawHome | null;
  key?: string;
  list: boolean;
  /** Restore under a new key (besideKey) instead of the archived one. */
  beside?: boolean;
  /** The guard's state folder: the holds, and the pass lock where the home cannot hold it (default: none). */
  stateDir?: string | null;
  /** Hold restored sessions from pruning this many days (default 0: no hold). */
  holdDays?: number;
  /** The clock (default: now). */
  nowMs?: number;
  /**
   * Test hook: called after each step of the writing (./restore-write.ts); 'holds' comes only
   * when holds were written (a step that writes nothing cannot fail or be cut).
   */
  onStep?: (step: RestoreStep, key: string) => void;
}

export interface RestoreResult {
  entries: RestoreEntry[];
  /** Archives taken from other homes, left alone. */
  otherHomes: number;
  /** Temp files a killed restore had left in the sessions folders, removed. */
  tempsRemoved: number;
  holdUntil: string | null;
  holdProblem: string | null;
}

const DAY_MS = 86_400_000;
const isArchiveName = (n: string) => !n.startsWith('.') && (n.endsWith(ARCHIVE_SUFFIX) || n.endsWith(LEGACY_SUFFIX));

function listArchives(path: string): { files: string[]; single: boolean } {
  const abs = resolve(path);
  let st;
  try {
    // stat never opens: a FIFO given here does not block (the archive is opened non-blocking later).
    st = statSync(abs);
  } catch (err) {
    throw new GuardError(`cannot read ${path}: ${errnoCode(err) ?? errorMessage(err)}`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'give an archive file or the folder passed to prune --archive',
    });
  }
  if (!st.isDirectory()) return { files: [abs], single: true };
  return {
    files: readdirSync(abs)
      .filter(isArchiveName)
      .sort()
      .map((n) => join(abs, n)),
    single: false,
  };
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** Was this archive taken from the home? Version 2 records the home; version 1 only its sessions folder. */
function fromHome(info: ArchiveInfo, homeReal: string, sessionsReal: Set<string>): boolean {
  if (info.home !== null) return info.home === homeReal;
  return info.sessionsDir !== null && sessionsReal.has(realOrSelf(info.sessionsDir));
}

function entryOf(i: ArchiveInfo, action: RestoreAction): RestoreEntry {
  return {
    archive: i.path,
    key: i.key,
    agent: i.agent,
    archived_at: i.archivedAt,
    action,
    reason: null,
    files: [],
    messages: i.kind === 'session' ? i.life.messages : null,
    bytes: i.life.bytes,
    complete: i.kind === 'session' ? i.life.complete : null,
    restored_as: null,
    resumed: null,
    command: null,
  };
}

export async function restoreArchives(path: string, o: RestoreOptions): Promise<RestoreResult> {
  const { files, single } = listArchives(path);
  const entries: RestoreEntry[] = [];
  const valid: ArchiveInfo[] = [];
  for (const f of files) {
    try {
      const info = await inspectArchive(f);
      // Only a life restored under a new key needs its meta again before the writing reads it.
      if (!o.beside) info.life.meta = null;
      valid.push(info);
    } catch (err) {
      const msg = err instanceof ArchiveInvalid ? err.message : `${f}: ${errnoCode(err) ?? errorMessage(err)}`;
      if (single)
        throw new GuardError(msg, {
          exitCode: ExitCode.DATA,
          path: f,
          hint: 'nothing was restored from it; it is not an archive this tool wrote, or it is damaged',
        });
      entries.push({
        ...entryOf({ path: f, life: { bytes: 0 } } as ArchiveInfo, 'invalid'),
        key: null,
        agent: null,
        archived_at: null,
        bytes: null,
        reason: msg.startsWith(f) ? msg.slice(f.length + 2) : msg,
      });
    }
  }

  let otherHomes = 0;
  let mine = valid;
  const home = o.home;
  if (home) {
    const homeReal = realOrSelf(home.home);
    const sessionsReal = new Set(home.sessionsDirs.map((s) => realOrSelf(s.dir)));
    mine = valid.filter((i) => fromHome(i, homeReal, sessionsReal));
    otherHomes = valid.length - mine.length;
    if (single && mine.length === 0 && valid.length === 1) {
      const i = valid[0]!;
      throw new GuardError(`${i.path} was taken from ${i.home ?? i.sessionsDir}, not from ${home.home}`, {
        exitCode: ExitCode.USAGE,
        path: i.path,
        hint: 'pass the --home it was taken from',
      });
    }
  }
  if (o.key !== undefined) {
    const key = resolveKey(
      o.key,
      mine.map((i) => i.key),
      path,
    );
    mine = mine.filter((i) => i.key === key);
  }

  // The lives of each key (with a home, every archive left is from it: old ones name only its folder).
  const ident = (i: ArchiveInfo) => `${home ? '' : (i.home ?? i.sessionsDir)}\0${i.kind}\0${i.agent}\0${i.key}`;
  const lives = new Map<string, ArchiveInfo[]>();
  for (const i of mine) lives.set(ident(i), [...(lives.get(ident(i)) ?? []), i]);
  const work: { info: ArchiveInfo; entry: RestoreEntry }[] = [];
  for (const group of lives.values()) {
    // A file names its life; a folder restores the latest complete one.
    const chosen = single ? group[0]! : choose(group);
    for (const i of group.sort(later)) {
      const entry = entryOf(i, 'listed');
      entries.push(entry);
      if (i !== chosen) {
        entry.action = 'other_life';
        entry.reason = otherReason(i, chosen);
        // A conversation's rows are not restored by any command.
        entry.command = i.kind === 'session' ? restoreCommand(i.path, home, chosen !== null) : null;
        continue;
      }
      if (i.kind === 'conversation') {
        entry.action = o.list ? 'listed' : 'rows_only';
        entry.reason = 'seahorse rows only (a conversation no session kept): seahorse/rows.jsonl in the archive';
      } else if (o.list) entry.reason = `the life a restore of the folder puts back: ${lifeText(i)}`;
      else work.push({ info: i, entry });
    }
    if (!chosen && !o.list) {
      // Only incomplete lives: a folder restores none of them; the latest is named, with its command.
      const entry = entries.find((e) => e.archive === [...group].sort(later).pop()!.path)!;
      entry.action = 'skipped';
      entry.reason =
        `only incomplete lives of this key are archived (${entry.reason}); a folder restore puts none ` +
        `back: restore one by name`;
      entry.command = restoreCommand(entry.archive, home, false);
    }
  }
  const res: RestoreResult = { entries, otherHomes, tempsRemoved: 0, holdUntil: null, holdProblem: null };
  if (o.list || work.length === 0 || !home) return res;

  // One restore or pass at a time per home: what is checked below stays true while it is written,
  // and any restore temp file in a sessions folder is a dead run's.
  const lock = tryLock(lockPathFor(home, o.stateDir ?? null), `restore pid ${process.pid}`);
  if (!lock.ok) {
    const h = lock.holder;
    throw new GuardError(
      `a prune pass or restore holds the lock for ${home.home}${h ? ` (pid ${h.pid}, ${h.command}, since ${h.since})` : ''}`,
      { exitCode: ExitCode.LOCKED, hint: 'nothing was restored; run restore again when it has finished' },
    );
  }
  try {
    for (const d of new Set(home.agents.map((a) => a.sessionsDir))) res.tempsRemoved += removeStaleTemps(d);
    await writeAll(work, home, o, res);
  } finally {
    lock.lock.release();
  }
  return res;
}

interface Planned {
  info: ArchiveInfo;
  entry: RestoreEntry;
  target: Target;
  need: ('jsonl' | 'meta')[];
  inPlace: string[];
}

/** Each chosen life against its sessions folder, the holds, then the writing. */
async function writeAll(
  work: { info: ArchiveInfo; entry: RestoreEntry }[],
  home: PicoClawHome,
  o: RestoreOptions,
  res: RestoreResult,
): Promise<void> {
  const planned: Planned[] = [];
  for (const { info, entry } of work) {
    const agent = home.agents.find((x) => x.id === info.agent);
    if (!agent) {
      entry.action = 'skipped';
      entry.reason = `agent "${info.agent}" is not in this PicoClaw's config`;
      continue;
    }
    if (info.life.metaProblem) {
      entry.action = 'invalid';
      entry.reason = `the meta file ${info.life.metaProblem}`;
      continue;
    }
    const key = o.beside ? besideKey(info.key, info.archivedAt) : info.key;
    const base = o.beside ? sanitizeKey(key) : info.base!;
    if (Buffer.byteLength(base) > 245) {
      entry.action = 'skipped';
      entry.reason = `the key it would get (${key}) makes a file name too long`;
      continue;
    }
    const target: Target = { dir: agent.sessionsDir, key, base, beside: !!o.beside };
    const meta = info.files.find((f) => f.role === 'meta')!;
    const v = verdict(info, target, o.beside ? metaWant(info.life.meta!, target) : meta);
    entry.restored_as = key;
    if (v.kind === 'occupied') {
      entry.action = 'skipped';
      entry.restored_as = null;
      entry.reason = `a session already exists there (${v.names.join(', ')}); not overwritten`;
      if (!o.beside) {
        const k = besideKey(info.key, info.archivedAt);
        entry.reason += `; to restore this life beside it, under the key ${k}, run the command`;
        entry.command = restoreCommand(info.path, home, true);
      }
      continue;
    }
    if (v.kind === 'done') {
      entry.action = 'restored';
      entry.resumed = 'already_done';
      entry.reason = `already in place: ${v.inPlace.join(' and ')} hold exactly the archive's bytes`;
      planned.push({ info, entry, target, need: [], inPlace: v.inPlace });
      continue;
    }
    planned.push({ info, entry, target, need: v.need, inPlace: v.inPlace });
  }

  // The holds first: a restore killed after its links must not leave a session the next pass deletes.
  const homeReal = realOrSelf(home.home);
  const heldBefore = new Set<string>();
  let holding = false;
  const nowMs = o.nowMs ?? Date.now();
  const holdDays = o.holdDays ?? 0;
  if (o.stateDir && holdDays > 0 && planned.length > 0) {
    const until = new Date(nowMs + holdDays * DAY_MS).toISOString();
    try {
      for (const h of activeHolds(o.stateDir, homeReal, nowMs)) heldBefore.add(`${h.agent}\0${h.key}`);
      addHolds(
        o.stateDir,
        planned.map((p) => ({
          home: homeReal,
          agent: p.info.agent!,
          key: p.target.key,
          restored_at: new Date(nowMs).toISOString(),
          until,
        })),
        nowMs,
      );
      o.onStep?.('holds', '');
      holding = true;
      res.holdUntil = until;
    } catch (err) {
      res.holdProblem =
        `could not record the holds in ${o.stateDir} (${errnoCode(err) ?? errorMessage(err)}` +
        `): the next prune pass may delete the restored sessions again; pass --state-dir ` +
        `as prune does`;
    }
  }

  const failed: Planned[] = [];
  for (const p of planned) {
    if (p.need.length === 0) continue;
    const { info, entry, target } = p;
    try {
      entry.files = await writeSession(info, target, p.need, (step) => o.onStep?.(step, target.key));
      entry.action = 'restored';
      if (p.inPlace.length > 0) {
        entry.resumed = 'finished';
        entry.reason = `finished an interrupted restore (${p.inPlace.join(' and ')} already held the archive's bytes)`;
      }
      if (target.beside) entry.reason = `restored beside the session of ${info.key}, under the key ${target.key}`;
      if (!info.life.complete)
        entry.reason = `${entry.reason ? `${entry.reason}; ` : ''}as archived: ${lifeText(info)}`;
    } catch (err) {
      failed.push(p);
      entry.restored_as = null;
      if (err instanceof ArchiveInvalid) {
        entry.action = 'invalid';
        entry.reason = err.message.slice(info.path.length + 2);
      } else {
        entry.action = 'skipped';
        entry.reason =
          errnoCode(err) === 'EEXIST'
            ? `a session file appeared in ${target.dir} while restoring; left as it is`
            : `${errnoCode(err) ?? errorMessage(err)}: nothing of it was restored`;
      }
    }
  }
  // A hold for a session that was not restored would keep another life of its key from the policy.
  const release = failed.filter((p) => !heldBefore.has(`${p.info.agent}\0${p.target.key}`));
  if (holding && release.length > 0) {
    try {
      const gone = new Set(release.map((p) => p.target.key));
      releaseHolds(o.stateDir!, homeReal, (k) => gone.has(k), nowMs);
    } catch {
      // A hold left behind only keeps a session longer; it ends by itself.
    }
  }
}
