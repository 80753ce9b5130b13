import { realpathSync } from 'node:fs';
import { ExitCode, errorMessage } from '../errors.js';
import { systemClock } from '../io/clock.js';
import { readSmallText } from '../io/smallfile.js';
import { resolveStateDir } from '../io/statedir.js';
import { buildInventory, type SessionRecord } from '../picoclaw/inventory/inventory.js';
import { issueText } from '../picoclaw/inventory/issues.js';
import { jsonlLines } from '../picoclaw/jsonl-lines.js';
import { parseGoTime, parseSqliteTime } from '../picoclaw/time.js';
import { runPrunePass } from '../prune/pass.js';
import { resolveSessionKey, sessionCandidates } from '../picoclaw/session-key.js';
import { activeHolds } from '../state/holds.js';
import { homePins } from '../state/pins.js';
import { homeFromOpts } from './common.js';
import { escapeControl, formatAge, formatBytes, layout, outputWidth } from './format.js';
import { printJson } from './json-stream.js';
import { aliasGroupOf } from './pin.js';
import { reasonText } from './prune-text.js';

/**
 * `picoclaw-guard show KEY`: everything the guard knows of one session, metadata only (never a
 * message's text or the meta's summary, only their sizes): its files, lines, meta fields, seahorse
 * rows, alias group, last activity and which timestamp it came from, pins and holds, and the verdict
 * a dry-run of prune with the same config gives it now.
 */

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** Which of the session's timestamps is its last activity (the newest usable one). */
function activitySource(s: SessionRecord): string | null {
  if (s.lastActivityMs === null) return null;
  const t = s.times;
  const candidates: [string, number | null][] = [
    ['meta updated_at', parseGoTime(t.meta_updated_at)],
    ['last .jsonl line created_at', parseGoTime(t.jsonl_last_line)],
    ['seahorse last message', parseSqliteTime(t.seahorse_last_message)],
    ['meta created_at', parseGoTime(t.meta_created_at)],
  ];
  return candidates.find(([, ms]) => ms === s.lastActivityMs)?.[0] ?? null;
}

/** The meta's fields, content left out: the summary by its length, unknown fields by their names. */
function metaFields(path: string | undefined): { fields: Record<string, unknown> | null; problem: string | null } {
  if (!path) return { fields: null, problem: 'no .meta.json' };
  try {
    const doc = JSON.parse(readSmallText(path, 'meta', { noFollow: true })) as Record<string, unknown>;
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
      return { fields: null, problem: 'not an object' };
    const known = ['key', 'summary', 'skip', 'count', 'created_at', 'updated_at', 'scope', 'aliases'];
    return {
      fields: {
        key: doc.key ?? null,
        skip: doc.skip ?? null,
        count: doc.count ?? null,
        created_at: doc.created_at ?? null,
        updated_at: doc.updated_at ?? null,
        summary_chars: typeof doc.summary === 'string' ? doc.summary.length : null,
        scope: doc.scope ?? null,
        aliases: Array.isArray(doc.aliases) ? doc.aliases : [],
        other_fields: Object.keys(doc).filter((k) => !known.includes(k)),
      },
      problem: null,
    };
  } catch (err) {
    return { fields: null, problem: errorMessage(err) };
  }
}

