import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqlite } from '../src/io/sqlite.js';
import {
  buildHome,
  CLI,
  cliEnv,
  fmtBytes,
  fmtInt,
  fmtMs,
  fmtRatio,
  fmtRss,
  fmtSpread,
  median,
  removeDir,
  runBenchScript,
  runOk,
  tempDir,
  type BenchContext,
  type BenchResult,
  type Table,
  type Verdict,
} from './lib.js';

/**
 * Items 2 and 3: deleting half of seahorse.db (20k, 50k and 200k messages) with the
 * guard's SeahorseDeleter beside PicoClaw's own per-row triggers on an identical copy,
 * then VACUUM: its time, what it gave back, and how close the guard's "would give back"
 * estimate was. The deletions run in child processes (bench/seahorse-worker.ts) so that
 * peak RSS is the kernel's figure for that work alone; a last `prune --apply` on the home
 * itself gives the same figures for the real command, end to end.
 *
 * Homes: 3 agents, 40 messages per session on average (so ~0.8 × 40 messages per
 * conversation: most sessions have a conversation), tool results of ~600 bytes, so the
 * average stored message is ~250 bytes, close to what real chat turns with tool calls store.
 * "Half" is the oldest half of the conversations by their newest message, which is what
 * an age or count pass deletes first.
 */

const SHAPE = { agents: 3, messagesPerSession: 40, toolResultBytes: 600, seahorse: true, spanDays: 120 } as const;
/** Messages that land in seahorse per session (alias and undated sessions have none, 90% of the rest do). */
const PER_SESSION = 40 * 0.7875;

interface GuardOut {
  totalMessages: number;
  victims: number;
  victimMessages: number;
  deletedMessages: number;
  messagesLeft: number;
  ftsRowsLeft: number;
  changed: number;
  prepareMs: number;
  deleteMs: number;
  transactions: number;
  longestTxnMs: number;
  vacuum: {
    before: { fileBytes: number; walBytes: number; pageCount: number; freelist: number; pageSize: number };
    afterFold: { pageCount: number; freelist: number };
    foldMs: number;
    vacuumMs: number;
    estimateBytes: number;
    wouldRun: boolean;
    after: { fileBytes: number; walBytes: number; pageCount: number };
    reportReclaimedBytes: number;
    logicalReclaimedBytes: number;
  } | null;
  /** The kernel's VmHWM at the end of each phase (kB). */
  hwmKb: {
    opened: number | null;
    prepared?: number | null;
    deleted?: number | null;
    folded?: number | null;
    vacuumed?: number | null;
  };
}

interface TriggerOut {
  totalMessages: number;
  victims: number;
  victimMessages: number;
  deletedMessages: number;
  conversationsDone: number;
  complete: boolean;
  ms: number;
  sample: { ms: number; messages: number } | null;
  predictedMs: number | null;
}

interface E2E {
  wallMs: number;
  rssKb: number | null;
  exit: number | null;
  durationMs: number;
  deletedSessions: number;
  deletedMessages: number | null;
  transactions: number | null;
  longestWriteMs: number | null;
  vacuum: {
    ran: boolean;
    reason: string;
    estimated_reclaim_bytes: number | null;
    reclaimed_bytes: number | null;
    duration_ms: number;
  } | null;
  bytesBefore: number;
  bytesAfter: number | null;
}

interface SizeFigures {
  target: number;
  messages: number;
  conversations: number;
  dbBytes: number;
  victims: number;
  victimMessages: number;
  guard: { run: GuardOut; rssKb: number | null; wallMs: number }[];
  triggers: (TriggerOut & { rssKb: number | null }) | null;
  e2e: E2E | null;
}

function removeDb(p: string): void {
  for (const s of ['', '-wal', '-shm', '-journal']) rmSync(p + s, { force: true });
}

/** The oldest half of the conversations by their newest message (ties by id). */
function pickVictims(dbPath: string): number[] {
  const Database = sqlite();
  const db = new Database(dbPath, { readonly: true });
  const rows = db
    .prepare(
      `SELECT c.conversation_id AS id FROM conversations c ORDER BY (SELECT MAX(m.created_at) ` +
        `FROM messages m WHERE m.conversation_id = c.conversation_id), c.conversation_id`,
    )
    .all() as { id: number }[];
  db.close();
  return rows.slice(0, Math.floor(rows.length / 2)).map((r) => r.id);
}

