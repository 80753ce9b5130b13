import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainAlias } from '../../src/picoclaw/seahorse.js';
import { buildSampleHome, type SampleHome } from '../../dev/sample/builder.js';
import { Rng } from '../../dev/sample/random.js';
import { dumpSeahorse, integrity, snapshot } from './home.js';
import { assertBuilt, NO_GUARD_CONFIG } from './cli.js';

/**
 * The "crash at any moment" harness.
 *
 * A real `prune --apply` subprocess is killed with SIGKILL at a random moment on a
 * copy of a pristine sample home, then the copy is checked against what the plan
 * promised, and a complete pass is run to check that it converges to the state an
 * uninterrupted pass leaves. Kills are placed three ways (seeded): after a random
 * delay over the whole pass, at the Nth write to seahorse.db-wal (the seahorse
 * deletion), and at the Nth unlink of a session file (inotify through fs.watch),
 * N calibrated on the uninterrupted reference run.
 *
 * The age policy depends on the clock and the CLI reads the real one, so the home is
 * built with its `now` shifted until no session's last activity lies within the
 * age cutoff's path for the whole run (buildStableHome): every pass of the run then
 * plans the same thing, whenever it starts.
 *
 * Used by test/safety/crash.test.ts (a handful of kills) and bench/crash-soak.ts
 * (the long run); nothing here imports vitest.
 */

const DAY = 86_400_000;

/** The repository root, found from this file whether it runs from test/ or dist/test/. */
export function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(d, 'package.json'))) return d;
    const up = dirname(d);
    if (up === d) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    d = up;
  }
}

export const CLI_PATH = join(repoRoot(), 'dist', 'src', 'cli.js');

/** The environment the CLI runs with: no PicoClaw variables, no guard config, no system state dir. */
export function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG,
    PICOGUARD_NO_SYSTEM_STATE: '1',
    ...extra,
  };
}

// --- The parts of the --json report the harnesses read -------------------------------

export interface ReportSession {
  agent: string;
  key: string | null;
  file: string;
  group: string | null;
  last_activity: string | null;
  group_last_activity: string | null;
  action: 'keep' | 'delete';
  reason: string;
  detail: string | null;
}

export interface ReportOrphan {
  key: string;
  conversation_id: number;
  messages: number;
  last_activity: string | null;
  action: 'keep' | 'delete';
  reason: string;
}

export interface PruneJson {
  mode: 'dry-run' | 'apply';
  skipped: string | null;
  exit_code: number;
  gateway: { state: string; reason: string } | null;
  sessions: ReportSession[];
  orphans: ReportOrphan[];
  database: {
    present: boolean;
    longest_write_ms: number | null;
    transactions: number | null;
    vacuum: { ran: boolean; reason: string } | null;
    shrink?: { ran: boolean; reason: string; steps: number; returned_bytes: number; longest_step_ms: number } | null;
  };
  totals: {
    sessions: number;
    groups: number;
    delete: number;
    keep: number;
    deleted_sessions: number;
    deleted_orphan_conversations: number;
    by_reason: Record<string, number>;
  };
  warnings: string[];
  duration_ms: number;
}

/** Run the built CLI and parse its --json report; throws with stderr when there is none. */
export function cliJson(
  args: string[],
  env: NodeJS.ProcessEnv = cliEnv(),
): { code: number; report: PruneJson; wallMs: number } {
  assertBuilt();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI_PATH, ...args], {
    encoding: 'utf8',
    env,
    maxBuffer: 1 << 30,
    timeout: 600_000,
  });
  const wallMs = performance.now() - t0;
  if (r.error) throw r.error;
  try {
    return { code: r.status ?? -1, report: JSON.parse(r.stdout) as PruneJson, wallMs };
  } catch {
    throw new Error(
      `picoclaw-guard ${args.join(' ')} exited ${r.status ?? r.signal} without a JSON report: ` +
        `${r.stderr.slice(0, 2000)}`,
    );
  }
}

// --- A home whose plan does not depend on when the run looks at it ---------------------

export interface StableHomeOptions {
  dir: string;
  seed: number;
  sessions: number;
  agents: number;
  messagesPerSession?: number;
  toolResultBytes?: number;
  spanDays?: number;
  pidFile?: 'none' | 'stale';
  /** How long the age policy must plan exactly the same thing. */
  stableForMs: number;
  /** Where the age cutoff may fall (days back); the older, the fewer sessions it deletes. Default 10 to 60. */
  cutoffDays?: [number, number];
}

export interface StableHome {
  sample: SampleHome;
  maxAgeDays: number;
  /** Past this (epoch ms) the age cutoff may reach a session. */
  stableUntil: number;
}

const MARGIN_MS = 60_000;

/**
 * Build a sample home whose age cutoff (max_age_days before the real clock) crosses
 * no session's last activity between now and now + stableForMs. The builder's times
 * are all relative to its `now`, so a probe build tells the gaps between them, and
 * the real build is shifted so that the cutoff sits at the start of a wide gap.
 */
