import { join } from 'node:path';
import { releaseGarbage } from '../io/heap.js';
import type { PicoClawHome } from './home.js';
import {
  dbFileBytes,
  isMainAlias,
  openSeahorseRead,
  eachConversation,
  type ConversationStat,
  type DbFileBytes,
} from './seahorse.js';
import {
  scanStore,
  storeTimes,
  type FileFacts,
  type IgnoredEntry,
  type Issue,
  type StoredSession,
} from './sessions.js';
import { parseSqliteTime, usable } from './time.js';

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

/** The numbers of one record, at `i * STRIDE` in the inventory's one Float64Array (NaN: null). */
const enum F {
  JsonlBytes,
  MetaBytes,
  Messages,
  LastActivity,
  JsonlMtime,
  JsonlIno,
  MetaMtime,
  MetaIno,
  /** The three written times (meta updated_at, created_at, the last line's created_at): see packTime. */
  Time0,
  STRIDE = Time0 + 3,
}
/** Per written time: its fraction as an integer, its digits (NO_TIME: null), its zone (Z_ZONE: `Z`). */
const NO_TIME = 255;
const STRING_TIME = 254;
const Z_ZONE = -32768;
const TIME_RE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;

/** Records per block of columns: a block is never copied or grown, so at most one is part-empty. */
const BLOCK = 1024;

/**
 * The numbers and written times of up to BLOCK records, in typed arrays: a number kept as a
 * field of a record is a boxed double of its own (16 bytes and a pointer), and a written time
 * is a 56-byte string, where here the three times of a session take 45 bytes together. A time is
 * kept as numbers only when they give back the very string (checked as it is stored); any other
 * shape keeps its string. Blocks of a fixed size, not one array grown by doubling: doubling leaves
 * up to half of the last array empty and copies every record on each growth.
 */
class Columns {
  readonly num = new Float64Array(BLOCK * F.STRIDE);
  readonly frac = new Uint32Array(BLOCK * 3);
  readonly digits = new Uint8Array(BLOCK * 3);
  readonly zone = new Int16Array(BLOCK * 3);
  /** Times kept as written, by `i * 3 + k`. */
  readonly strings = new Map<number, string>();
  size = 0;

  /** The next record's index in this block, or -1 when the block is full. */
  add(): number {
    return this.size === BLOCK ? -1 : this.size++;
  }

  setTime(i: number, k: number, text: string | null): void {
    const at = i * 3 + k;
    this.digits[at] = NO_TIME;
    if (text === null) return;
    const m = TIME_RE.exec(text);
    // Only a time `time()` writes back exactly: a real calendar date and clock time (Date.parse would
    // roll 02-30 over to March), and a zone that is Z or +/-HH:MM with MM under 60, never -00:00.
    const z = m ? m[3]! : '';
    if (m && realWallTime(m[1]!) && (z === 'Z' || (z.charCodeAt(4) < 0x36 && z !== '-00:00'))) {
      this.num[i * F.STRIDE + F.Time0 + k] = Date.parse(`${m[1]}Z`) / 1000;
      this.frac[at] = m[2] ? Number(m[2]) : 0;
      this.digits[at] = m[2] ? m[2].length : 0;
      const minutes = Number(z.slice(1, 3)) * 60 + Number(z.slice(4, 6));
      this.zone[at] = z === 'Z' ? Z_ZONE : (z[0] === '-' ? -1 : 1) * minutes;
      return;
    }
    this.digits[at] = STRING_TIME;
    this.strings.set(at, text);
  }

