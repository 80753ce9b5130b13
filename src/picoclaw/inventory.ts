import { join } from 'node:path';
import { releaseGarbage } from '../io/heap.js';
import type { PicoClawHome } from './home.js';
import { dbFileBytes, isMainAlias, openSeahorseRead, readConversations, type ConversationStat, type DbFileBytes } from './seahorse.js';
import { scanStore, storeTimes, type FileFacts, type IgnoredEntry, type Issue, type StoredSession } from './sessions.js';
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

/**
 * A SessionRecord as the inventory keeps it: the file paths and `id` are derived from the
 * folder and base name when asked for (prototype getters), not stored per session, and a
 * session without aliases, issues or conversations shares one empty list. On a
 * 20,000-session home this is what keeps the inventory's memory flat.
 */
class StoredRecord implements SessionRecord {
  agent: string;
  dir: string;
  base: string;
  key: string | null;
  aliases: string[];
  jsonlBytes: number;
  metaBytes: number;
  messages: number | null;
  lastActivityMs: number | null;
  conversations: ConversationStat[];
  issues: Issue[];
  // Plain fields, not objects or arrays per session: what an object header costs, times 20,000.
  private readonly metaUpdatedAt: string | null;
  private readonly metaCreatedAt: string | null;
  private readonly jsonlLastLine: string | null;
  private seahorseLast: string | null = null;
  private readonly jsonlMtimeMs: number;
  private readonly jsonlIno: number;
  private readonly metaMtimeMs: number;
  private readonly metaIno: number;
  private readonly present: number;

  constructor(s: StoredSession, agent: string, t: ReturnType<typeof storeTimes>) {
    this.agent = agent;
    this.dir = s.dir;
    this.base = s.base;
    // Most keys are their own file base (sk_v1_...): keep one string for both.
    this.key = s.key === s.base ? s.base : s.key;
    const aliases = s.parsedMeta?.aliases;
    this.aliases = aliases && aliases.length > 0 ? aliases : NO_STRINGS;
    this.jsonlBytes = s.jsonl?.bytes ?? 0;
    this.metaBytes = s.meta?.bytes ?? 0;
    this.messages = s.parsedMeta?.count ?? null;
    this.metaUpdatedAt = s.parsedMeta?.updatedAt ?? null;
    this.metaCreatedAt = s.parsedMeta?.createdAt ?? null;
    this.jsonlLastLine = s.lastLineCreatedAt;
    this.lastActivityMs = newest(t.updatedAt, t.createdAt, t.lastLine);
    this.conversations = NO_CONVERSATIONS;
    this.issues = s.issues.length > 0 ? [...s.issues] : (NO_STRINGS as Issue[]);
    this.jsonlMtimeMs = s.jsonl?.mtimeMs ?? 0;
    this.jsonlIno = s.jsonl?.ino ?? 0;
    this.metaMtimeMs = s.meta?.mtimeMs ?? 0;
    this.metaIno = s.meta?.ino ?? 0;
    this.present = (s.jsonl ? 1 : 0) | (s.meta ? 2 : 0);
  }

  get times(): SessionTimes {
    return { meta_updated_at: this.metaUpdatedAt, meta_created_at: this.metaCreatedAt, jsonl_last_line: this.jsonlLastLine, seahorse_last_message: this.seahorseLast };
  }

  get id(): string {
    return `${this.dir}/${this.base}`;
  }

  get files(): { jsonl: FileFacts | null; meta: FileFacts | null } {
    return {
      jsonl: this.present & 1 ? { path: join(this.dir, `${this.base}.jsonl`), bytes: this.jsonlBytes, mtimeMs: this.jsonlMtimeMs, ino: this.jsonlIno } : null,
      meta: this.present & 2 ? { path: join(this.dir, `${this.base}.meta.json`), bytes: this.metaBytes, mtimeMs: this.metaMtimeMs, ino: this.metaIno } : null,
    };
  }

  addConversation(c: ConversationStat, lastMs: number | null): void {
    // The row's key is a copy of this session's key: keep one string.
    if (c.key === this.key && this.key !== null) c.key = this.key;
    if (this.conversations === NO_CONVERSATIONS) this.conversations = [c];
    else this.conversations.push(c);
    if (c.lastMessageAt && (this.seahorseLast === null || c.lastMessageAt > this.seahorseLast)) this.seahorseLast = c.lastMessageAt;
    this.lastActivityMs = newest(this.lastActivityMs, lastMs);
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

export interface InventoryOptions {
  /** Skip seahorse.db (e.g. when only the JSONL side is wanted). */
  skipSeahorse?: boolean;
}

export function buildInventory(home: PicoClawHome, opts: InventoryOptions = {}): Inventory {
  const agentIds = home.agents.map((a) => a.id);
  const sessions: StoredRecord[] = [];
  const orphanJsonl: Inventory['orphanJsonl'] = [];
  const ignored: Inventory['ignored'] = [];
  const storeErrors: Inventory['storeErrors'] = [];

  for (const { dir, agents } of home.sessionsDirs) {
    const scan = scanStore(dir, (s) => sessions.push(new StoredRecord(s, agentOf(s, agents), storeTimes(s))));
    if (scan.error) storeErrors.push({ dir, error: scan.error });
    for (const e of scan.ignored) ignored.push({ dir, entry: e });
    for (const f of scan.orphanJsonl) orphanJsonl.push({ agent: agents[0]!, file: f });
  }
  // The scan's listings of every folder are dead now; the seahorse rows take their place.
  releaseGarbage();

  const bytes = dbFileBytes(home.seahorsePath);
  const seahorse: SeahorseSummary = { path: home.seahorsePath, state: 'absent', error: null, errorKind: null, bytes, conversations: 0, messages: 0 };
  const orphanConversations: OrphanConversation[] = [];
  if (!opts.skipSeahorse) {
    const opened = openSeahorseRead(home.seahorsePath);
    if (opened.state === 'error') {
      seahorse.state = 'error';
      seahorse.error = opened.reason;
      seahorse.errorKind = opened.kind;
    } else if (opened.state === 'open') {
      seahorse.state = 'open';
      let convs: ConversationStat[];
      try {
        convs = readConversations(opened.db);
      } finally {
        opened.db.close();
      }
      seahorse.conversations = convs.length;
      const byKey = new Map<string, StoredRecord[]>();
      for (const s of sessions) {
        for (const k of groupKeys(s.key, s.aliases, agentIds)) {
          const list = byKey.get(k);
          if (list) list.push(s);
          else byKey.set(k, [s]);
        }
      }
      for (const c of convs) {
        seahorse.messages += c.messages;
        const owners = byKey.get(c.key);
        const lastMs = usable(parseSqliteTime(c.lastMessageAt));
        if (!owners) {
          // A bare row (no message, no summary) is what an interrupted delete leaves behind, or a
          // turn that never stored anything: its insert time is the only activity it has.
          const bare = c.messages === 0 && c.summaries === 0;
          orphanConversations.push({ ...c, lastActivityMs: lastMs ?? (bare ? usable(parseSqliteTime(c.createdAt)) : null) });
          continue;
        }
        for (const s of owners) {
          s.addConversation(c, lastMs);
        }
      }
    }
  }
  // The rows not kept and the key index are dead: what follows (a plan, a report) starts clean.
  releaseGarbage();
  return { home, sessions, orphanJsonl, orphanConversations, ignored, storeErrors, seahorse };
}