/** Lines of the .jsonl, counted as it is read (never held): all, non-empty, and over PicoClaw's line limit. */
function countLines(path: string | undefined): { lines: number; non_empty: number; too_long: number } | string {
  if (!path) return 'no .jsonl';
  try {
    let lines = 0;
    let nonEmpty = 0;
    let tooLong = 0;
    for (const l of jsonlLines(path)) {
      lines++;
      if ('tooLong' in l) tooLong++;
      else if (l.text.trim() !== '') nonEmpty++;
    }
    return { lines, non_empty: nonEmpty, too_long: tooLong };
  } catch (err) {
    return errorMessage(err);
  }
}

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const home = homeFromOpts(opts);
  const now = systemClock();
  const stateDir = resolveStateDir(str(opts.stateDir));
  const inv = buildInventory(home);
  const s = resolveSessionKey(typeof args[0] === 'string' ? args[0] : '', sessionCandidates(inv.sessions), {
    agent: str(opts.agent),
    where: home.home,
    listHint: 'picoclaw-guard sessions lists the keys',
  }).session;
  const group = aliasGroupOf(home, inv.sessions, s);
  const homeReal = realpathSync(home.home);
  const inGroup = (x: { agent: string; key: string }) => group.some((m) => m.agent === x.agent && m.key === x.key);
  let pins: ReturnType<typeof homePins> = [];
  let holds: ReturnType<typeof activeHolds> = [];
  const problems: string[] = [];
  try {
    pins = homePins(stateDir, homeReal).filter(inGroup);
  } catch (err) {
    problems.push(errorMessage(err));
  }
  try {
    holds = activeHolds(stateDir, homeReal, now.getTime()).filter(inGroup);
  } catch (err) {
    problems.push(errorMessage(err));
  }
  // The verdict: a dry-run of the same pass prune runs (policy, config, pins, holds), read for this session.
  let verdict: { action: string; reason: string; why: string; detail: string | null } | null = null;
  let verdictProblem: string | null = null;
  try {
    const report = await runPrunePass({
      home: str(opts.home),
      configPath: str(opts.config),
      apply: false,
      clock: () => now,
      stateDir,
    });
    if (report.skipped) verdictProblem = report.skipped;
    const e = report.sessions.find((x) => x.agent === s.agent && x.file === s.base);
    if (e)
      verdict = {
        action: e.action,
        reason: e.reason,
        // The prune table's words, without its pointers to the lines below it.
        why: reasonText(e.reason).replace(' (see below)', '').replace('; see below', ''),
        detail: e.detail?.replace(/^kept /, '') ?? null,
      };
  } catch (err) {
    verdictProblem = errorMessage(err);
  }
  const meta = metaFields(s.files.meta?.path);
  const lines = countLines(s.files.jsonl?.path);
  const doc = {
    home: home.home,
    agent: s.agent,
    key: s.key,
    files: {
      jsonl: s.files.jsonl ? { path: s.files.jsonl.path, bytes: s.files.jsonl.bytes } : null,
      meta: s.files.meta ? { path: s.files.meta.path, bytes: s.files.meta.bytes } : null,
    },
    lines: typeof lines === 'string' ? null : lines,
    lines_problem: typeof lines === 'string' ? lines : null,
    meta: meta.fields,
    meta_problem: meta.problem,
    last_activity: s.lastActivityMs === null ? null : new Date(s.lastActivityMs).toISOString(),
    last_activity_from: activitySource(s),
    timestamps: s.times,
    seahorse: s.conversations.map((c) => ({
      conversation_id: c.conversationId,
      key: c.key,
      messages: c.messages,
      summaries: c.summaries,
      last_message_at: c.lastMessageAt,
    })),
    alias_group: group.filter((m) => m !== s).map((m) => ({ agent: m.agent, key: m.key, file: m.base })),
    issues: s.issues.map((i) => ({ issue: i, text: issueText(i) })),
    pins,
    holds,
    verdict,
    verdict_problem: verdictProblem,
    state_problems: problems,
  };
  if (opts.json) {
    printJson(doc);
    return ExitCode.OK;
  }
  const out: string[] = [];
  const e = escapeControl;
  out.push(`${s.agent} ${e(s.key ?? s.base)}`);
  out.push(
    `  .jsonl      ${doc.files.jsonl ? `${e(doc.files.jsonl.path)}  ${formatBytes(doc.files.jsonl.bytes)}` : 'none'}`,
  );
  out.push(
    `  .meta.json  ${doc.files.meta ? `${e(doc.files.meta.path)}  ${formatBytes(doc.files.meta.bytes)}` : 'none'}`,
  );
  if (doc.lines)
    out.push(
      `  lines       ${doc.lines.non_empty} messages (${doc.lines.lines} lines)` +
        (doc.lines.too_long > 0 ? `, ${doc.lines.too_long} over PicoClaw's 10 MB line limit` : ''),
    );
  else out.push(`  lines       not counted: ${e(doc.lines_problem ?? '')}`);
  if (meta.fields) {
    const f = meta.fields;
    out.push(
      `  meta        count=${String(f.count)} skip=${String(f.skip)} created_at=${String(f.created_at)} ` +
        `updated_at=${String(f.updated_at)} summary: ${typeof f.summary_chars === 'number' ? f.summary_chars : 0} characters (not shown)`,
    );
    if (f.scope) out.push(`  scope       ${e(JSON.stringify(f.scope))}`);
    const aliases = f.aliases as unknown[];
    if (aliases.length > 0) out.push(`  aliases     ${aliases.map((a) => e(String(a))).join(', ')}`);
    if ((f.other_fields as string[]).length > 0)
      out.push(`  other meta fields: ${(f.other_fields as string[]).join(', ')}`);
  } else out.push(`  meta        unreadable: ${e(meta.problem ?? '')}`);
  out.push(
    `  last activity  ${doc.last_activity ?? 'none usable (undated)'}` +
      (s.lastActivityMs !== null
        ? ` (${formatAge(now.getTime() - s.lastActivityMs)} ago, from the ${doc.last_activity_from ?? '?'})`
        : ''),
  );
  out.push(
    `  timestamps  meta updated_at ${s.times.meta_updated_at ?? '-'}; meta created_at ${s.times.meta_created_at ?? '-'}; ` +
      `last line ${s.times.jsonl_last_line ?? '-'}; seahorse ${s.times.seahorse_last_message ?? '-'}`,
  );
  if (doc.seahorse.length === 0) out.push('  seahorse    no conversation');
  for (const c of doc.seahorse)
    out.push(
      `  seahorse    conversation ${c.conversation_id} (${e(c.key)}): ${c.messages} messages, ${c.summaries} summaries` +
        `, last ${c.last_message_at ?? '-'}`,
    );
  if (doc.alias_group.length > 0)
    out.push(
      `  alias group kept or deleted together with: ${doc.alias_group.map((m) => `${m.agent} ${e(m.key ?? m.file)}`).join(', ')}`,
    );
  for (const i of doc.issues) out.push(`  issue       ${i.text}`);
  for (const p of pins)
    out.push(
      `  pinned      ${e(p.key)} on ${p.pinned_at.slice(0, 10)}${p.note ? `: ${e(p.note)}` : ''} (unpin KEY ends it)`,
    );
  for (const h of holds) out.push(`  held        ${e(h.key)} restored ${h.restored_at.slice(0, 10)}, until ${h.until}`);
  for (const p of problems) out.push(`  state       ${e(p)}`);
  if (verdict)
    out.push(
      `  verdict     ${verdict.action === 'delete' ? 'DELETE' : 'keep'}: ${verdict.why}` +
        (verdict.detail ? ` (${e(verdict.detail)})` : '') +
        ' (what prune would do now, with this config)',
    );
  if (verdictProblem) out.push(`  verdict     none: ${e(verdictProblem)}`);
  process.stdout.write(
    layout(
      out.map((text) => ({ text, indent: 14 })),
      outputWidth(opts),
    ) + '\n',
  );
  return ExitCode.OK;
}