export function buildStableHome(o: StableHomeOptions): StableHome {
  const base = {
    seed: o.seed,
    sessions: o.sessions,
    agents: o.agents,
    messagesPerSession: o.messagesPerSession,
    toolResultBytes: o.toolResultBytes,
    spanDays: o.spanDays,
    seahorse: true,
    pidFile: o.pidFile ?? 'none',
  } as const;
  const probeDir = join(o.dir, 'probe-home');
  const n0 = Date.now();
  buildSampleHome({ ...base, dir: probeDir, now: n0 });
  const { report } = cliJson([
    'prune',
    '--home',
    probeDir,
    '--json',
    '--max-age-days',
    '0',
    '--max-sessions',
    '0',
    '--max-db-size-mb',
    '0',
  ]);
  rmSync(probeDir, { recursive: true, force: true });
  const ages: number[] = [];
  for (const s of report.sessions) {
    const t = s.group_last_activity ?? s.last_activity;
    if (t) ages.push(Date.parse(t) - n0);
  }
  for (const x of report.orphans) if (x.last_activity) ages.push(Date.parse(x.last_activity) - n0);
  ages.sort((a, b) => a - b);
  const need = o.stableForMs + 2 * MARGIN_MS;
  const [lo, hi] = o.cutoffDays ?? [10, 60];
  let best: { a: number; b: number } | null = null;
  for (let i = 0; i + 1 < ages.length; i++) {
    const a = ages[i]!;
    const b = ages[i + 1]!;
    if (a < -hi * DAY || b > -lo * DAY || b - a < need) continue;
    if (!best || b - a > best.b - best.a) best = { a, b };
  }
  if (!best)
    throw new Error(
      `no gap of ${Math.round(need / 60_000)} min between session times ${lo}` +
        ` to ${hi} days old: use fewer sessions or a shorter run`,
    );
  const g = best.a + MARGIN_MS;
  const maxAgeDays = Math.ceil(-g / DAY);
  const t0 = Date.now();
  const now = t0 - maxAgeDays * DAY - g;
  const sample = buildSampleHome({ ...base, dir: join(o.dir, 'pristine'), now });
  return { sample, maxAgeDays, stableUntil: t0 + o.stableForMs };
}

/**
 * Copy a home elsewhere (cp -a keeps inodes apart, modes and mtimes alike). The
 * builder's config.json names the workspace by absolute path, so the copy's
 * config is pointed at the copy: otherwise a pass on the copy would prune the original.
 */
export function copyHome(src: string, dst: string): void {
  execFileSync('cp', ['-a', src, dst]);
  const cfg = join(dst, 'config.json');
  const text = readFileSync(cfg, 'utf8');
  writeFileSync(cfg, text.split(JSON.stringify(src).slice(1, -1)).join(JSON.stringify(dst).slice(1, -1)));
}

// --- Snapshots ------------------------------------------------------------------------

/** sha256 of every file in the sessions folders (seahorse.db and its -wal/-shm aside), by path relative to the home. */
export function sessionFiles(home: string, sessionsDirsRel: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of sessionsDirsRel) {
    const dir = join(home, rel);
    if (!existsSync(dir)) continue;
    for (const [p, b64] of snapshot(dir, (p) => /\/seahorse\.db(-wal|-shm|-journal)?$/.test(p))) {
      out.set(relative(home, p), createHash('sha256').update(b64).digest('hex'));
    }
  }
  return out;
}

export type Dump = Record<string, Record<string, unknown>[]>;

export function dump(dbPath: string): Dump {
  return dumpSeahorse(dbPath) as Dump;
}

/**
 * The database's content with ids replaced by what they stand for (a conversation by
 * its session key, a message by its key and rank), so two databases that hold the
 * same sessions compare equal whatever their AUTOINCREMENT history.
 */
export function normalizedDump(d: Dump): string {
  const convKey = new Map<number, string>();
  for (const c of d.conversations!) convKey.set(Number(c.conversation_id), String(c.session_key));
  const keyOf = (conv: unknown) => convKey.get(Number(conv)) ?? `<no conversation ${String(conv)}>`;
  const msgRef = new Map<number, string>();
  const rank = new Map<string, number>();
  for (const m of [...d.messages!].sort((a, b) => Number(a.message_id) - Number(b.message_id))) {
    const k = keyOf(m.conversation_id);
    const n = rank.get(k) ?? 0;
    rank.set(k, n + 1);
    msgRef.set(Number(m.message_id), `${k}#${n}`);
  }
  const ref = (id: unknown) =>
    id === null || id === undefined ? null : (msgRef.get(Number(id)) ?? `<no message ${Number(id)}>`);
  const sortRows = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.stringify(r)).sort();
  const out: Record<string, string[]> = {
    conversations: sortRows(d.conversations!.map(({ conversation_id: _c, ...r }) => r)),
    messages: sortRows(
      d.messages!.map(({ message_id, conversation_id, ...r }) => ({
        ref: ref(message_id),
        conv: keyOf(conversation_id),
        ...r,
      })),
    ),
    message_parts: sortRows(
      d.message_parts!.map(({ part_id: _p, message_id, ...r }) => ({ msg: ref(message_id), ...r })),
    ),
    summaries: sortRows(d.summaries!.map(({ conversation_id, ...r }) => ({ conv: keyOf(conversation_id), ...r }))),
    summary_parents: sortRows(d.summary_parents!),
    summary_messages: sortRows(d.summary_messages!.map(({ message_id, ...r }) => ({ msg: ref(message_id), ...r }))),
    context_items: sortRows(
      d.context_items!.map(({ conversation_id, message_id, ...r }) => ({
        conv: keyOf(conversation_id),
        msg: ref(message_id),
        ...r,
      })),
    ),
    messages_fts: sortRows(d.messages_fts!.map(({ message_id, ...r }) => ({ msg: ref(message_id), ...r }))),
    summaries_fts: sortRows(d.summaries_fts!),
  };
  return JSON.stringify(out);
}

