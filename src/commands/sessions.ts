import { realpathSync } from 'node:fs';
import { errorMessage } from '../errors.js';
import { resolveStateDir } from '../io/statedir.js';
import { activeHolds, holdDetail, type Hold } from '../state/holds.js';
import { homePins, pinDetail, type Pin } from '../state/pins.js';
import type { Inventory } from '../picoclaw/inventory/inventory.js';
import {
  buildWorkingInventory,
  type Keyed,
  type WorkingInventory,
  type WorkingSession,
} from '../picoclaw/inventory/working.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { systemClock, type Clock } from '../io/clock.js';
import { issueText } from '../picoclaw/inventory/issues.js';
import { CRON_KEY_PREFIX, cronJobsOf } from '../prune/plan/cron.js';
import { collate } from '../io/collate.js';
import { homeFromOpts } from './common.js';
import { cronJobsTable } from './render-guard-keys.js';
import {
  fitTable,
  formatAge,
  formatBytes,
  isoOrDash,
  LayoutWriter,
  tableShape,
  type Column,
  layoutToString,
  outputWidth,
  escapeControl,
  shortKey,
} from './format.js';
import { LazyList, printJson } from './json-stream.js';

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
export function byActivity(a: Sortable, b: Sortable): number {
  const x = a.lastActivityMs ?? -Infinity;
  const y = b.lastActivityMs ?? -Infinity;
  if (x !== y) return y - x;
  return byKey(a, b);
}

/** What the sessions order reads of a session. */
export interface Sortable {
  lastActivityMs: number | null;
  key: string | null;
  id: string;
}

/** The order of sessions with the same last activity. */
type Keyish = Pick<Sortable, 'key' | 'id'>;
const byKey = (a: Keyish, b: Keyish): number => collate(a.key ?? '', b.key ?? '') || collate(a.id, b.id);

/** Pins by agent and key, for one look-up a session. */
type PinIndex = Map<string, Pin>;
const pinIndex = (pins: Pin[]): PinIndex => new Map(pins.map((p) => [`${p.agent}\0${p.key}`, p]));
function pinOf(pins: PinIndex, s: WorkingSession): { pinned_at: string; note: string | null } | null {
  const p = pins.size > 0 && s.key !== null ? pins.get(`${s.agent}\0${s.key}`) : undefined;
  return p ? { pinned_at: p.pinned_at, note: p.note } : null;
}

function sessionJson(s: WorkingSession, now: Date, holds: Hold[], pins: PinIndex) {
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

function* lazyMap<T, U>(xs: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

/** The `sessions --json` document; its lists are made one item at a time as they are written (printJson streams it). */
export function inventoryJson(inv: WorkingInventory, now: Date, holds: Hold[] = [], pins: Pin[] = []) {
  const ix = pinIndex(pins);
  const totals = inv.perAgent.reduce(
    (t, a) => ({ jsonl: t.jsonl + a.jsonl_bytes, messages: t.messages + a.messages }),
    { jsonl: 0, messages: 0 },
  );
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
    sessions: new LazyList(lazyMap(inv.byActivity(), (s) => sessionJson(s, now, holds, ix))),
    orphan_jsonl: new LazyList(
      lazyMap(inv.orphanJsonl(), (o) => ({ agent: o.agent, path: o.file.path, bytes: o.file.bytes })),
    ),
    orphan_conversations: new LazyList(
      lazyMap(inv.orphanConversations(), (c) => ({
        conversation_id: c.conversationId,
        key: c.key,
        messages: c.messages,
        summaries: c.summaries,
        last_activity: c.lastActivityMs === null ? null : new Date(c.lastActivityMs).toISOString(),
      })),
    ),
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
      sessions: inv.counts.sessions,
      undated: inv.counts.undated,
      with_issues: inv.counts.withIssues,
      jsonl_bytes: totals.jsonl,
      messages: totals.messages,
      per_agent: inv.perAgent,
    },
    cron_jobs: cronJobsOf(inv.keyedStarting(CRON_KEY_PREFIX)),
    /** This home's pins; `present` false: the session is gone (unpin KEY ends the pin). */
    pins: (() => {
      const present = presentOf(inv, pins);
      return pins.map((p) => ({
        agent: p.agent,
        key: p.key,
        pinned_at: p.pinned_at,
        note: p.note,
        present: present.has(`${p.agent}\0${p.key}`),
      }));
    })(),
  };
}

const SESSION_COLUMNS: Column[] = [
  { header: 'AGENT', fit: 'end', min: 8 },
  { header: 'KEY', fit: 'middle', min: 24 },
  // AGE says the same in fewer columns.
  { header: 'LAST ACTIVITY', drop: 1 },
  { header: 'AGE', align: 'right' },
  { header: 'MSGS', align: 'right' },
  { header: 'BYTES', align: 'right' },
  { header: 'IN SEAHORSE', short: 'SEAHORSE', align: 'right' },
  { header: '' },
];

/** Which of these agents and keys name a session now (`agent\0key`). */
const presentOf = (inv: WorkingInventory, which: readonly { agent: string; key: string }[]): Set<string> =>
  new Set(inv.named(which).map((x) => `${x.agent}\0${x.key}`));

