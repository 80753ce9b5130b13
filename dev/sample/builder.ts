import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { opaqueKey } from '../../src/picoclaw/seahorse.js';
import { formatGoTime, formatSqliteTime } from '../../src/picoclaw/time.js';
import { sqlite } from '../../src/io/sqlite.js';
import { seahorseSchemaSql } from '../seahorse-schema.js';
import type { SampleLogLevel, SampleRestart } from './gateway-events.js';
import { renderGatewayLog } from './gatewaylog.js';
import { buildMessages, capUtf8, CJK, lineOf, metaJson, type Msg } from './messages.js';
import { Rng } from './random.js';

/**
 * The sample-home builder: a PicoClaw home that looks like a real board after months
 * of use, deterministic from a seed. Used by the tests, `npm run demo` and the
 * benchmarks. Formats follow docs/picoclaw.md (session files, seahorse.db, gateway.log) byte for byte where it matters
 * (Go's JSON escaping and RFC3339Nano trimming, MarshalIndent metas, the real
 * seahorse schema with its FTS5 trigram tables and triggers, WAL mode).
 */
export interface SampleOptions {
  /** Where to build (must not hold a home already). */
  dir: string;
  seed?: number;
  /** Sessions in all (alias sessions, cron runs and undated ones included). */
  sessions?: number;
  /** Agent count (main + others; at least 1). */
  agents?: number;
  /** Average messages per session. */
  messagesPerSession?: number;
  /** Sessions spread over this many days before `now`. */
  spanDays?: number;
  /** The board's "now" (epoch ms). */
  now?: number;
  /** Build seahorse.db (context_manager seahorse). */
  seahorse?: boolean;
  /** Size of a tool result (bytes): the main driver of JSONL volume. */
  toolResultBytes?: number;
  /** gateway.log level and whether gateway.* runtime events are logged. */
  logLevel?: SampleLogLevel;
  logEvents?: boolean;
  /** Number of restarts in gateway.log. */
  restarts?: number;
  /** PID file: none, a stale one (process gone), or a given pid/port (tests with a live fake gateway). */
  pidFile?: 'none' | 'stale' | { pid: number; port: number; host?: string };
  /** Extra fields put into config.json (e.g. secret canaries for tests). */
  extraConfig?: Record<string, unknown>;
  /**
   * Cap (UTF-8 bytes) on the text each message stores in seahorse.db (messages.content and
   * the message_parts text). Default: no cap, the whole message, as PicoClaw stores it. The
   * benchmarks set it to build gigabyte JSONL homes without a database three times larger
   * (every stored byte is indexed again by the FTS5 trigram table).
   */
  seahorseContentBytes?: number;
  /**
   * Shares of the session kinds (the rest are direct sessions); default cron 0.45, alias 0.10,
   * undated 0.025, pre-2024 0.025. The benchmarks' held-out homes draw them from a seed.
   */
  kindShares?: { cron: number; alias: number; undated: number; pre2024: number };
  /** Digits of a direct session's peer id (its alias keys' length); default 6 to 9. */
  peerDigits?: number;
}

export interface SampleSession {
  agent: string;
  key: string;
  base: string;
  kind: 'direct' | 'cron' | 'alias' | 'undated' | 'pre2024';
  lastActivityMs: number | null;
  messages: number;
  inSeahorse: boolean;
  aliases: string[];
}

export interface SampleHome {
  home: string;
  configPath: string;
  seahorsePath: string | null;
  agents: { id: string; sessionsDir: string }[];
  sessions: SampleSession[];
  orphanConversationKeys: string[];
  now: number;
}

const DAY = 86_400_000;

function sanitize(key: string): string {
  return key.replace(/[:/\\]/g, '_');
}