/** Rows that point at nothing (a part without its message, a message without its conversation, ...). */
export function danglingRows(d: Dump): string[] {
  const convs = new Set(d.conversations!.map((r) => Number(r.conversation_id)));
  const msgs = new Set(d.messages!.map((r) => Number(r.message_id)));
  const sums = new Set(d.summaries!.map((r) => String(r.summary_id)));
  const out: string[] = [];
  for (const r of d.messages!)
    if (!convs.has(Number(r.conversation_id)))
      out.push(`messages ${String(r.message_id)} -> conversation ${String(r.conversation_id)}`);
  for (const r of d.message_parts!)
    if (!msgs.has(Number(r.message_id)))
      out.push(`message_parts ${String(r.part_id)} -> message ${Number(r.message_id)}`);
  for (const r of d.summaries!)
    if (!convs.has(Number(r.conversation_id)))
      out.push(`summaries ${String(r.summary_id)} -> conversation ${String(r.conversation_id)}`);
  for (const r of d.summary_messages!)
    if (!sums.has(String(r.summary_id)) || !msgs.has(Number(r.message_id)))
      out.push(`summary_messages ${String(r.summary_id)}/${String(r.message_id)}`);
  for (const r of d.summary_parents!)
    if (!sums.has(String(r.summary_id)) || !sums.has(String(r.parent_summary_id)))
      out.push(`summary_parents ${String(r.summary_id)}/${String(r.parent_summary_id)}`);
  for (const r of d.context_items!) {
    if (!convs.has(Number(r.conversation_id)))
      out.push(`context_items ${String(r.conversation_id)}/${String(r.ordinal)} -> conversation`);
    else if (r.message_id !== null && !msgs.has(Number(r.message_id)))
      out.push(`context_items ${String(r.conversation_id)}/${String(r.ordinal)} -> message ${Number(r.message_id)}`);
    else if (r.summary_id !== null && !sums.has(r.summary_id as string))
      out.push(`context_items ${String(r.conversation_id)}/${String(r.ordinal)} -> summary ${r.summary_id as string}`);
  }
  return out;
}

/**
 * Every row of a dump attributed to the conversation it belongs to, using the
 * pristine database's id → conversation maps (ids are never reused, and a prune
 * only deletes): rows per conversation, as sorted `table:json` strings.
 */
class RowIndex {
  readonly msgConv = new Map<number, number>();
  readonly sumConv = new Map<string, number>();
  constructor(pristine: Dump) {
    for (const m of pristine.messages!) this.msgConv.set(Number(m.message_id), Number(m.conversation_id));
    for (const s of pristine.summaries!) this.sumConv.set(String(s.summary_id), Number(s.conversation_id));
  }
  byConversation(d: Dump): { rows: Map<number, string[]>; unattributed: string[] } {
    const rows = new Map<number, string[]>();
    const unattributed: string[] = [];
    const add = (conv: number | undefined, table: string, r: Record<string, unknown>) => {
      const s = `${table}:${JSON.stringify(r)}`;
      if (conv === undefined || Number.isNaN(conv)) {
        unattributed.push(s);
        return;
      }
      const list = rows.get(conv);
      if (list) list.push(s);
      else rows.set(conv, [s]);
    };
    for (const r of d.conversations!) add(Number(r.conversation_id), 'conversations', r);
    for (const r of d.messages!) add(Number(r.conversation_id), 'messages', r);
    for (const r of d.message_parts!) add(this.msgConv.get(Number(r.message_id)), 'message_parts', r);
    for (const r of d.summaries!) add(Number(r.conversation_id), 'summaries', r);
    for (const r of d.summary_parents!)
      add(
        this.sumConv.get(String(r.summary_id)) ?? this.sumConv.get(String(r.parent_summary_id)),
        'summary_parents',
        r,
      );
    for (const r of d.summary_messages!)
      add(this.sumConv.get(String(r.summary_id)) ?? this.msgConv.get(Number(r.message_id)), 'summary_messages', r);
    for (const r of d.context_items!) add(Number(r.conversation_id), 'context_items', r);
    for (const r of d.messages_fts!) add(this.msgConv.get(Number(r.message_id)), 'messages_fts', r);
    for (const r of d.summaries_fts!) add(this.sumConv.get(String(r.summary_id)), 'summaries_fts', r);
    for (const list of rows.values()) list.sort();
    return { rows, unattributed };
  }
}

