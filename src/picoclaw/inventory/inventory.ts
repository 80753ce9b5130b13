import { join } from 'node:path';
import { releaseGarbage } from '../../io/heap.js';
import type { Database } from '../../io/sqlite.js';
import type { PicoClawHome } from '../home.js';
import {
  dbFileBytes,
  openSeahorseRead,
  eachConversation,
  type ConversationStat,
  type DbFileBytes,
} from '../seahorse.js';
import {
  scanStore,
  storeTimes,
  type FileFacts,
  type IgnoredEntry,
  type Issue,
  type StoredSession,
} from './sessions.js';
import { parseSqliteTime, usable } from '../time.js';
import { BLOCK, Columns, SessionField } from './columns.js';
import { ConversationColumns } from './conversation-columns.js';
import { KeyClaims, groupKeys } from './key-claims.js';

export { groupKeys };

/**
 * The inventory: every session of every agent, with every usable timestamp, and
 * what seahorse.db holds for it. It reads; it never writes.
 */

export interface SessionTimes {
  meta_updated_at: string | null;
  meta_created_at: string | null;
  jsonl_last_line: string | null;
  seahorse_last_message: string | null;
}

export interface SessionRecord {
  /** Stable id within one inventory: `<sessions dir>/<base>`. */
  id: string;
  agent: string;
  dir: string;
  base: string;
  key: string | null;
  aliases: string[];
  jsonlBytes: number;
  metaBytes: number;
  /** meta.count: raw non-empty lines in the .jsonl (null when the meta is unreadable). */
  messages: number | null;
  times: SessionTimes;
  /** Newest usable timestamp (epoch ms), or null: undated. */
  lastActivityMs: number | null;
  /** seahorse conversations matched on the key and the (non-main) aliases. */
  conversations: ConversationStat[];
  issues: Issue[];
  files: { jsonl: FileFacts | null; meta: FileFacts | null };
}

const NO_STRINGS: string[] = [];
const NO_CONVERSATIONS: ConversationStat[] = [];
Object.freeze(NO_STRINGS);
Object.freeze(NO_CONVERSATIONS);

/** What the records of one column block and one agent's folder share. */
interface Place {
  readonly agent: string;
  readonly dir: string;
  readonly cols: Columns;
  readonly conversations: ConversationColumns;
}

const nullable = (x: number): number | null => (Number.isNaN(x) ? null : x);
/**
 * The aliases as one JSON string, held as one run of characters. V8's JSON.stringify gives a rope of
 * the pieces it joined (a tree of "cons" strings): an inventory of sessions with four aliases holds
 * about 400 bytes a session so, and about 300 with the aliases flat. A string made from bytes is flat
 * by construction; reading a character of the rope flattens it too, but the read's value would go
 * unused, and an optimizing compiler may drop such a read. JSON.stringify escapes lone surrogates,
 * so the UTF-8 round trip gives back the very same string.
 */
function aliasText(aliases: readonly string[]): string {
  return Buffer.from(JSON.stringify(aliases), 'utf8').toString('utf8');
}
/** The file base a record derives from its key when it is not stored (checked as the record is made). */
const baseOfKey = (key: string): string => (key.includes(':') ? key.replaceAll(':', '_') : key);

/**
 * A SessionRecord as the inventory keeps it: its numbers and written times live in the
 * inventory's columns, the file paths and `id` are derived from the folder and base name when
 * asked for (prototype getters), a base that is its key with `:` written `_` is not stored twice,
 * and a session without aliases, issues or conversations shares one empty list. On a
 * 20,000-session home this is what keeps the inventory's memory flat.
 */
class StoredRecord implements SessionRecord {
  key: string | null;
  issues: Issue[];
  /** Its seahorse conversations' row numbers in the inventory's columns: none (-1), one, or a list. */
  private convs: number | number[] = -1;
  /** The aliases as one JSON string (see `aliases`), or null for none. */
  private aliasJson: string | null;
  /** The base name when it is not derived from the key. */
  private readonly ownBase: string | null;
  private readonly i: number;
  /** Agent, folder and column block: one object shared by the records made together. */
  private readonly at: Place;

