import { realpathSync } from 'node:fs';
import { errorMessage } from '../../src/errors.js';
import { resolveStateDir } from '../../src/io/statedir.js';
import { activeHolds, holdDetail, type Hold } from '../../src/state/holds.js';
import { homePins, pinDetail, type Pin } from '../../src/state/pins.js';
import { buildInventory, type Inventory, type SessionRecord } from '../../src/picoclaw/inventory/inventory.js';
import { systemClock, type Clock } from '../../src/io/clock.js';
import { issueText } from '../../src/picoclaw/inventory/issues.js';
import { cronJobsOf } from '../../src/prune/plan/cron.js';
import { collate } from '../../src/io/collate.js';
import { homeFromOpts } from '../../src/commands/common.js';
import { cronJobsTable } from '../../src/commands/render-guard-keys.js';
import { LazyList } from '../../src/commands/json-stream.js';
import {
  fitTable,
  formatAge,
  formatBytes,
  isoOrDash,
  LayoutWriter,
  layoutToString,
  outputWidth,
  escapeControl,
  shortKey,
} from '../../src/commands/format.js';
import { printJson } from '../../src/commands/json-stream.js';

export interface AgentTotals {
  agent: string;
  sessions: number;
  jsonl_bytes: number;
  meta_bytes: number;
  messages: number;
}

export function agentTotals(inv: Inventory): AgentTotals[] {
  const by = new Map<string, AgentTotals>();
  for (const a of inv.home.agents)
    by.set(a.id, { agent: a.id, sessions: 0, jsonl_bytes: 0, meta_bytes: 0, messages: 0 });
  for (const s of inv.sessions) {
    const t = by.get(s.agent)!;
    t.sessions++;
    t.jsonl_bytes += s.jsonlBytes;
    t.meta_bytes += s.metaBytes;
    t.messages += s.messages ?? 0;
  }
  return [...by.values()];
}

/**
 * Sort newest first; undated last; ties by key (then folder) so output is stable, in the default
 * locale's collation (`collate`: localeCompare's order, without its collator for ASCII keys).
 */
export function byActivity(a: SessionRecord, b: SessionRecord): number {
  const x = a.lastActivityMs ?? -Infinity;
  const y = b.lastActivityMs ?? -Infinity;
  if (x !== y) return y - x;
  return collate(a.key ?? '', b.key ?? '') || collate(a.id, b.id);
}

/** Pins by agent and key, for one look-up a session. */
type PinIndex = Map<string, Pin>;
const pinIndex = (pins: Pin[]): PinIndex => new Map(pins.map((p) => [`${p.agent}\0${p.key}`, p]));
function pinOf(pins: PinIndex, s: SessionRecord): { pinned_at: string; note: string | null } | null {
  const p = pins.size > 0 && s.key !== null ? pins.get(`${s.agent}\0${s.key}`) : undefined;
  return p ? { pinned_at: p.pinned_at, note: p.note } : null;
}

function sessionJson(s: SessionRecord, now: Date, holds: Hold[], pins: PinIndex) {
  return {
    agent: s.agent,
    key: s.key,
    file: s.base,
    dir: s.dir,
    last_activity: s.lastActivityMs === null ? null : new Date(s.lastActivityMs).toISOString(),
    age_seconds: s.lastActivityMs === null ? null : Math.round((now.getTime() - s.lastActivityMs) / 1000),
    messages: s.messages,
    jsonl_bytes: s.jsonlBytes,
    meta_bytes: s.metaBytes,
    timestamps: s.times,
    aliases: s.aliases,
    seahorse: s.conversations.map((c) => ({
      conversation_id: c.conversationId,
      key: c.key,
      messages: c.messages,
      summaries: c.summaries,
      last_message_at: c.lastMessageAt,
    })),
    issues: s.issues,
    hold: holdOf(holds, s),
    pin: pinOf(pins, s),
  };
}