type ConvState = 'full' | 'partial' | 'gone' | 'altered';

function convState(before: string[] | undefined, after: string[] | undefined): ConvState {
  const b = before ?? [];
  const a = after ?? [];
  if (a.length === 0) return b.length === 0 ? 'full' : 'gone';
  if (a.length === b.length && a.every((x, i) => x === b[i])) return 'full';
  const have = new Set(b);
  return a.every((x) => have.has(x)) ? 'partial' : 'altered';
}

// --- The fixture: pristine home, plan, expected end state ----------------------------

export interface VictimMember {
  agent: string;
  key: string | null;
  /** Paths relative to the home; null when the pristine home has no such file. */
  jsonl: string | null;
  meta: string | null;
}

export interface VictimGroup {
  id: string;
  members: VictimMember[];
  conversations: number[];
  reason: string;
}

export interface CrashFixture {
  dir: string;
  pristine: string;
  sample: SampleHome;
  sessionsDirsRel: string[];
  dbRel: string;
  /** Policy flags every pass of the run uses. */
  policyArgs: string[];
  stableUntil: number;
  plan: PruneJson;
  victims: VictimGroup[];
  deletedOrphans: number[];
  /** Files of sessions the plan deletes (relative paths). */
  victimFiles: Set<string>;
  pristineFiles: Map<string, string>;
  pristineDump: Dump;
  pristineRows: Map<number, string[]>;
  index: RowIndex;
  /** Conversations the plan keeps. */
  keptConversations: number[];
  expectedFiles: Map<string, string>;
  expectedDb: string;
  reference: {
    wallMs: number;
    walEvents: number;
    unlinkEvents: number;
    durationMs: number;
    longestWriteMs: number | null;
    transactions: number | null;
    vacuum: boolean;
    deletedSessions: number;
    deletedOrphans: number;
  };
}

export interface FixtureOptions extends Omit<StableHomeOptions, 'dir'> {
  dir: string;
  /** max_sessions = this share of the groups the age check keeps (so the count check deletes too). */
  keepShare?: number;
}

function metaAliases(path: string): string[] {
  try {
    const m = JSON.parse(readFileSync(path, 'utf8')) as { aliases?: unknown };
    return Array.isArray(m.aliases) ? m.aliases.filter((a): a is string => typeof a === 'string') : [];
  } catch {
    return [];
  }
}