  constructor(at: Place, s: StoredSession, t: ReturnType<typeof storeTimes>) {
    const cols = at.cols;
    this.at = at;
    this.i = cols.add();
    if (this.i < 0) throw new Error('a full block of columns');
    // The key as the meta's parser made it: a string of its own. The file base is a slice of the
    // listed file name, which would keep that whole name alive behind it.
    this.key = s.key;
    this.ownBase = this.key !== null && baseOfKey(this.key) === s.base ? null : s.base;
    this.aliasJson = null;
    this.aliases = s.parsedMeta?.aliases ?? NO_STRINGS;
    this.issues = s.issues.length > 0 ? [...s.issues] : (NO_STRINGS as Issue[]);
    const n = cols.num;
    const o = this.i * SessionField.STRIDE;
    n[o + SessionField.JsonlBytes] = s.jsonl?.bytes ?? 0;
    n[o + SessionField.MetaBytes] = s.meta?.bytes ?? 0;
    n[o + SessionField.Messages] = s.parsedMeta?.count ?? NaN;
    n[o + SessionField.LastActivity] = newest(t.updatedAt, t.createdAt, t.lastLine) ?? NaN;
    // NaN: the file is absent (an mtime is never NaN).
    n[o + SessionField.JsonlMtime] = s.jsonl ? s.jsonl.mtimeMs : NaN;
    n[o + SessionField.JsonlIno] = s.jsonl?.ino ?? 0;
    n[o + SessionField.MetaMtime] = s.meta ? s.meta.mtimeMs : NaN;
    n[o + SessionField.MetaIno] = s.meta?.ino ?? 0;
    cols.setTime(this.i, 0, s.parsedMeta?.updatedAt ?? null);
    cols.setTime(this.i, 1, s.parsedMeta?.createdAt ?? null);
    cols.setTime(this.i, 2, s.lastLineCreatedAt);
  }

  get agent(): string {
    return this.at.agent;
  }

  get dir(): string {
    return this.at.dir;
  }

  private get cols(): Columns {
    return this.at.cols;
  }

  /**
   * A new list on each read, parsed from one string: a scoped session lists four aliases or so, and
   * as a list of strings they were the largest part of a record. They are read to group the
   * sessions, to tie them to seahorse conversations and for `sessions --json`: a few times each.
   */
  get aliases(): string[] {
    return this.aliasJson === null ? NO_STRINGS : (JSON.parse(this.aliasJson) as string[]);
  }

  set aliases(a: readonly string[]) {
    this.aliasJson = a.length > 0 ? aliasText(a) : null;
  }

  private n(f: SessionField): number {
    return this.cols.num[this.i * SessionField.STRIDE + f]!;
  }

  get base(): string {
    return this.ownBase ?? baseOfKey(this.key!);
  }

  get jsonlBytes(): number {
    return this.n(SessionField.JsonlBytes);
  }

  get metaBytes(): number {
    return this.n(SessionField.MetaBytes);
  }

  get messages(): number | null {
    return nullable(this.n(SessionField.Messages));
  }

  get lastActivityMs(): number | null {
    return nullable(this.n(SessionField.LastActivity));
  }

  /**
   * A new list of new objects on each read: most sessions have one conversation, kept as a row
   * number without a list of its own.
   */
  get conversations(): ConversationStat[] {
    const c = this.convs;
    const rows = this.at.conversations;
    return c === -1 ? NO_CONVERSATIONS : typeof c === 'number' ? [rows.get(c)] : c.map((n) => rows.get(n));
  }