function* lazyMap<T, U>(xs: readonly T[], f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

export function inventoryJson(inv: Inventory, now: Date, holds: Hold[] = [], pins: Pin[] = []) {
  const ix = pinIndex(pins);
  return inventoryDoc(inv, now, holds, pins, (sorted) => sorted.map((s) => sessionJson(s, now, holds, ix)));
}

/** The same document with its sessions made one at a time as they are written (printJson streams it). */
export function inventoryJsonLazy(inv: Inventory, now: Date, holds: Hold[] = [], pins: Pin[] = []) {
  const ix = pinIndex(pins);
  return inventoryDoc(
    inv,
    now,
    holds,
    pins,
    (sorted) => new LazyList(lazyMap(sorted, (s) => sessionJson(s, now, holds, ix))),
  );
}

function inventoryDoc<L>(inv: Inventory, now: Date, holds: Hold[], pins: Pin[], list: (sorted: SessionRecord[]) => L) {
  const sessions = [...inv.sessions].sort(byActivity);
  const present = new Set(inv.sessions.map((s) => `${s.agent}\0${s.key}`));
  return {
    home: inv.home.home,
    now: now.toISOString(),
    agents: inv.home.agents.map((a) => ({
      id: a.id,
      default: a.isDefault,
      workspace: a.workspace,
      sessions_dir: a.sessionsDir,
    })),
    context_manager: inv.home.contextManager,
    sessions: list(sessions),
    orphan_jsonl: inv.orphanJsonl.map((o) => ({ agent: o.agent, path: o.file.path, bytes: o.file.bytes })),
    orphan_conversations: inv.orphanConversations.map((c) => ({
      conversation_id: c.conversationId,
      key: c.key,
      messages: c.messages,
      summaries: c.summaries,
      last_activity: c.lastActivityMs === null ? null : new Date(c.lastActivityMs).toISOString(),
    })),
    ignored: inv.ignored.map((i) => ({ dir: i.dir, name: i.entry.name, why: i.entry.why })),
    store_errors: inv.storeErrors,
    seahorse: {
      path: inv.seahorse.path,
      state: inv.seahorse.state,
      error: inv.seahorse.error,
      db_bytes: inv.seahorse.bytes.db,
      wal_bytes: inv.seahorse.bytes.wal,
      total_bytes: inv.seahorse.bytes.total,
      conversations: inv.seahorse.conversations,
      messages: inv.seahorse.messages,
    },
    totals: {
      sessions: inv.sessions.length,
      undated: inv.sessions.filter((s) => s.lastActivityMs === null).length,
      with_issues: inv.sessions.filter((s) => s.issues.length > 0).length,
      jsonl_bytes: inv.sessions.reduce((n, s) => n + s.jsonlBytes, 0),
      messages: inv.sessions.reduce((n, s) => n + (s.messages ?? 0), 0),
      per_agent: agentTotals(inv),
    },
    cron_jobs: cronJobsOf(inv.sessions),
    /** This home's pins; `present` false: the session is gone (unpin KEY ends the pin). */
    pins: pins.map((p) => ({
      agent: p.agent,
      key: p.key,
      pinned_at: p.pinned_at,
      note: p.note,
      present: present.has(`${p.agent}\0${p.key}`),
    })),
  };
}

function holdOf(holds: Hold[], s: SessionRecord): { restored_at: string; until: string } | null {
  const h = holds.find((x) => x.agent === s.agent && x.key === s.key);
  return h ? { restored_at: h.restored_at, until: h.until } : null;
}

/** Restore holds and pins of this home, from the guard's state folder; a problem is a line of the output. */
function readHomeHolds(
  opts: Record<string, unknown>,
  home: string,
  nowMs: number,
): { holds: Hold[]; pins: Pin[]; problem: string | null } {
  const stateDir = resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined);
  const problems: string[] = [];
  let holds: Hold[] = [];
  let pins: Pin[] = [];
  try {
    holds = activeHolds(stateDir, realpathSync(home), nowMs);
  } catch (err) {
    problems.push(`restore holds not read: ${errorMessage(err)}`);
  }
  try {
    pins = homePins(stateDir, realpathSync(home));
  } catch (err) {
    problems.push(`pins not read: ${errorMessage(err)}`);
  }
  return { holds, pins, problem: problems.length > 0 ? problems.join('; ') : null };
}

/** `deps.clock`: the goldens (dev/goldens.ts) pass a frozen one; the CLI never does. */
export async function run(
  opts: Record<string, unknown>,
  _args: unknown[] = [],
  deps: { clock?: Clock } = {},
): Promise<number> {
  const home = homeFromOpts(opts);
  const now = (deps.clock ?? systemClock)();
  // The text table shows no aliases: they go once they have tied the seahorse rows to sessions.
  const inv = buildInventory(home, { withoutAliases: !opts.json });
  const { holds, pins, problem } = readHomeHolds(opts, home.home, now.getTime());
  if (opts.json) {
    printJson(inventoryJsonLazy(inv, now, holds, pins));
    return 0;
  }
  const w = new LayoutWriter(outputWidth(opts), (c) => process.stdout.write(c));
  writeSessions(w, inv, now, holds, problem, pins);
  w.flush();
  return 0;
}

/** The text report, fitted to `width` columns (Infinity: --wide). */
export function renderSessions(
  inv: Inventory,
  now: Date,
  width: number,
  holds: Hold[] = [],
  problem: string | null = null,
  pins: Pin[] = [],
): string {
  return layoutToString((w) => writeSessions(w, inv, now, holds, problem, pins), width);
}