export async function run(ctx: BenchContext): Promise<BenchResult> {
  const t0 = performance.now();
  const sizes = ctx.quick ? [5000, 20_000] : [20_000, 50_000, 200_000];
  const guardRuns = Math.min(ctx.runs, 3);
  const sampleMs = ctx.quick ? 5000 : 20_000;
  const fullLimitMs = ctx.quick ? 30_000 : 300_000;
  const all: SizeFigures[] = [];
  const notes: string[] = [];

  for (const target of sizes) {
    ctx.log(`seahorse: ~${fmtInt(target)} messages`);
    const built = await buildHome(ctx, `sea-${target}`, { ...SHAPE, sessions: Math.round(target / PER_SESSION) });
    const work = join(built.home, '..');
    const pristine = join(work, 'pristine.db');
    copyFileSync(built.seahorsePath!, pristine);
    const victims = pickVictims(pristine);
    const victimsFile = join(work, 'victims.json');
    writeFileSync(victimsFile, JSON.stringify(victims));
    const fig: SizeFigures = {
      target,
      messages: built.messages,
      conversations: built.conversations,
      dbBytes: built.seahorseBytes,
      victims: victims.length,
      victimMessages: 0,
      guard: [],
      triggers: null,
      e2e: null,
    };

    // The guard's deletion (+ VACUUM), on fresh copies.
    for (let i = 0; i < guardRuns; i++) {
      const copy = join(work, 'guard.db');
      copyFileSync(pristine, copy);
      const { run: r, out } = await runBenchScript<GuardOut>('seahorse-worker.js', [
        'guard',
        copy,
        victimsFile,
        '--vacuum',
      ]);
      removeDb(copy);
      if (
        out.messagesLeft !== out.totalMessages - out.victimMessages ||
        out.ftsRowsLeft !== out.messagesLeft ||
        out.changed > 0
      ) {
        throw new Error(
          `guard deletion left ${out.messagesLeft} messages / ${out.ftsRowsLeft} FTS rows (expected ` +
            `${out.totalMessages - out.victimMessages}), ${out.changed} changed`,
        );
      }
      fig.victimMessages = out.victimMessages;
      fig.guard.push({ run: out, rssKb: r.rssKb, wallMs: r.wallMs });
      ctx.log(
        `    guard run ${i + 1}: ${fmtInt(out.deletedMessages)} messages in ${fmtMs(out.deleteMs)}` +
          ` (${((out.deleteMs * 1000) / out.deletedMessages).toFixed(0)} µs each), ` +
          `${out.transactions} txns, longest ${fmtMs(out.longestTxnMs)}; fold ${fmtMs(out.vacuum?.foldMs)}` +
          `, VACUUM ${fmtMs(out.vacuum?.vacuumMs)}; peak RSS ${fmtRss(r.rssKb)}`,
      );
      // One run is enough where a run takes minutes (the figure would not move much).
      if (out.deleteMs > 90_000) break;
    }

    // PicoClaw's per-row triggers on an identical copy.
    {
      const copy = join(work, 'triggers.db');
      copyFileSync(pristine, copy);
      const { run: r, out } = await runBenchScript<TriggerOut>('seahorse-worker.js', [
        'triggers',
        copy,
        victimsFile,
        '--sample-ms',
        String(sampleMs),
        '--full-limit-ms',
        String(fullLimitMs),
      ]);
      removeDb(copy);
      fig.triggers = { ...out, rssKb: r.rssKb };
      ctx.log(
        out.complete
          ? `    PicoClaw triggers: ${fmtInt(out.deletedMessages)} messages in ${fmtMs(out.ms)}` +
              `${out.predictedMs !== null ? ` (the model predicted ${fmtMs(out.predictedMs)} from the first ${fmtMs(out.sample!.ms)}` + `)` : ''}`
          : `    PicoClaw triggers: stopped after ${fmtMs(out.ms)} (${fmtInt(out.deletedMessages)}` +
              ` of ${fmtInt(out.victimMessages)} messages); the whole would take about ` +
              `${fmtMs(out.predictedMs)} (extrapolated)`,
      );
    }
    removeDb(pristine);

    // The real command on the home itself: the oldest half of the sessions by count.
    {
      const state = tempDir('sea-state');
      const r = await runOk(
        process.execPath,
        [
          CLI,
          'prune',
          '--apply',
          '--home',
          built.home,
          '--state-dir',
          state,
          '--json',
          '--max-sessions',
          String(Math.floor(built.sessions / 2)),
          '--max-age-days',
          '0',
          '--max-db-size-mb',
          '0',
        ],
        {
          env: cliEnv(state),
          capture: true,
          okCodes: [0, 7],
        },
      );
      const rep = JSON.parse(r.stdout) as {
        duration_ms: number;
        totals: { deleted_sessions: number; deleted_seahorse_messages: number | null };
        database: {
          bytes_before: number;
          bytes_after: number | null;
          longest_write_ms: number | null;
          transactions: number | null;
          vacuum: E2E['vacuum'];
        };
      };
      fig.e2e = {
        wallMs: r.wallMs,
        rssKb: r.rssKb,
        exit: r.code,
        durationMs: rep.duration_ms,
        deletedSessions: rep.totals.deleted_sessions,
        deletedMessages: rep.totals.deleted_seahorse_messages,
        transactions: rep.database.transactions,
        longestWriteMs: rep.database.longest_write_ms,
        vacuum: rep.database.vacuum,
        bytesBefore: rep.database.bytes_before,
        bytesAfter: rep.database.bytes_after,
      };
      ctx.log(
        `    prune --apply: ${fmtInt(rep.totals.deleted_sessions)} sessions, ${fmtInt(rep.totals.deleted_seahorse_messages)}` +
          ` messages in ${fmtMs(r.wallMs)}; longest write ${fmtMs(rep.database.longest_write_ms)}` +
          `; VACUUM ${rep.database.vacuum?.ran ? 'ran' : 'did not run'}; peak RSS ` +
          `${fmtRss(r.rssKb)}`,
      );
      removeDir(state, ctx);
    }
    removeDir(work, ctx);
    all.push(fig);
  }

  // ---- tables
  const gMed = (f: SizeFigures, pick: (g: GuardOut) => number) => median(f.guard.map((g) => pick(g.run)));
  const perMsg = (f: SizeFigures) => (gMed(f, (g) => g.deleteMs) * 1000) / f.victimMessages;
  const trigMs = (f: SizeFigures) =>
    f.triggers ? (f.triggers.complete ? f.triggers.ms : f.triggers.predictedMs!) : NaN;
  const trigLabel = (f: SizeFigures) =>
    f.triggers?.complete ? fmtMs(f.triggers.ms) : `≈${fmtMs(f.triggers?.predictedMs)} (extrapolated*)`;
  const tables: Table[] = [];
  tables.push({
    title: 'Deleting the oldest half of the conversations (guard: median of runs; PicoClaw: one run)',
    headers: [
      'messages',
      'seahorse.db',
      'deleted (convs / messages)',
      'guard',
      'guard per message',
      'guard txns / longest',
      'guard peak RSS',
      'PicoClaw triggers',
      'triggers per message',
      'guard faster by',
    ],
    right: [0, 1, 4, 6, 8, 9],
    rows: all.map((f) => [
      fmtInt(f.messages),
      fmtBytes(f.dbBytes),
      `${fmtInt(f.victims)} / ${fmtInt(f.victimMessages)}`,
      fmtSpread(f.guard.map((g) => g.run.deleteMs)) + (f.guard.length === 1 ? ' (1 run)' : ''),
      `${perMsg(f).toFixed(0)} µs`,
      `${fmtInt(gMed(f, (g) => g.transactions))} / ${fmtMs(Math.max(...f.guard.map((g) => g.run.longestTxnMs)))}`,
      fmtRss(Math.max(...f.guard.map((g) => g.rssKb ?? 0))),
      trigLabel(f),
      `${((trigMs(f) * 1000) / f.victimMessages).toFixed(0)} µs`,
      `${fmtRatio(trigMs(f) / gMed(f, (g) => g.deleteMs))}${f.triggers?.complete ? '' : '*'}`,
    ]),
    notes: [
      `guard = SeahorseDeleter as prune --apply uses it offline (500 ms transaction ` +
        `target, FTS rows by rowid, triggers dropped and recreated inside each ` +
        `transaction), ${guardRuns} runs on fresh copies (1 where a run takes over 90 s); its time includes ` +
        `prepare() (one read of the FTS content table).`,
      `PicoClaw triggers = deleteConversationWithTriggers (plain deletes, messages_ad ` +
        `scans the whole FTS table per row), one transaction per conversation, ` +
        `same victims, identical copy.`,
      `* extrapolated: the trigger path ran for ${fmtMs(sampleMs)} and was stopped because the whole would take more than ` +
        `${fmtMs(fullLimitMs)}; the rest is predicted with cost = c × Σ(FTS rows left at each deleted ` +
        `row), c fitted on that sample. The "model check" table shows how the same ` +
        `prediction did where the whole run was measured.`,
    ],
  });
  const checked = all.filter((f) => f.triggers?.complete && f.triggers.predictedMs !== null);
  if (checked.length > 0) {
    tables.push({
      title: 'Model check for the extrapolation (sizes where the trigger path ran to the end)',
      headers: ['messages', 'sample', 'predicted from the sample', 'measured', 'prediction / measured'],
      right: [0, 2, 3, 4],
      rows: checked.map((f) => [
        fmtInt(f.messages),
        `${fmtMs(f.triggers!.sample!.ms)} (${fmtInt(f.triggers!.sample!.messages)} messages)`,
        fmtMs(f.triggers!.predictedMs),
        fmtMs(f.triggers!.ms),
        fmtRatio(f.triggers!.predictedMs! / f.triggers!.ms),
      ]),
    });
  }
  tables.push({
    title:
      'The real command: prune --apply --max-sessions <half> --max-age-days 0 ' +
      '--max-db-size-mb 0 (gateway stopped: full pass with VACUUM), one run',
    headers: [
      'messages',
      'wall',
      'deleted sessions / messages',
      'write txns',
      'longest write',
      'VACUUM',
      'estimated / reclaimed',
      'VACUUM step',
      'peak RSS',
    ],
    right: [0, 1, 3, 4, 7, 8],
    rows: all.map((f) => {
      const e = f.e2e!;
      return [
        fmtInt(f.messages),
        fmtMs(e.wallMs),
        `${fmtInt(e.deletedSessions)} / ${fmtInt(e.deletedMessages)}`,
        fmtInt(e.transactions),
        fmtMs(e.longestWriteMs),
        e.vacuum ? (e.vacuum.ran ? 'ran' : 'not run') : '-',
        e.vacuum ? `${fmtBytes(e.vacuum.estimated_reclaim_bytes)} / ${fmtBytes(e.vacuum.reclaimed_bytes)}` : '-',
        fmtMs(e.vacuum?.duration_ms),
        fmtRss(e.rssKb),
      ];
    }),
    notes: [
      "reclaimed = the report's reclaimed_bytes: (file + WAL before the FTS merge) " +
        '− (file + WAL after), so it includes the WAL the deletions left.',
    ],
  });
  tables.push({
    title:
      "Where the guard's peak memory comes from: the kernel's high-water mark " +
      '(VmHWM) at the end of each phase of the child (first run)',
    headers: [
      'messages',
      'opened (Node + better-sqlite3)',
      'after prepare()',
      'after the deletions',
      'after FTS optimize',
      'after VACUUM',
      'peak RSS (GNU time)',
    ],
    right: [0, 1, 2, 3, 4, 5, 6],
    rows: all.map((f) => {
      const h = f.guard[0]!.run.hwmKb;
      return [
        fmtInt(f.messages),
        fmtRss(h.opened),
        fmtRss(h.prepared),
        fmtRss(h.deleted),
        fmtRss(h.folded),
        fmtRss(h.vacuumed),
        fmtRss(f.guard[0]!.rssKb),
      ];
    }),
    notes: [
      'Each column is the highest RSS so far, so a step up is what that phase ' +
        "added. prepare() holds a JS map of every victim's FTS rowids.",
    ],
  });
  tables.push({
    title: "VACUUM after the guard's deletion (the same databases; median time of the runs)",
    headers: [
      'messages',
      'file + WAL before',
      'FTS optimize',
      'VACUUM',
      'estimate (free pages after optimize)',
      'logical shrink',
      'estimate error',
      'file + WAL shrink',
      'guard would VACUUM',
      'file after',
    ],
    right: [0, 1, 2, 3, 4, 5, 6, 7, 9],
    rows: all.map((f) => {
      const v = f.guard[0]!.run.vacuum!;
      return [
        fmtInt(f.messages),
        `${fmtBytes(v.before.fileBytes)} + ${fmtBytes(v.before.walBytes)}`,
        fmtMs(median(f.guard.map((g) => g.run.vacuum!.foldMs))),
        fmtMs(median(f.guard.map((g) => g.run.vacuum!.vacuumMs))),
        fmtBytes(v.estimateBytes),
        fmtBytes(v.logicalReclaimedBytes),
        `${(((v.estimateBytes - v.logicalReclaimedBytes) / v.logicalReclaimedBytes) * 100).toFixed(1)}%`,
        fmtBytes(v.reportReclaimedBytes),
        v.wouldRun ? 'yes' : 'no',
        fmtBytes(v.after.fileBytes),
      ];
    }),
    notes: [
      'FTS optimize = foldFtsTombstones (merges the FTS5 b-trees so deleted entries ' +
        'become free pages); VACUUM = runVacuum (PASSIVE checkpoint, VACUUM, TRUNCATE ' +
        "checkpoint). Together they are the guard's VACUUM step.",
      'logical shrink = page_count × page_size after the optimize, minus the ' +
        'vacuumed file: what the estimate (freelist × page_size) predicts. file ' +
        '+ WAL shrink also counts the WAL the deletions left behind.',
      'The benchmark always runs the VACUUM to measure it; "guard would VACUUM" ' +
        "is the guard's rule (at least 1 MiB and a tenth of the file).",
    ],
  });

  // ---- verdicts
  const verdicts: Verdict[] = [];
  const last = all[all.length - 1]!;
  const first = all[0]!;
  const speed = trigMs(last) / gMed(last, (g) => g.deleteMs);
  verdicts.push({
    goal: `at least 20x faster than PicoClaw's triggers at ${fmtInt(last.messages)} messages`,
    status: speed >= 20 ? 'met' : 'missed',
    detail:
      `${fmtRatio(speed)}: guard ${fmtMs(gMed(last, (g) => g.deleteMs))}, triggers ` +
      `${last.triggers?.complete ? fmtMs(last.triggers.ms) : `≈${fmtMs(last.triggers?.predictedMs)} (extrapolated from a ${fmtMs(last.triggers?.sample?.ms)}` + ` sample)`}`,
  });
  const flat = perMsg(last) / perMsg(first);
  verdicts.push({
    goal: 'time per deleted message flat as the database grows',
    status: flat <= 1.5 ? 'met' : 'missed',
    detail:
      `${all.map((f) => `${perMsg(f).toFixed(0)} µs at ${fmtInt(f.messages)}`).join(', ')}` +
      `: ${fmtRatio(flat)} from the smallest to the largest (${fmtRatio(last.messages / first.messages)}` +
      ` the messages)`,
  });
  const peakGuard = Math.max(...all.flatMap((f) => f.guard.map((g) => g.rssKb ?? 0)));
  const peakCli = Math.max(...all.map((f) => f.e2e?.rssKb ?? 0));
  verdicts.push({
    goal: 'peak memory under 150 MB',
    status: Math.max(peakGuard, peakCli) < 150 * 1024 ? 'met' : 'missed',
    detail: `deletion + VACUUM child: ${fmtRss(peakGuard)}; whole prune --apply: ${fmtRss(peakCli)} (largest database)`,
  });
  const errs = all.map((f) => {
    const v = f.guard[0]!.run.vacuum!;
    return (v.estimateBytes - v.logicalReclaimedBytes) / v.logicalReclaimedBytes;
  });
  verdicts.push({
    goal: 'VACUUM: time and bytes reclaimed; accuracy of the "would give back" estimate',
    status: 'info',
    detail: all
      .map((f, i) => {
        const v = f.guard[0]!.run.vacuum!;
        return (
          `${fmtInt(f.messages)}: optimize + VACUUM ${fmtMs(v.foldMs + v.vacuumMs)}` +
          `, ${fmtBytes(v.logicalReclaimedBytes)} given back, estimate ${errs[i]! >= 0 ? '+' : ''}` +
          `${(errs[i]! * 100).toFixed(1)}%`
        );
      })
      .join('; '),
  });
  if (ctx.quick)
    notes.push(
      `--quick: ${sizes.map(fmtInt).join(' and ')} messages; the trigger path samples ` +
        `${fmtMs(sampleMs)} and runs to the end only under ${fmtMs(fullLimitMs)}` +
        `.`,
    );
  return {
    id: 'seahorse',
    item: 2,
    title: 'Deleting from seahorse is linear (item 2) and VACUUM (item 3)',
    command: 'npm run bench -- seahorse',
    tables,
    verdicts,
    notes,
    durationMs: performance.now() - t0,
    data: all,
  };
}