  get times(): SessionTimes {
    const c = this.cols;
    let seahorseLast: string | null = null;
    for (const x of this.conversations)
      if (x.lastMessageAt && (seahorseLast === null || x.lastMessageAt > seahorseLast)) seahorseLast = x.lastMessageAt;
    return {
      meta_updated_at: c.time(this.i, 0),
      meta_created_at: c.time(this.i, 1),
      jsonl_last_line: c.time(this.i, 2),
      seahorse_last_message: seahorseLast,
    };
  }

  get id(): string {
    return `${this.dir}/${this.base}`;
  }

  get files(): { jsonl: FileFacts | null; meta: FileFacts | null } {
    const base = this.base;
    const jm = this.n(SessionField.JsonlMtime);
    const mm = this.n(SessionField.MetaMtime);
    const file = (suffix: string, bytes: number, mtimeMs: number, ino: number): FileFacts | null =>
      Number.isNaN(mtimeMs) ? null : { path: join(this.dir, `${base}${suffix}`), bytes, mtimeMs, ino };
    return {
      jsonl: file('.jsonl', this.jsonlBytes, jm, this.n(SessionField.JsonlIno)),
      meta: file('.meta.json', this.metaBytes, mm, this.n(SessionField.MetaIno)),
    };
  }

  /** Row `row` of the inventory's conversations is one of its own, last active at `lastMs`. */
  addConversation(row: number, lastMs: number | null): void {
    const had = this.convs;
    if (had === -1) this.convs = row;
    else if (Array.isArray(had)) had.push(row);
    else this.convs = [had, row];
    const last = newest(this.lastActivityMs, lastMs);
    this.cols.num[this.i * SessionField.STRIDE + SessionField.LastActivity] = last ?? NaN;
  }
}

export interface OrphanConversation extends ConversationStat {
  lastActivityMs: number | null;
}

export interface SeahorseSummary {
  path: string;
  state: 'absent' | 'open' | 'error';
  error: string | null;
  errorKind: string | null;
  bytes: DbFileBytes;
  conversations: number;
  messages: number;
}

export interface Inventory {
  home: PicoClawHome;
  sessions: SessionRecord[];
  orphanJsonl: { agent: string; file: FileFacts }[];
  orphanConversations: OrphanConversation[];
  ignored: { dir: string; entry: IgnoredEntry }[];
  storeErrors: { dir: string; error: string }[];
  seahorse: SeahorseSummary;
}

function newest(...ms: (number | null)[]): number | null {
  let best: number | null = null;
  for (const m of ms) if (m !== null && (best === null || m > best)) best = m;
  return best;
}

function agentOf(s: StoredSession, agents: string[]): string {
  const scoped = s.parsedMeta?.agentIdInScope;
  if (scoped && agents.includes(scoped)) return scoped;
  return agents[0]!;
}

/**
 * Drop every session's aliases once nothing reads them (they group the sessions and tie them to
 * seahorse conversations, which the plan has done): on a home of scoped sessions, four aliases a
 * session are the largest part of the inventory after the plan. They read as none afterwards.
 */
export function releaseAliases(inv: Inventory): void {
  for (const s of inv.sessions) s.aliases = NO_STRINGS;
}

/**
 * Ties each seahorse conversation to the sessions whose key or aliases name it, or keeps it as an
 * orphan. Its own function: the claims and the row callback die with its frame, before the
 * inventory's closing collection.
 */
