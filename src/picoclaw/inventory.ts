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
  const sessions: SessionRecord[] = [];
  const orphanJsonl: Inventory['orphanJsonl'] = [];
  const ignored: Inventory['ignored'] = [];
  const storeErrors: Inventory['storeErrors'] = [];

  for (const { dir, agents } of home.sessionsDirs) {
    const scan = scanStore(dir);
    if (scan.error) storeErrors.push({ dir, error: scan.error });
    for (const e of scan.ignored) ignored.push({ dir, entry: e });
    for (const f of scan.orphanJsonl) orphanJsonl.push({ agent: agents[0]!, file: f });
    for (const s of scan.sessions) {
      const t = storeTimes(s);
      sessions.push({
        id: `${dir}/${s.base}`,
        agent: agentOf(s, agents),
        dir,
        base: s.base,
        key: s.key,
        aliases: s.parsedMeta?.aliases ?? [],
        jsonlBytes: s.jsonl?.bytes ?? 0,
        metaBytes: s.meta?.bytes ?? 0,
        messages: s.parsedMeta?.count ?? null,
        times: {
          meta_updated_at: s.parsedMeta?.updatedAt ?? null,
          meta_created_at: s.parsedMeta?.createdAt ?? null,
          jsonl_last_line: s.lastLineCreatedAt,
          seahorse_last_message: null,
        },
        lastActivityMs: newest(t.updatedAt, t.createdAt, t.lastLine),
        conversations: [],
        issues: [...s.issues],
        files: { jsonl: s.jsonl, meta: s.meta },
      });
    }
  }

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
      const byKey = new Map<string, SessionRecord[]>();
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
          s.conversations.push(c);
          if (c.lastMessageAt && (s.times.seahorse_last_message === null || c.lastMessageAt > s.times.seahorse_last_message)) {
            s.times.seahorse_last_message = c.lastMessageAt;
          }
          s.lastActivityMs = newest(s.lastActivityMs, lastMs);
        }
      }
    }
  }
  return { home, sessions, orphanJsonl, orphanConversations, ignored, storeErrors, seahorse };
}