export async function prepareCrashFixture(o: FixtureOptions): Promise<CrashFixture> {
  mkdirSync(o.dir, { recursive: true });
  const stable = buildStableHome(o);
  const { sample } = stable;
  const pristine = sample.home;
  const sessionsDirsRel = sample.agents.map((a) => relative(pristine, a.sessionsDir));
  const dirOfAgent = new Map(sample.agents.map((a) => [a.id, relative(pristine, a.sessionsDir)]));
  const dbRel = relative(pristine, sample.seahorsePath!);
  const agentIds = sample.agents.map((a) => a.id);

  // max_sessions: a share of what the age check keeps, so both checks delete.
  const ageOnly = cliJson([
    'prune',
    '--home',
    pristine,
    '--json',
    '--max-age-days',
    String(stable.maxAgeDays),
    '--max-sessions',
    '0',
    '--max-db-size-mb',
    '0',
  ]).report;
  const keptGroups = new Set(
    ageOnly.sessions.filter((s) => s.action === 'keep').map((s) => s.group ?? `${s.agent}/${s.file}`),
  ).size;
  const maxSessions = Math.max(1, Math.floor(keptGroups * (o.keepShare ?? 0.7)));
  const policyArgs = [
    '--max-age-days',
    String(stable.maxAgeDays),
    '--max-sessions',
    String(maxSessions),
    '--max-db-size-mb',
    '0',
  ];
  const plan = cliJson(['prune', '--home', pristine, '--json', ...policyArgs]).report;
  if (plan.skipped) throw new Error(`the dry-run was skipped: ${plan.skipped}`);

  const pristineFiles = sessionFiles(pristine, sessionsDirsRel);
  const pristineDump = dump(join(pristine, dbRel));
  const index = new RowIndex(pristineDump);
  const pristineRows = index.byConversation(pristineDump).rows;
  const convByKey = new Map<string, number>();
  for (const c of pristineDump.conversations!) convByKey.set(String(c.session_key), Number(c.conversation_id));

  const groups = new Map<string, VictimGroup>();
  const victimFiles = new Set<string>();
  for (const s of plan.sessions) {
    if (s.action !== 'delete') continue;
    const id = s.group ?? `${s.agent}/${s.file}`;
    const dirRel = dirOfAgent.get(s.agent);
    if (!dirRel) throw new Error(`the plan names agent ${s.agent}, which the sample home does not have`);
    const jsonl = join(dirRel, `${s.file}.jsonl`);
    const meta = join(dirRel, `${s.file}.meta.json`);
    const m: VictimMember = {
      agent: s.agent,
      key: s.key,
      jsonl: pristineFiles.has(jsonl) ? jsonl : null,
      meta: pristineFiles.has(meta) ? meta : null,
    };
    if (m.jsonl) victimFiles.add(m.jsonl);
    if (m.meta) victimFiles.add(m.meta);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { id, members: [], conversations: [], reason: s.reason }));
    g.members.push(m);
    const keys = [s.key, ...metaAliases(join(pristine, meta)).filter((a) => !isMainAlias(a, agentIds))];
    for (const k of keys) {
      const c = k === null ? undefined : convByKey.get(k);
      if (c !== undefined && !g.conversations.includes(c)) g.conversations.push(c);
    }
  }
  const victims = [...groups.values()];
  const deletedOrphans = plan.orphans.filter((x) => x.action === 'delete').map((x) => x.conversation_id);
  const doomed = new Set([...victims.flatMap((g) => g.conversations), ...deletedOrphans]);
  const keptConversations = pristineDump
    .conversations!.map((c) => Number(c.conversation_id))
    .filter((c) => !doomed.has(c));

  const fx: CrashFixture = {
    dir: o.dir,
    pristine,
    sample,
    sessionsDirsRel,
    dbRel,
    policyArgs,
    stableUntil: stable.stableUntil,
    plan,
    victims,
    deletedOrphans,
    victimFiles,
    pristineFiles,
    pristineDump,
    pristineRows,
    index,
    keptConversations,
    expectedFiles: new Map(),
    expectedDb: '',
    reference: {
      wallMs: 0,
      walEvents: 0,
      unlinkEvents: 0,
      durationMs: 0,
      longestWriteMs: null,
      transactions: null,
      vacuum: false,
      deletedSessions: 0,
      deletedOrphans: 0,
    },
  };

  // The uninterrupted pass on a copy: the expected end state, and the calibration.
  const ref = join(o.dir, 'reference');
  copyHome(pristine, ref);
  const run = await runApply(fx, ref, join(o.dir, 'reference-state'), null);
  if (run.signal || !run.report)
    throw new Error(
      `the uninterrupted reference pass failed (${run.signal ?? run.code}): ${run.stderr.slice(0, 2000)}`,
    );
  const r = run.report;
  if (r.exit_code !== 0)
    throw new Error(
      `the uninterrupted reference pass exited ${r.exit_code}: ${r.skipped ?? JSON.stringify(r.sessions.filter((s) => s.detail))}`,
    );
  const planned = plan.sessions
    .filter((s) => s.action === 'delete')
    .map((s) => `${s.agent}/${s.file}`)
    .sort();
  const done = r.sessions
    .filter((s) => s.action === 'delete')
    .map((s) => `${s.agent}/${s.file}`)
    .sort();
  if (JSON.stringify(planned) !== JSON.stringify(done))
    throw new Error(
      `the uninterrupted pass did not delete exactly the dry-run's plan (${planned.length}` +
        ` planned, ${done.length} deleted)`,
    );
  const refDump = dump(join(ref, dbRel));
  const refConvs = new Set(refDump.conversations!.map((c) => Number(c.conversation_id)));
  const gone = pristineDump
    .conversations!.map((c) => Number(c.conversation_id))
    .filter((c) => !refConvs.has(c))
    .sort((a, b) => a - b);
  const expectGone = [...doomed].sort((a, b) => a - b);
  if (JSON.stringify(gone) !== JSON.stringify(expectGone))
    throw new Error(
      `the uninterrupted pass deleted conversations ${JSON.stringify(gone)}, the plan names ` +
        `${JSON.stringify(expectGone)}`,
    );
  fx.expectedFiles = sessionFiles(ref, sessionsDirsRel);
  fx.expectedDb = normalizedDump(refDump);
  fx.reference = {
    wallMs: run.wallMs,
    walEvents: run.events.wal,
    unlinkEvents: run.events.unlink,
    durationMs: r.duration_ms,
    longestWriteMs: r.database.longest_write_ms,
    transactions: r.database.transactions,
    vacuum: r.database.vacuum?.ran ?? false,
    deletedSessions: r.totals.deleted_sessions,
    deletedOrphans: r.totals.deleted_orphan_conversations,
  };
  rmSync(ref, { recursive: true, force: true });
  return fx;
}

// --- One pass as a subprocess, optionally killed --------------------------------------

/** Passes still running when a run is abandoned (a failed assertion, a test timeout). */
const passes = new Set<ReturnType<typeof spawn>>();

/** SIGKILL every pass this module started that is still running. */
export function killRunningPasses(): void {
  for (const c of passes) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  passes.clear();
}

export type KillAt = { mode: 'delay'; ms: number } | { mode: 'wal'; nth: number } | { mode: 'unlink'; nth: number };

export interface PassRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  killed: boolean;
  wallMs: number;
  stdout: string;
  stderr: string;
  report: PruneJson | null;
  events: { wal: number; unlink: number };
}