function mapConversations(
  db: Database,
  sessions: StoredRecord[],
  agentIds: string[],
  convs: ConversationColumns,
  seahorse: SeahorseSummary,
  orphanConversations: OrphanConversation[],
): void {
  const claims = new KeyClaims<StoredRecord>(sessions, agentIds);
  // Row by row: a row is kept in columns for its sessions or copied as an orphan, so the rows
  // are never all held at once next to the claims.
  const take = (c: ConversationStat) => {
    seahorse.conversations++;
    seahorse.messages += c.messages;
    // A row without a key (not PicoClaw's) is no session's.
    const owners = typeof c.key === 'string' ? claims.owners(c.key) : [];
    const lastMs = usable(parseSqliteTime(c.lastMessageAt));
    if (owners.length === 0) {
      // A bare row (no message, no summary) is what an interrupted delete leaves behind, or a
      // turn that never stored anything: its insert time is the only activity it has.
      const bare = c.messages === 0 && c.summaries === 0;
      orphanConversations.push({
        ...c,
        lastActivityMs: lastMs ?? (bare ? usable(parseSqliteTime(c.createdAt)) : null),
      });
      return;
    }
    // One stored copy for all its sessions; its key is the session's own string when they are equal.
    const first = owners[0]!;
    const kept = convs.add(c, first.key === c.key ? first.key : c.key);
    for (const s of owners) s.addConversation(kept, lastMs);
  };
  eachConversation(db, take);
}

export interface InventoryOptions {
  /** Skip seahorse.db (e.g. when only the JSONL side is wanted). */
  skipSeahorse?: boolean;
  /**
   * The caller never reads the sessions' aliases (the text `sessions` table): they serve the
   * seahorse mapping, and are let go before the closing collection (half the sessions of a
   * scoped home list four or so, about 140 bytes each).
   */
  withoutAliases?: boolean;
  /** The gateway is down and nothing may be written beside seahorse.db (seahorseReadMode's `gatewayDown`). */
  quietSeahorse?: boolean;
}

export function buildInventory(home: PicoClawHome, opts: InventoryOptions = {}): Inventory {
  const agentIds = home.agents.map((a) => a.id);
  const sessions: StoredRecord[] = [];
  const conversations = new ConversationColumns();
  let cols = new Columns();
  let places = new Map<string, Place>();
  const record = (s: StoredSession, agent: string, dir: string): StoredRecord => {
    if (cols.size === BLOCK) {
      cols = new Columns();
      places = new Map();
    }
    let at = places.get(agent);
    if (at === undefined || at.dir !== dir) places.set(agent, (at = { agent, dir, cols, conversations }));
    return new StoredRecord(at, s, storeTimes(s));
  };
  const orphanJsonl: Inventory['orphanJsonl'] = [];
  const ignored: Inventory['ignored'] = [];
  const storeErrors: Inventory['storeErrors'] = [];

  for (const { dir, agents } of home.sessionsDirs) {
    const scan = scanStore(dir, (s) => sessions.push(record(s, agentOf(s, agents), s.dir)));
    if (scan.error) storeErrors.push({ dir, error: scan.error });
    for (const e of scan.ignored) ignored.push({ dir, entry: e });
    for (const f of scan.orphanJsonl) orphanJsonl.push({ agent: agents[0]!, file: f });
    // This folder's listing is dead now: the next folder, then the seahorse rows, take its place.
    releaseGarbage();
  }

  const bytes = dbFileBytes(home.seahorsePath);
  const seahorse: SeahorseSummary = {
    path: home.seahorsePath,
    state: 'absent',
    error: null,
    errorKind: null,
    bytes,
    conversations: 0,
    messages: 0,
  };
  const orphanConversations: OrphanConversation[] = [];
  if (!opts.skipSeahorse) {
    const opened = openSeahorseRead(home.seahorsePath, { quiet: opts.quietSeahorse });
    if (opened.state === 'error') {
      seahorse.state = 'error';
      seahorse.error = opened.reason;
      seahorse.errorKind = opened.kind;
    } else if (opened.state === 'open') {
      seahorse.state = 'open';
      try {
        mapConversations(opened.db, sessions, agentIds, conversations, seahorse, orphanConversations);
      } finally {
        opened.db.close();
      }
    }
  }
  if (opts.withoutAliases) for (const s of sessions) s.aliases = NO_STRINGS;
  // The rows not kept and the key index are dead: what follows (a plan, a report) starts clean.
  releaseGarbage();
  return { home, sessions, orphanJsonl, orphanConversations, ignored, storeErrors, seahorse };
}