export function buildSampleHome(opts: SampleOptions): SampleHome {
  const rng = new Rng(opts.seed ?? 42);
  const home = opts.dir;
  const now = opts.now ?? Date.UTC(2026, 10, 30, 12, 0, 0);
  const total = Math.max(1, opts.sessions ?? 60);
  const agentCount = Math.max(1, opts.agents ?? 3);
  const perSession = Math.max(1, opts.messagesPerSession ?? 8);
  const spanDays = opts.spanDays ?? 120;
  const withSeahorse = opts.seahorse ?? true;
  const toolBytes = opts.toolResultBytes ?? 3000;
  const agentIds = ['main', 'research', 'ops', 'home', 'kids', 'garden', 'finance', 'travel'].slice(0, agentCount);
  while (agentIds.length < agentCount) agentIds.push(`agent${agentIds.length}`);

  mkdirSync(home, { recursive: true });
  const workspace = join(home, 'workspace');
  const agents = agentIds.map((id) => ({
    id,
    sessionsDir: id === 'main' ? join(workspace, 'sessions') : join(home, `workspace-${id}`, 'sessions'),
  }));
  for (const a of agents) mkdirSync(a.sessionsDir, { recursive: true });

  const config: Record<string, unknown> = {
    agents: {
      defaults: { workspace, context_manager: withSeahorse ? 'seahorse' : 'legacy', model: 'llama3' },
      list: agentIds.map((id, i) => ({ id, name: id, default: i === 0, model: 'llama3' })),
    },
    gateway: { host: '127.0.0.1', port: 18790, log_level: opts.logLevel ?? 'info' },
    model_list: [
      {
        model_name: 'llama3',
        model: 'ollama/llama3',
        api_base: 'http://127.0.0.1:11434/v1',
        api_key: 'sample-not-a-secret',
      },
    ],
    ...(opts.extraConfig ?? {}),
  };
  writeFileSync(join(home, 'config.json'), JSON.stringify(config, null, 2) + '\n');

  // Plan the sessions first, then write them.
  interface Planned extends SampleSession {
    dir: string;
    start: number;
    count: number;
    scope?: Record<string, unknown>;
  }
  const planned: Planned[] = [];
  const kinds: SampleSession['kind'][] = [];
  const ks = opts.kindShares;
  const [tCron, tDirect, tAlias, tUndated] = ks
    ? [ks.cron, 1 - ks.alias - ks.undated - ks.pre2024, 1 - ks.undated - ks.pre2024, 1 - ks.pre2024]
    : [0.45, 0.85, 0.95, 0.975];
  for (let i = 0; i < total; i++) {
    const r = rng.next();
    kinds.push(
      r < tCron ? 'cron' : r < tDirect ? 'direct' : r < tAlias ? 'alias' : r < tUndated ? 'undated' : 'pre2024',
    );
  }
  if (total >= 3) kinds[0] = 'direct';
  let aliasPending: Planned | null = null;
  const usedKeys = new Set<string>();
  for (let i = 0; i < total; i++) {
    const agent = agents[i % agents.length]!;
    let kind = kinds[i]!;
    // Recency skew: most sessions are recent, a long tail is old.
    const ageDays = spanDays * Math.pow(rng.next(), 1.6);
    const last = i === 0 ? now - 60_000 : now - Math.round(ageDays * DAY) - rng.int(0, 3600_000);
    const count = Math.max(1, Math.round(perSession * (0.3 + rng.next() * 1.4)));
    const start = last - count * rng.int(20_000, 600_000);
    let key: string;
    let aliases: string[] = [];
    let scope: Record<string, unknown> | undefined;
    if (kind === 'alias' && aliasPending === null) kind = 'direct';
    if (kind === 'cron') {
      // A board runs a few cron jobs many times each: the run's job is one of five per agent,
      // picked from the random draw itself so that the rest of the home stays the same.
      const draw = rng.hex(16);
      key = `agent:cron-${cronJobId(agent.id, parseInt(draw.slice(0, 4), 16) % 5)}-${rng.uuid()}`;
    } else if (kind === 'alias' && aliasPending) {
      // A legacy session whose key an opaque session lists in its aliases: same group.
      key = aliasPending.aliases.find((a) => !a.endsWith(':main'))!;
      planned.push({
        agent: aliasPending.agent,
        key,
        base: sanitize(key),
        kind: 'alias',
        lastActivityMs: null,
        messages: count,
        inSeahorse: false,
        aliases: [],
        dir: aliasPending.dir,
        start: start - 30 * DAY,
        count,
      });
      aliasPending = null;
      continue;
    } else {
      // A peer drawn twice (likelier with many sessions or short peer ids) would give two
      // sessions one key, which seahorse.db's UNIQUE session_key refuses: draw again.
      let channel: string;
      let peer: string;
      do {
        channel = rng.pick(['telegram', 'discord', 'cli', 'pico']);
        peer = opts.peerDigits
          ? String(rng.int(10 ** (opts.peerDigits - 1), 10 ** opts.peerDigits - 1))
          : String(rng.int(100000, 999999999));
        key = opaqueKey(`v=1|agent=${agent.id}|channel=${channel}|account=default|chat=direct:${peer}`);
      } while (usedKeys.has(key));
      scope = {
        version: 1,
        agent_id: agent.id,
        channel,
        account: 'default',
        dimensions: ['chat'],
        values: { chat: `direct:${peer}` },
      };
      aliases = [
        `agent:${agent.id}:main`,
        `agent:${agent.id}:direct:${peer}`,
        `agent:${agent.id}:${channel}:direct:${peer}`,
        `agent:${agent.id}:${channel}:default:direct:${peer}`,
      ];
    }
    usedKeys.add(key);
    const p: Planned = {
      agent: agent.id,
      key,
      base: sanitize(key),
      kind,
      lastActivityMs: null,
      messages: count,
      inSeahorse: false,
      aliases,
      dir: agent.sessionsDir,
      start,
      count,
      scope,
    };
    planned.push(p);
    if (kind === 'direct' && aliases.length > 0 && rng.chance(0.25) && aliasPending === null) aliasPending = p;
  }

  // Write the JSONL stores.
  const written: { p: Planned; msgs: Msg[]; times: number[] }[] = [];
  for (const p of planned) {
    const dated = p.kind === 'undated' ? 'none' : 'go';
    let start = p.start;
    let end = p.kind === 'alias' ? p.start + p.count * 60_000 : p.start + (p.count - 1) * 60_000;
    if (p.kind !== 'alias') end = Math.max(end, p.start);
    if (p.kind === 'pre2024') {
      // Written while the board's clock was wrong: 1970 or a stale build date.
      start = Date.UTC(rng.chance(0.5) ? 1970 : 2023, rng.int(0, 11), 1) + rng.int(0, 20) * DAY;
      end = start + p.count * 60_000;
    }
    const { msgs, times } = buildMessages(rng, p.count, start, end, dated, toolBytes);
    const fd = openSync(join(p.dir, `${p.base}.jsonl`), 'w', 0o644);
    for (const m of msgs) writeSync(fd, lineOf(m));
    closeSync(fd);
    const zero = '0001-01-01T00:00:00Z';
    const meta: Record<string, unknown> = {
      key: p.key,
      summary: '',
      skip: 0,
      count: msgs.length,
      created_at: dated === 'none' ? zero : formatGoTime(times[0]! - 20, 855_888),
      updated_at: dated === 'none' ? zero : formatGoTime(times[times.length - 1]!, 945_017, 120),
    };
    if (p.scope) meta.scope = p.scope;
    if (p.aliases.length > 0) meta.aliases = p.aliases;
    writeFileSync(join(p.dir, `${p.base}.meta.json`), metaJson(meta), { mode: 0o644 });
    p.lastActivityMs = dated === 'none' || p.kind === 'pre2024' ? null : times[times.length - 1]!;
    written.push({ p, msgs, times });
  }

  // seahorse.db, consistent with the JSONL (most sessions ingested; a few orphans).
  let seahorsePath: string | null = null;
  const orphanConversationKeys: string[] = [];
  if (withSeahorse) {
    seahorsePath = join(agents[0]!.sessionsDir, 'seahorse.db');
    const Database = sqlite();
    const db = new Database(seahorsePath);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(seahorseSchemaSql('current'));
    const insConv = db.prepare(`INSERT INTO conversations (session_key, created_at, updated_at) VALUES (?, ?, ?)`);
    const insMsg = db.prepare(
      `INSERT INTO messages (conversation_id, role, content, token_count, created_at,` +
        ` model_name, reasoning_content) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    const insPart = db.prepare(
      `INSERT INTO message_parts (message_id, type, text, name, arguments, tool_call_id,` +
        ` ordinal) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    const insSum = db.prepare(
      `INSERT INTO summaries (summary_id, conversation_id, kind, depth, content,` +
        ` token_count, earliest_at, latest_at, descendant_count, model, created_at) ` +
        `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insSumMsg = db.prepare(`INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)`);
    const insSumParent = db.prepare(`INSERT INTO summary_parents (summary_id, parent_summary_id) VALUES (?, ?)`);
    const insCtx = db.prepare(
      `INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id,` +
        ` message_id, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    let sumSeq = 0;
    const fill = db.transaction(() => {
      for (const { p, msgs, times } of written) {
        if (p.kind === 'alias' || p.kind === 'undated') continue;
        if (!rng.chance(0.9)) continue;
        p.inSeahorse = true;
        const created = formatSqliteTime(Math.max(times[0]!, 0));
        const convId = Number(insConv.run(p.key, created, created).lastInsertRowid);
        const ids: number[] = [];
        msgs.forEach((m, idx) => {
          let content = m.content;
          if (m.tool_calls)
            content = `[tool_use: ${m.tool_calls[0]!.function.name}, args: ${m.tool_calls[0]!.function.arguments}]`;
          if (m.tool_call_id) content = `[tool_result for ${m.tool_call_id}: ${m.content}]`;
          content = capUtf8(content, opts.seahorseContentBytes);
          const partText = capUtf8(m.content, opts.seahorseContentBytes);
          const id = Number(
            insMsg.run(
              convId,
              m.role,
              content,
              Math.ceil(content.length / 4),
              formatSqliteTime(times[idx]!),
              m.model_name ?? '',
              m.reasoning_content ?? '',
            ).lastInsertRowid,
          );
          ids.push(id);
          if (m.tool_calls)
            insPart.run(
              id,
              'tool_use',
              null,
              m.tool_calls[0]!.function.name,
              m.tool_calls[0]!.function.arguments,
              m.tool_calls[0]!.id,
              0,
            );
          else if (m.tool_call_id) insPart.run(id, 'tool_result', partText, null, null, m.tool_call_id, 0);
          else insPart.run(id, 'text', partText, null, null, null, 0);
        });
        let ordinal = 0;
        if (msgs.length >= 8) {
          // Two leaf summaries condensed into one: summary_messages, summary_parents, context_items.
          const leafIds: string[] = [];
          for (let k = 0; k < 2; k++) {
            const sid = `sum_${(now * 1000 + sumSeq++).toString(16)}`;
            const part = ids.slice(k * 2, k * 2 + 2);
            insSum.run(
              sid,
              convId,
              'leaf',
              0,
              `Summary ${k}: the user asked for system checks; ${rng.pick(CJK)}`,
              40,
              new Date(times[0]!).toISOString().slice(0, 19) + 'Z',
              new Date(times[3]!).toISOString().slice(0, 19) + 'Z',
              part.length,
              'llama3',
              formatSqliteTime(times[3]!),
            );
            part.forEach((mid, o) => insSumMsg.run(sid, mid, o));
            leafIds.push(sid);
          }
          const cond = `sum_${(now * 1000 + sumSeq++).toString(16)}`;
          insSum.run(
            cond,
            convId,
            'condensed',
            1,
            'Condensed: routine checks, nothing failed.',
            20,
            null,
            null,
            4,
            'llama3',
            formatSqliteTime(times[4]!),
          );
          for (const l of leafIds) insSumParent.run(cond, l);
          insCtx.run(convId, ordinal, 'summary', cond, null, 20, formatSqliteTime(times[4]!));
          ordinal += 100;
        }
        for (const id of ids.slice(-4)) {
          insCtx.run(convId, ordinal, 'message', null, id, 10, formatSqliteTime(times[times.length - 1]!));
          ordinal += 100;
        }
      }
      // Orphan conversations: keys that no sessions folder holds any more.
      for (let k = 0; k < Math.max(1, Math.round(total / 40)); k++) {
        const key = `agent:cron-${rng.hex(16)}-${rng.uuid()}`;
        const at = now - rng.int(5, spanDays + 30) * DAY;
        const convId = Number(insConv.run(key, formatSqliteTime(at), formatSqliteTime(at)).lastInsertRowid);
        for (let m = 0; m < 3; m++)
          insMsg.run(
            convId,
            m % 2 ? 'assistant' : 'user',
            `orphaned message ${m}`,
            4,
            formatSqliteTime(at + m * 60_000),
            '',
            '',
          );
        orphanConversationKeys.push(key);
      }
    });
    fill();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }

  // PID file (never a live token: a fixed sample value).
  const pf = opts.pidFile ?? 'stale';
  if (pf !== 'none') {
    const info =
      pf === 'stale'
        ? { pid: 4_194_303, port: 18790, host: '127.0.0.1' }
        : { pid: pf.pid, port: pf.port, host: pf.host ?? '127.0.0.1' };
    writeFileSync(
      join(home, '.picoclaw.pid'),
      JSON.stringify(
        {
          pid: info.pid,
          token: 'sampletoken0123456789abcdef01234',
          version: 'v0.2.9',
          port: info.port,
          host: info.host,
        },
        null,
        2,
      ),
      { mode: 0o600 },
    );
  }

  // gateway.log: restarts whose bootstrap gap grows with the number of sessions at the time.
  mkdirSync(join(home, 'logs'), { recursive: true });
  const restartCount = opts.restarts ?? 6;
  const restarts: SampleRestart[] = [];
  for (let r = 0; r < restartCount; r++) {
    const startMs = now - Math.round(((restartCount - r) * spanDays * DAY) / (restartCount + 1)) - 7200_000;
    const sessionsThen = Math.max(1, Math.round((total * (r + 1)) / restartCount));
    const gapMs = 1500 + sessionsThen * 350 + rng.int(0, 900);
    const end: SampleRestart['end'] =
      r === restartCount - 1 ? 'running' : r === 2 ? 'crashed' : r === 3 && restartCount > 5 ? 'failed' : 'stopped';
    restarts.push({ startMs, sessions: sessionsThen, gapMs, end, stopMs: startMs + gapMs + 5 * DAY });
  }
  writeFileSync(
    join(home, 'logs', 'gateway.log'),
    renderGatewayLog({
      restarts,
      level: opts.logLevel ?? 'info',
      events: opts.logEvents ?? true,
      seed: (opts.seed ?? 42) + 1,
      home,
      utcOffsetMin: 120,
      agents: agentIds,
    }),
  );

  return {
    home,
    configPath: join(home, 'config.json'),
    seahorsePath,
    agents,
    sessions: planned.map(({ agent, key, base, kind, lastActivityMs, messages, inSeahorse, aliases }) => ({
      agent,
      key,
      base,
      kind,
      lastActivityMs,
      messages,
      inSeahorse,
      aliases,
    })),
    orphanConversationKeys,
    now,
  };
}

/** The 16-hex-digit ID of cron job `n` of an agent (PicoClaw's job IDs have that shape). */
function cronJobId(agent: string, n: number): string {
  return createHash('sha256').update(`${agent}/cron/${n}`).digest('hex').slice(0, 16);
}
