import { lstatSync, opendirSync, type Dir, type Stats } from 'node:fs';
import { readSmallFile } from '../io/smallfile.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { dbFileBytes, openSeahorseRead } from '../picoclaw/seahorse.js';
import { classifyEntry, JSONL_SUFFIX, META_SUFFIX, parseMeta } from '../picoclaw/inventory/sessions.js';

/**
 * The sessions on the board now, as `startup` shows them beside the restarts: per agent a
 * count and the bytes of `.jsonl` + `.meta.json`, and seahorse.db's size. The same figures
 * the inventory's per-agent totals give (a session is a regular `*.meta.json`, its `.jsonl`
 * counted when that is a regular file, its agent the meta's `scope.agent_id` when the folder
 * is shared), read without the inventory: one streamed listing per folder and an lstat per
 * file, no transcript tail, no seahorse row, and a meta opened only in a folder that several
 * agents share (the only place its agent is not the folder's).
 */
export interface SessionsNow {
  sessions: number;
  agents: number;
  bytes: number;
  /** Only the default agent's sessions are bootstrapped at start (docs/picoclaw.md#the-startup-bootstrap). */
  bootstrapped: { agent: string; sessions: number; bytes: number };
  seahorse_bytes: number | null;
}

export interface SessionsNowOptions {
  /** Reads one `.meta.json` (tests count the reads). */
  readMeta?: (path: string) => Buffer;
}

const readMetaFile = (path: string): Buffer => readSmallFile(path, 'meta', { noFollow: true });

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/**
 * One sessions folder's sessions and bytes per agent, or null when it cannot be listed: the
 * inventory then has no session of it either (a missing folder, or an error it reports).
 */
function countFolder(
  dir: string,
  agents: string[],
  readMeta: (path: string) => Buffer,
): Map<string, { sessions: number; bytes: number }> | null {
  const out = new Map<string, { sessions: number; bytes: number }>();
  for (const a of agents) out.set(a, { sessions: 0, bytes: 0 });
  let d: Dir;
  try {
    // Streamed: a folder of 20,000 sessions is never a list of names in memory.
    d = opendirSync(dir, { bufferSize: 256 });
  } catch {
    return null;
  }
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) {
      const name = e.name;
      if (classifyEntry(name) !== 'meta') continue;
      const path = `${dir}/${name}`;
      const st = lstatOrNull(path);
      if (st === null || !st.isFile()) continue;
      const base = name.slice(0, -META_SUFFIX.length);
      const jsonl = lstatOrNull(`${dir}/${base}${JSONL_SUFFIX}`);
      let agent = agents[0]!;
      if (agents.length > 1) {
        try {
          const scoped = parseMeta(readMeta(path)).meta?.agentIdInScope;
          if (scoped && agents.includes(scoped)) agent = scoped;
        } catch {
          // An unreadable meta is still a session, of the folder's first agent (as in the inventory).
        }
      }
      const t = out.get(agent)!;
      t.sessions++;
      t.bytes += st.size + (jsonl !== null && jsonl.isFile() ? jsonl.size : 0);
    }
  } catch {
    return null;
  } finally {
    d.closeSync();
  }
  return out;
}

export function sessionsNow(home: PicoClawHome, opts: SessionsNowOptions = {}): SessionsNow {
  const readMeta = opts.readMeta ?? readMetaFile;
  const by = new Map<string, { agent: string; sessions: number; bytes: number }>();
  for (const a of home.agents) by.set(a.id, { agent: a.id, sessions: 0, bytes: 0 });
  for (const { dir, agents } of home.sessionsDirs) {
    const counted = countFolder(dir, agents, readMeta);
    if (counted === null) continue;
    for (const [agent, c] of counted) {
      const t = by.get(agent)!;
      t.sessions += c.sessions;
      t.bytes += c.bytes;
    }
  }
  const totals = [...by.values()];
  const def = totals.find((t) => t.agent === home.defaultAgent) ?? totals[0]!;
  // The size as the inventory reports it: only for a database it can open (a schema check, no rows read).
  const dbBytes = dbFileBytes(home.seahorsePath);
  const opened = openSeahorseRead(home.seahorsePath);
  if (opened.state === 'open') opened.db.close();
  return {
    sessions: totals.reduce((n, t) => n + t.sessions, 0),
    agents: totals.length,
    bytes: totals.reduce((n, t) => n + t.bytes, 0),
    bootstrapped: { agent: def.agent, sessions: def.sessions, bytes: def.bytes },
    seahorse_bytes: opened.state === 'open' ? dbBytes.total : null,
  };
}