function holdOf(
  holds: Hold[],
  s: { agent: string; key: string | null },
): { restored_at: string; until: string } | null {
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
  const inv = openInventory(home);
  try {
    const { holds, pins, problem } = readHomeHolds(opts, home.home, now.getTime());
    if (opts.json) {
      printJson(inventoryJson(inv, now, holds, pins));
      return 0;
    }
    const w = new LayoutWriter(outputWidth(opts), (c) => process.stdout.write(c));
    writeSessions(w, inv, now, holds, problem, pins);
    w.flush();
    return 0;
  } finally {
    inv.close();
  }
}

/** The home's sessions in a working database, in the `sessions` order; the caller closes it. */
export function openInventory(home: PicoClawHome, workDirs?: string[]): WorkingInventory {
  return buildWorkingInventory(home, { compareKeys: byKey, workDirs });
}

/** The text report, fitted to `width` columns (Infinity: --wide). */
export function renderSessions(
  inv: WorkingInventory,
  now: Date,
  width: number,
  holds: Hold[] = [],
  problem: string | null = null,
  pins: Pin[] = [],
): string {
  return layoutToString((w) => writeSessions(w, inv, now, holds, problem, pins), width);
}

/** The text report, written as it is made: the session table's rows are read twice (widths, then lines), never held. */
export function writeSessions(
  out: LayoutWriter,
  inv: WorkingInventory,
  now: Date,
  holds: Hold[] = [],
  problem: string | null = null,
  pins: Pin[] = [],
): void {
  const home = inv.home;
  const width = out.width;
  const row = (s: Keyed) => [
    s.agent,
    s.key ?? '(unreadable meta)',
    isoOrDash(s.lastActivityMs),
    s.lastActivityMs === null ? 'undated' : formatAge(now.getTime() - s.lastActivityMs),
    s.messages === null ? '-' : String(s.messages),
    formatBytes(s.jsonlBytes + s.metaBytes),
    s.conversationCount === 0 ? '-' : String(s.conversationMessages),
    s.hasIssues ? '!' : '',
  ];
  out.push(`PicoClaw home: ${home.home}   context manager: ${home.contextManager}`);
  out.push('');
  if (inv.counts.sessions === 0) out.push('No sessions found.');
  else
    // The widths from one walk of the table in no order, the lines in the report's order.
    out.tableOfShape(tableShape(SESSION_COLUMNS, lazyMap(inv.keyed(), row), width), () =>
      lazyMap(inv.byActivityKeyed(), row),
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
      inv.perAgent.map((t) => [
        t.agent,
        String(t.sessions),
        String(t.messages),
        formatBytes(t.jsonl_bytes + t.meta_bytes),
        home.agents.find((a) => a.id === t.agent)!.sessionsDir,
      ]),
      width,
    ),
  );
  out.push(...cronJobsTable(cronJobsOf(inv.keyedStarting(CRON_KEY_PREFIX)), now.getTime(), width));
  let jsonl = 0;
  let meta = 0;
  for (const a of inv.perAgent) {
    jsonl += a.jsonl_bytes;
    meta += a.meta_bytes;
  }
  let orphans = 0;
  let orphanBytes = 0;
  for (const o of inv.orphanJsonl()) {
    orphans++;
    orphanBytes += o.file.bytes;
  }
  let orphanConversations = 0;
  for (const _ of inv.orphanConversations()) orphanConversations++;
  out.push(
    `Total: ${inv.counts.sessions} sessions, ${formatBytes(jsonl + meta)} (.jsonl ` +
      `${formatBytes(jsonl)} + .meta.json ${formatBytes(meta)})` +
      (orphans > 0 ? `; ${orphans} orphan .jsonl ${formatBytes(orphanBytes)}` : ''),
  );
  const sh = inv.seahorse;
  out.push('');
  if (sh.state === 'absent') out.push(`seahorse.db: none at ${sh.path}`);
  else if (sh.state === 'error') out.push(`seahorse.db: ${sh.path}: ${sh.error}`);
  else
    out.push(
      `seahorse.db: ${formatBytes(sh.bytes.total)} (${formatBytes(sh.bytes.db)}` +
        ` + ${formatBytes(sh.bytes.wal)} WAL), ${sh.conversations} conversations, ` +
        `${sh.messages} messages, ${orphanConversations} orphan conversations`,
    );
  if (inv.counts.withIssues + orphans + inv.storeErrors.length > 0) {
    out.push('');
    out.push('Problems (reported, never fatal; such sessions are kept):');
    for (const s of inv.withIssues()) out.push(`  ${s.metaPath}: ${s.issues.map(issueText).join('; ')}`);
    for (const o of inv.orphanJsonl())
      out.push(`  ${o.file.path}: orphan .jsonl without .meta.json (PicoClaw does not list it)`);
    for (const e of inv.storeErrors) out.push(`  ${e.dir}: ${e.error}`);
  }
  const held = inv.named(holds);
  if (held.length > 0) {
    out.push('');
    out.push('Held after a restore (every prune pass keeps them; restore --release KEY ends a hold):');
    for (const x of held)
      out.push(
        `  ${x.agent}  ${width === Infinity ? (x.key ?? '') : shortKey(x.key)}  keep: ${holdDetail(holdOf(holds, x)!)}`,
      );
  }
  if (pins.length > 0) {
    const present = presentOf(inv, pins);
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