/** The text report, written as it is made: the session table's rows are made twice (widths, then lines), never held. */
export function writeSessions(
  out: LayoutWriter,
  inv: Inventory,
  now: Date,
  holds: Hold[] = [],
  problem: string | null = null,
  pins: Pin[] = [],
): void {
  const home = inv.home;
  const width = out.width;
  const sorted = [...inv.sessions].sort(byActivity);
  const rows = () => lazyMap(sorted, (s) => row(s, s.conversations));
  // A session's conversations are made afresh on each read: read once a row.
  const row = (s: SessionRecord, convs: SessionRecord['conversations']) => [
    s.agent,
    s.key ?? '(unreadable meta)',
    isoOrDash(s.lastActivityMs),
    s.lastActivityMs === null ? 'undated' : formatAge(now.getTime() - s.lastActivityMs),
    s.messages === null ? '-' : String(s.messages),
    formatBytes(s.jsonlBytes + s.metaBytes),
    convs.length === 0 ? '-' : String(convs.reduce((n, c) => n + c.messages, 0)),
    s.issues.length > 0 ? '!' : '',
  ];
  out.push(`PicoClaw home: ${home.home}   context manager: ${home.contextManager}`);
  out.push('');
  if (sorted.length === 0) out.push('No sessions found.');
  else
    out.table(
      [
        { header: 'AGENT', fit: 'end', min: 8 },
        { header: 'KEY', fit: 'middle', min: 24 },
        // AGE says the same in fewer columns.
        { header: 'LAST ACTIVITY', drop: 1 },
        { header: 'AGE', align: 'right' },
        { header: 'MSGS', align: 'right' },
        { header: 'BYTES', align: 'right' },
        { header: 'IN SEAHORSE', short: 'SEAHORSE', align: 'right' },
        { header: '' },
      ],
      rows,
    );
  out.push('');
  out.push('Per agent:');
  out.push(
    ...fitTable(
      [
        { header: 'AGENT', fit: 'end', min: 8 },
        { header: 'SESSIONS', align: 'right' },
        { header: 'MESSAGES', align: 'right' },
        { header: 'BYTES', align: 'right' },
        { header: 'FOLDER', fit: 'middle', min: 20 },
      ],
      agentTotals(inv).map((t) => [
        t.agent,
        String(t.sessions),
        String(t.messages),
        formatBytes(t.jsonl_bytes + t.meta_bytes),
        home.agents.find((a) => a.id === t.agent)!.sessionsDir,
      ]),
      width,
    ),
  );
  out.push(...cronJobsTable(cronJobsOf(inv.sessions), now.getTime(), width));
  const jsonl = inv.sessions.reduce((n, x) => n + x.jsonlBytes, 0);
  const meta = inv.sessions.reduce((n, x) => n + x.metaBytes, 0);
  const orphanJsonl = inv.orphanJsonl.reduce((n, o) => n + o.file.bytes, 0);
  out.push(
    `Total: ${inv.sessions.length} sessions, ${formatBytes(jsonl + meta)} (.jsonl ` +
      `${formatBytes(jsonl)} + .meta.json ${formatBytes(meta)})` +
      (inv.orphanJsonl.length > 0 ? `; ${inv.orphanJsonl.length} orphan .jsonl ${formatBytes(orphanJsonl)}` : ''),
  );
  const sh = inv.seahorse;
  out.push('');
  if (sh.state === 'absent') out.push(`seahorse.db: none at ${sh.path}`);
  else if (sh.state === 'error') out.push(`seahorse.db: ${sh.path}: ${sh.error}`);
  else
    out.push(
      `seahorse.db: ${formatBytes(sh.bytes.total)} (${formatBytes(sh.bytes.db)}` +
        ` + ${formatBytes(sh.bytes.wal)} WAL), ${sh.conversations} conversations, ` +
        `${sh.messages} messages, ${inv.orphanConversations.length} orphan conversations`,
    );
  const withIssues = inv.sessions.filter((s) => s.issues.length > 0);
  if (withIssues.length + inv.orphanJsonl.length + inv.storeErrors.length > 0) {
    out.push('');
    out.push('Problems (reported, never fatal; such sessions are kept):');
    for (const s of withIssues) out.push(`  ${s.files.meta?.path ?? s.id}: ${s.issues.map(issueText).join('; ')}`);
    for (const o of inv.orphanJsonl)
      out.push(`  ${o.file.path}: orphan .jsonl without .meta.json (PicoClaw does not list it)`);
    for (const e of inv.storeErrors) out.push(`  ${e.dir}: ${e.error}`);
  }
  const held = inv.sessions.filter((x) => holdOf(holds, x));
  if (held.length > 0) {
    out.push('');
    out.push('Held after a restore (every prune pass keeps them; restore --release KEY ends a hold):');
    for (const x of held)
      out.push(
        `  ${x.agent}  ${width === Infinity ? (x.key ?? '') : shortKey(x.key)}  keep: ${holdDetail(holdOf(holds, x)!)}`,
      );
  }
  if (pins.length > 0) {
    const present = new Set(inv.sessions.map((s) => `${s.agent}\0${s.key}`));
    out.push('');
    out.push('Pinned (every prune pass keeps them with their alias groups; unpin KEY ends a pin):');
    for (const p of pins)
      out.push(
        `  ${p.agent}  ${width === Infinity ? escapeControl(p.key) : shortKey(p.key)}  keep: ${escapeControl(pinDetail(p))}` +
          (present.has(`${p.agent}\0${p.key}`) ? '' : ' (no such session now)'),
      );
  }
  if (problem) {
    out.push('');
    out.push(`  ${problem}`);
  }
  const symlinks = inv.ignored.filter((i) => i.entry.why === 'symlink' || i.entry.why === 'directory');
  for (const i of symlinks) out.push(`  ${i.dir}/${i.entry.name}: ${i.entry.why}, ignored (never followed)`);
}