/**
 * `prune --apply` on a home as a real subprocess. The sessions folders are watched
 * (inotify): writes to seahorse.db-wal and unlinks of session files are counted,
 * and `kill` may fire SIGKILL at the Nth of either, or after a delay.
 */
export function runApply(
  fx: Pick<CrashFixture, 'sessionsDirsRel' | 'policyArgs'>,
  home: string,
  stateDir: string,
  kill: KillAt | null,
  timeoutMs = 600_000,
): Promise<PassRun> {
  return new Promise((resolve, reject) => {
    const events = { wal: 0, unlink: 0 };
    const watchers: FSWatcher[] = [];
    let killed = false;
    let child: ReturnType<typeof spawn> | null = null;
    const fire = () => {
      if (!killed && child && child.exitCode === null && child.signalCode === null) {
        killed = child.kill('SIGKILL');
      }
    };
    for (const rel of fx.sessionsDirsRel) {
      const dir = join(home, rel);
      watchers.push(
        watch(dir, (event, name) => {
          if (!name) return;
          if (name === 'seahorse.db-wal' && event === 'change') {
            events.wal++;
            if (kill?.mode === 'wal' && events.wal >= kill.nth) fire();
          } else if (event === 'rename' && (name.endsWith('.jsonl') || name.endsWith('.meta.json'))) {
            events.unlink++;
            if (kill?.mode === 'unlink' && events.unlink >= kill.nth) fire();
          }
        }),
      );
    }
    assertBuilt();
    const t0 = performance.now();
    child = spawn(
      process.execPath,
      [CLI_PATH, 'prune', '--apply', '--json', '--home', home, '--state-dir', stateDir, ...fx.policyArgs],
      { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const me = child;
    passes.add(me);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timers: NodeJS.Timeout[] = [];
    if (kill?.mode === 'delay') timers.push(setTimeout(fire, kill.ms));
    timers.push(
      setTimeout(() => {
        fire();
        stderr += `\n[harness] pass killed after the ${timeoutMs} ms safety timeout`;
      }, timeoutMs),
    );
    child.on('error', (err) => {
      for (const t of timers) clearTimeout(t);
      for (const w of watchers) w.close();
      reject(err);
    });
    child.on('close', (code, signal) => {
      passes.delete(me);
      const wallMs = performance.now() - t0;
      for (const t of timers) clearTimeout(t);
      for (const w of watchers) w.close();
      let report: PruneJson | null = null;
      if (!signal) {
        try {
          report = JSON.parse(stdout) as PruneJson;
        } catch {
          report = null;
        }
      }
      resolve({ code, signal, killed: signal === 'SIGKILL', wallMs, stdout, stderr, report, events });
    });
  });
}

// --- Checks after a kill ---------------------------------------------------------------

export type Phase =
  | 'completed'
  | 'before-deleting'
  | 'seahorse-rows'
  | 'file-unlinks'
  | 'between-sessions'
  | 'orphan-conversations'
  | 'after-deleting';

export interface Inspection {
  failures: string[];
  phase: Phase | 'unclear';
  deletedGroups: number;
}

/**
 * The state a killed pass left, against the plan:
 * (a) every kept session's files byte-identical and its rows (FTS included) row-identical;
 * (b) integrity_check ok, FTS tables exactly the rows of the remaining messages/summaries, no dangling rows;
 * (c) each victim in an allowed state: files all present (rows full, partly or wholly
 *     deleted), or rows wholly gone with the .jsonl gone before the .meta.json.
 */
export function inspectAfterKill(fx: CrashFixture, home: string, completed: boolean): Inspection {
  const failures: string[] = [];
  const files = sessionFiles(home, fx.sessionsDirsRel);
  for (const [rel, h] of fx.pristineFiles) {
    const now = files.get(rel);
    if (fx.victimFiles.has(rel)) {
      if (now !== undefined && now !== h) failures.push(`(a) victim file ${rel} was modified, not deleted`);
    } else if (now === undefined) failures.push(`(a) kept file ${rel} is missing`);
    else if (now !== h) failures.push(`(a) kept file ${rel} changed`);
  }
  for (const rel of files.keys())
    if (!fx.pristineFiles.has(rel)) failures.push(`unexpected file ${rel} in a sessions folder`);

  const dbPath = join(home, fx.dbRel);
  const integ = integrity(dbPath);
  if (integ.ok !== 'ok') failures.push(`(b) integrity_check: ${integ.ok}`);
  if (!integ.ftsMessagesMatch) failures.push('(b) messages_fts does not hold exactly the remaining messages');
  if (!integ.ftsSummariesMatch) failures.push('(b) summaries_fts does not hold exactly the remaining summaries');
  const d = dump(dbPath);
  const dangling = danglingRows(d);
  if (dangling.length > 0)
    failures.push(`(b) ${dangling.length} dangling rows, e.g. ${dangling.slice(0, 3).join('; ')}`);
  const { rows, unattributed } = fx.index.byConversation(d);
  if (unattributed.length > 0)
    failures.push(
      `(b) ${unattributed.length} rows that were not in the pristine database, e.g. ${unattributed[0]!.slice(0, 200)}`,
    );
  for (const c of fx.keptConversations) {
    const st = convState(fx.pristineRows.get(c), rows.get(c));
    if (st !== 'full') failures.push(`(a) kept conversation ${c} is ${st}`);
  }

  // (c) victims.
  const inProgress: { g: VictimGroup; filesGone: boolean }[] = [];
  let deletedGroups = 0;
  let intactGroups = 0;
  for (const g of fx.victims) {
    const states = g.conversations.map((c) => convState(fx.pristineRows.get(c), rows.get(c)));
    for (const [i, st] of states.entries())
      if (st === 'altered')
        failures.push(
          `(c) conversation ${g.conversations[i]} of victim ${g.id} holds rows that differ from the pristine ones`,
        );
    const rowsFull = states.every((s) => s === 'full');
    const rowsGone = states.every((s) => s === 'gone');
    let anyFileGone = false;
    let allFilesGone = true;
    let halfMembers = 0;
    for (const m of g.members) {
      const j = m.jsonl ? files.has(m.jsonl) : false;
      const mt = m.meta ? files.has(m.meta) : false;
      if ((m.jsonl && !j) || (m.meta && !mt)) anyFileGone = true;
      if (j || mt) allFilesGone = false;
      if (m.jsonl && m.meta && j && !mt)
        failures.push(`(c) victim ${m.key ?? m.jsonl}: .meta.json deleted while its .jsonl remains`);
      if (m.jsonl && m.meta && !j && mt) halfMembers++;
    }
    if (anyFileGone && !rowsGone)
      failures.push(`(c) victim ${g.id}: a session file is gone while seahorse rows remain (${states.join(',')})`);
    if (halfMembers > 1) failures.push(`(c) victim ${g.id}: ${halfMembers} members half-deleted at once`);
    if (rowsFull && !anyFileGone) intactGroups++;
    else if (rowsGone && allFilesGone) deletedGroups++;
    else inProgress.push({ g, filesGone: anyFileGone });
  }
  if (inProgress.length > 1)
    failures.push(
      `(c) ${inProgress.length} victims are half-deleted at once (${inProgress
        .slice(0, 3)
        .map((x) => x.g.id)
        .join(', ')})`,
    );
  const orphanStates = fx.deletedOrphans.map((c) => convState(fx.pristineRows.get(c), rows.get(c)));
  for (const [i, st] of orphanStates.entries())
    if (st === 'altered')
      failures.push(`(c) orphan conversation ${fx.deletedOrphans[i]} holds rows that differ from the pristine ones`);

  let phase: Inspection['phase'];
  if (completed) phase = 'completed';
  else if (inProgress.length === 1) phase = inProgress[0]!.filesGone ? 'file-unlinks' : 'seahorse-rows';
  else if (inProgress.length > 1) phase = 'unclear';
  else if (deletedGroups === 0 && orphanStates.every((s) => s === 'full')) phase = 'before-deleting';
  else if (intactGroups > 0) phase = 'between-sessions';
  else if (orphanStates.some((s) => s !== 'gone')) phase = 'orphan-conversations';
  else phase = 'after-deleting';
  return { failures, phase, deletedGroups };
}

/** (d) after a complete pass: the same session files and the same seahorse content as the uninterrupted pass left. */
export function checkConverged(fx: CrashFixture, home: string): string[] {
  const failures: string[] = [];
  const files = sessionFiles(home, fx.sessionsDirsRel);
  const fileFailures: string[] = [];
  for (const [rel, h] of fx.expectedFiles) {
    const now = files.get(rel);
    if (now === undefined) fileFailures.push(`(d) ${rel} is missing after the recovery pass`);
    else if (now !== h) fileFailures.push(`(d) ${rel} differs after the recovery pass`);
  }
  for (const rel of files.keys())
    if (!fx.expectedFiles.has(rel))
      fileFailures.push(`(d) ${rel} remains after the recovery pass (the uninterrupted pass deleted it)`);
  failures.push(...fileFailures.slice(0, 5));
  if (fileFailures.length > 5)
    failures.push(
      `(d) ... and ${fileFailures.length - 5} more session files differ from the uninterrupted pass's result`,
    );
  const dbPath = join(home, fx.dbRel);
  const integ = integrity(dbPath);
  if (integ.ok !== 'ok' || !integ.ftsMessagesMatch || !integ.ftsSummariesMatch)
    failures.push(
      `(d) after the recovery pass: integrity ${integ.ok}, fts messages ${integ.ftsMessagesMatch}` +
        `, fts summaries ${integ.ftsSummariesMatch}`,
    );
  const d = dump(dbPath);
  if (normalizedDump(d) !== fx.expectedDb) {
    const want = JSON.parse(fx.expectedDb) as Record<string, string[]>;
    const got = JSON.parse(normalizedDump(d)) as Record<string, string[]>;
    for (const t of Object.keys(want)) {
      const w = new Set(want[t]);
      const g = new Set(got[t]);
      const extra = [...g].filter((x) => !w.has(x));
      const missing = [...w].filter((x) => !g.has(x));
      if (extra.length || missing.length)
        failures.push(
          `(d) ${t}: ${extra.length} rows more and ${missing.length} fewer than after the uninterrupted pass, e.g. ` +
            `${(extra[0] ?? missing[0] ?? '').slice(0, 200)}`,
        );
    }
  }
  return failures;
}

// --- The run ---------------------------------------------------------------------------

export interface KillResult {
  i: number;
  kill: KillAt;
  killed: boolean;
  killWallMs: number;
  phase: Inspection['phase'];
  deletedGroupsAtKill: number;
  recoveryExit: number | null;
  recoveryDeleted: number;
  failures: string[];
}

export interface CrashRun {
  fixture: CrashFixture;
  results: KillResult[];
  failures: string[];
  phases: Record<string, number>;
  setupMs: number;
  killsMs: number;
}

export interface CrashRunOptions extends FixtureOptions {
  kills: number;
  /** Called after each kill (progress for the soak). */
  onKill?: (r: KillResult) => void;
  /** Keep the home of a failed kill for inspection (the soak); default: delete. */
  keepFailed?: boolean;
}

/** Where to kill, in turn: after a delay anywhere in the pass, at the Nth seahorse write, at the Nth unlink. */
export function chooseKill(rng: Rng, fx: CrashFixture, i: number): KillAt {
  const ref = fx.reference;
  const mode = (['delay', 'wal', 'unlink'] as const)[i % 3]!;
  // Event counts vary a little from run to run (inotify merges some): stay below the reference's.
  if (mode === 'wal' && ref.walEvents > 0)
    return { mode, nth: rng.int(1, Math.max(1, Math.floor(ref.walEvents * 0.9))) };
  if (mode === 'unlink' && ref.unlinkEvents > 0)
    return { mode, nth: rng.int(1, Math.max(1, Math.floor(ref.unlinkEvents * 0.95))) };
  // Anywhere from process start to a little past the reference's end (VACUUM, report).
  return { mode: 'delay', ms: Math.round(rng.next() * ref.wallMs * 1.05) };
}

export async function killOnce(fx: CrashFixture, i: number, kill: KillAt, keepFailed = false): Promise<KillResult> {
  if (Date.now() > fx.stableUntil)
    throw new Error('the run outlived the window in which its age policy is stable; give it a longer stableForMs');
  const home = join(fx.dir, `kill-${i}`);
  const state = join(fx.dir, `kill-${i}-state`);
  copyHome(fx.pristine, home);
  const failures: string[] = [];
  const run = await runApply(fx, home, state, kill);
  const completed = !run.signal;
  if (completed && (run.code !== 0 || !run.report))
    failures.push(`the pass was not killed and exited ${run.code}: ${run.stderr.slice(0, 500)}`);
  const seen = inspectAfterKill(fx, home, completed);
  failures.push(...seen.failures);
  const rec = await runApply(fx, home, state, null);
  if (rec.signal || !rec.report)
    failures.push(`the recovery pass died (${rec.signal ?? rec.code}): ${rec.stderr.slice(0, 500)}`);
  else if (rec.report.exit_code !== 0)
    failures.push(
      `the recovery pass exited ${rec.report.exit_code}: ${
        rec.report.skipped ??
        rec.report.sessions
          .filter((s) => s.detail)
          .map((s) => `${s.key}: ${s.detail}`)
          .slice(0, 3)
          .join('; ')
      }`,
    );
  failures.push(...checkConverged(fx, home));
  const res: KillResult = {
    i,
    kill,
    killed: run.killed,
    killWallMs: Math.round(run.wallMs),
    phase: seen.phase,
    deletedGroupsAtKill: seen.deletedGroups,
    recoveryExit: rec.report?.exit_code ?? null,
    recoveryDeleted: rec.report?.totals.deleted_sessions ?? 0,
    failures,
  };
  if (failures.length === 0 || !keepFailed) {
    rmSync(home, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
  return res;
}

export async function runCrashHarness(o: CrashRunOptions): Promise<CrashRun> {
  const t0 = performance.now();
  const fixture = await prepareCrashFixture(o);
  const setupMs = performance.now() - t0;
  const rng = new Rng(o.seed * 7919 + 1);
  const results: KillResult[] = [];
  const t1 = performance.now();
  for (let i = 0; i < o.kills; i++) {
    const r = await killOnce(fixture, i, chooseKill(rng, fixture, i), o.keepFailed);
    results.push(r);
    o.onKill?.(r);
  }
  const phases: Record<string, number> = {};
  for (const r of results) phases[r.phase] = (phases[r.phase] ?? 0) + 1;
  return {
    fixture,
    results,
    failures: results.flatMap((r) =>
      r.failures.map((f) => `kill ${r.i} (${JSON.stringify(r.kill)}, ${r.phase}): ${f}`),
    ),
    phases,
    setupMs,
    killsMs: performance.now() - t1,
  };
}