  time(i: number, k: number): string | null {
    const at = i * 3 + k;
    const d = this.digits[at]!;
    if (d === NO_TIME) return null;
    if (d === STRING_TIME) return this.strings.get(at)!;
    const wall = new Date(this.num[i * F.STRIDE + F.Time0 + k]! * 1000).toISOString().slice(0, 19);
    const zone = this.zone[at]!;
    const abs = Math.abs(zone);
    const two = (x: number) => String(x).padStart(2, '0');
    const zoneText = zone === Z_ZONE ? 'Z' : `${zone < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
    return `${wall}${d > 0 ? `.${String(this.frac[at]).padStart(d, '0')}` : ''}${zoneText}`;
  }
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether `YYYY-MM-DDTHH:MM:SS` names a moment that exists (what toISOString gives back unchanged). */
function realWallTime(w: string): boolean {
  const y = Number(w.slice(0, 4));
  const mo = Number(w.slice(5, 7));
  const d = Number(w.slice(8, 10));
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (mo < 1 || mo > 12 || d < 1 || d > DAYS[mo - 1]! + (mo === 2 && leap ? 1 : 0)) return false;
  return Number(w.slice(11, 13)) < 24 && Number(w.slice(14, 16)) < 60 && Number(w.slice(17, 19)) < 60;
}

const nullable = (x: number): number | null => (Number.isNaN(x) ? null : x);
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
  agent: string;
  dir: string;
  key: string | null;
  aliases: string[];
  conversations: ConversationStat[];
  issues: Issue[];
  private seahorseLast: string | null = null;
  /** The base name when it is not derived from the key. */
  private readonly ownBase: string | null;
  private readonly i: number;
  private readonly cols: Columns;

  constructor(cols: Columns, s: StoredSession, agent: string, t: ReturnType<typeof storeTimes>) {
    this.cols = cols;
    this.i = cols.add();
    if (this.i < 0) throw new Error('a full block of columns');
    this.agent = agent;
    this.dir = s.dir;
    // Most keys are their own file base (sk_v1_...), or the base is the key with ':' written '_'
    // (agent:cron-...): keep one string for both.
    this.key = s.key === s.base ? s.base : s.key;
    this.ownBase = this.key !== null && baseOfKey(this.key) === s.base ? null : s.key === s.base ? this.key : s.base;
    const aliases = s.parsedMeta?.aliases;
    this.aliases = aliases && aliases.length > 0 ? aliases : NO_STRINGS;
    this.conversations = NO_CONVERSATIONS;
    this.issues = s.issues.length > 0 ? [...s.issues] : (NO_STRINGS as Issue[]);
    const n = cols.num;
    const o = this.i * F.STRIDE;
    n[o + F.JsonlBytes] = s.jsonl?.bytes ?? 0;
    n[o + F.MetaBytes] = s.meta?.bytes ?? 0;
    n[o + F.Messages] = s.parsedMeta?.count ?? NaN;
    n[o + F.LastActivity] = newest(t.updatedAt, t.createdAt, t.lastLine) ?? NaN;
    // NaN: the file is absent (an mtime is never NaN).
    n[o + F.JsonlMtime] = s.jsonl ? s.jsonl.mtimeMs : NaN;
    n[o + F.JsonlIno] = s.jsonl?.ino ?? 0;
    n[o + F.MetaMtime] = s.meta ? s.meta.mtimeMs : NaN;
    n[o + F.MetaIno] = s.meta?.ino ?? 0;
    cols.setTime(this.i, 0, s.parsedMeta?.updatedAt ?? null);
    cols.setTime(this.i, 1, s.parsedMeta?.createdAt ?? null);
    cols.setTime(this.i, 2, s.lastLineCreatedAt);
  }

  private n(f: F): number {
    return this.cols.num[this.i * F.STRIDE + f]!;
  }

  get base(): string {
    return this.ownBase ?? baseOfKey(this.key!);
  }

  get jsonlBytes(): number {
    return this.n(F.JsonlBytes);
  }

  get metaBytes(): number {
    return this.n(F.MetaBytes);
  }

  get messages(): number | null {
    return nullable(this.n(F.Messages));
  }

  get lastActivityMs(): number | null {
    return nullable(this.n(F.LastActivity));
  }

  get times(): SessionTimes {
    const c = this.cols;
    return {
      meta_updated_at: c.time(this.i, 0),
      meta_created_at: c.time(this.i, 1),
      jsonl_last_line: c.time(this.i, 2),
      seahorse_last_message: this.seahorseLast,
    };
  }

  get id(): string {
    return `${this.dir}/${this.base}`;
  }

  get files(): { jsonl: FileFacts | null; meta: FileFacts | null } {
    const base = this.base;
    const jm = this.n(F.JsonlMtime);
    const mm = this.n(F.MetaMtime);
    const file = (suffix: string, bytes: number, mtimeMs: number, ino: number): FileFacts | null =>
      Number.isNaN(mtimeMs) ? null : { path: join(this.dir, `${base}${suffix}`), bytes, mtimeMs, ino };
    return {
      jsonl: file('.jsonl', this.jsonlBytes, jm, this.n(F.JsonlIno)),
      meta: file('.meta.json', this.metaBytes, mm, this.n(F.MetaIno)),
    };
  }

  addConversation(c: ConversationStat, lastMs: number | null): void {
    // The row's key is a copy of this session's key: keep one string.
    if (c.key === this.key && this.key !== null) c.key = this.key;
    if (this.conversations === NO_CONVERSATIONS) this.conversations = [c];
    else this.conversations.push(c);
    if (c.lastMessageAt && (this.seahorseLast === null || c.lastMessageAt > this.seahorseLast))
      this.seahorseLast = c.lastMessageAt;
    const last = newest(this.lastActivityMs, lastMs);
    this.cols.num[this.i * F.STRIDE + F.LastActivity] = last ?? NaN;
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

/** The keys that tie a session to seahorse conversations and to its alias group. */
export function groupKeys(key: string | null, aliases: readonly string[], agentIds: readonly string[]): string[] {
  const out: string[] = [];
  if (key) out.push(key);
  for (const a of aliases) if (a !== key && !isMainAlias(a, agentIds)) out.push(a);
  return out;
}

/**
 * Drop every session's aliases once nothing reads them (they group the sessions and tie them to
 * seahorse conversations, which the plan has done): on a home of scoped sessions, four aliases a
 * session are the largest part of the inventory after the plan. They read as none afterwards.
 */
export function releaseAliases(inv: Inventory): void {
  for (const s of inv.sessions) s.aliases = NO_STRINGS;
}

export interface InventoryOptions {
  /** Skip seahorse.db (e.g. when only the JSONL side is wanted). */
  skipSeahorse?: boolean;
}

export function buildInventory(home: PicoClawHome, opts: InventoryOptions = {}): Inventory {
  const agentIds = home.agents.map((a) => a.id);
  const sessions: StoredRecord[] = [];
  let cols = new Columns();
  const record = (s: StoredSession, agent: string): StoredRecord => {
    if (cols.size === BLOCK) cols = new Columns();
    return new StoredRecord(cols, s, agent, storeTimes(s));
  };
  const orphanJsonl: Inventory['orphanJsonl'] = [];
  const ignored: Inventory['ignored'] = [];
  const storeErrors: Inventory['storeErrors'] = [];

  for (const { dir, agents } of home.sessionsDirs) {
    const scan = scanStore(dir, (s) => sessions.push(record(s, agentOf(s, agents))));
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
    const opened = openSeahorseRead(home.seahorsePath);
    if (opened.state === 'error') {
      seahorse.state = 'error';
      seahorse.error = opened.reason;
      seahorse.errorKind = opened.kind;
    } else if (opened.state === 'open') {
      seahorse.state = 'open';
      // A key's one session, or a list only for a key several sessions share: an array per key
      // would be most of this index on a large home.
      const byKey = new Map<string, StoredRecord | StoredRecord[]>();
      for (const s of sessions) {
        for (const k of groupKeys(s.key, s.aliases, agentIds)) {
          const had = byKey.get(k);
          if (had === undefined) byKey.set(k, s);
          else if (Array.isArray(had)) had.push(s);
          else byKey.set(k, [had, s]);
        }
      }
      // Row by row: a row is kept by its sessions (with their key string) or copied as an orphan,
      // so the rows are never all held at once next to the index.
      const take = (c: ConversationStat) => {
        seahorse.conversations++;
        seahorse.messages += c.messages;
        const owners = byKey.get(c.key);
        const lastMs = usable(parseSqliteTime(c.lastMessageAt));
        if (!owners) {
          // A bare row (no message, no summary) is what an interrupted delete leaves behind, or a
          // turn that never stored anything: its insert time is the only activity it has.
          const bare = c.messages === 0 && c.summaries === 0;
          orphanConversations.push({
            ...c,
            lastActivityMs: lastMs ?? (bare ? usable(parseSqliteTime(c.createdAt)) : null),
          });
          return;
        }
        if (Array.isArray(owners)) for (const s of owners) s.addConversation(c, lastMs);
        else owners.addConversation(c, lastMs);
      };
      try {
        eachConversation(opened.db, take);
      } finally {
        opened.db.close();
      }
    }
  }
  // The rows not kept and the key index are dead: what follows (a plan, a report) starts clean.
  releaseGarbage();
  return { home, sessions, orphanJsonl, orphanConversations, ignored, storeErrors, seahorse };
}
