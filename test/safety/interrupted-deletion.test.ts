import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/io/sqlite.js';
import { NO_GUARD_CONFIG, assertBuilt } from '../support/cli.js';
import { repoRoot } from '../support/crash.js';
import { addConversation, dumpSeahorse, handHome, snapshot, type HandSession } from '../support/home.js';
import { tempDir } from '../support/tmp.js';

/**
 * a deletion interrupted at any step is finished, not redone.
 *
 * Invariant: a pass SIGKILLed at any step of the deleter (before a session's seahorse rows, before
 * its .jsonl, before its .meta.json, or after it but before its journal is cleared; before an orphan's
 * or a shared conversation's rows, or after them but before its journal is cleared), followed by one
 * complete pass, leaves exactly what one uninterrupted pass leaves: the same session files, the same
 * seahorse rows, the same archives (one per deleted session: never a second archive of a remainder,
 * which is what main made of a meta left without its .jsonl), and no journal.
 *
 * The kill is exact: dev/kill-at-step.ts runs the pass in its own process with a step hook that
 * SIGKILLs it at the Nth step (a function given to the pass, not an environment variable).
 */
const NOW = Date.parse('2026-11-30T12:00:00Z');
const DAY = 86_400_000;
const KILLER = join(repoRoot(), 'dist', 'dev', 'kill-at-step.js');

interface Shape {
  kept: number;
  victims: number;
  /** Victims with seahorse rows (a bitmask over the victims). */
  withRows: number;
  archive: boolean;
  /** Conversations no session claims, old enough to go by age. */
  orphans?: number;
  /** A conversation the first two victims both claim (an alias of each): it goes once both have. */
  shared?: boolean;
}

function build(dir: string, s: Shape): string {
  const home = join(dir, 'home');
  const sessions: HandSession[] = [];
  for (let i = 0; i < s.kept + s.victims; i++) {
    const old = i >= s.kept;
    const at = new Date(NOW - (old ? 40 + i : 1 + i) * DAY).toISOString();
    const claims = s.shared && old && i - s.kept < 2;
    sessions.push({
      key: `sk_v1_s${String(i).padStart(2, '0')}`,
      updated: at,
      lines: 3 + i,
      ...(claims ? { aliases: ['agent:main:shared'] } : {}),
    });
  }
  const { dbPath } = handHome(home, sessions);
  const db = new (sqlite())(dbPath);
  const sql = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  sessions.forEach((x, i) => {
    const victim = i - s.kept;
    if (victim < 0 || s.withRows & (1 << victim))
      addConversation(db, x.key, [
        x.updated!.slice(0, 19).replace('T', ' '),
        x.updated!.slice(0, 19).replace('T', ' '),
      ]);
  });
  for (let o = 0; o < (s.orphans ?? 0); o++)
    addConversation(db, `agent:main:gone:${o}`, [sql(NOW - (60 + o) * DAY), sql(NOW - (50 + o) * DAY)]);
  if (s.shared) addConversation(db, 'agent:main:shared', [sql(NOW - 90 * DAY), sql(NOW - 80 * DAY)]);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return home;
}

interface End {
  files: Map<string, string>;
  db: string;
  archives: string[];
  /** What the archives hold, all together: each session file and each seahorse row, once per archive that has it. */
  held: string[];
  journals: string[];
}

const ROW_ID: Record<string, string> = {
  conversations: 'conversation_id',
  messages: 'message_id',
  message_parts: 'part_id',
  summaries: 'summary_id',
};

function heldBy(archiveDir: string): string[] {
  const out: string[] = [];
  if (!existsSync(archiveDir)) return out;
  for (const name of readdirSync(archiveDir)) {
    const a = join(archiveDir, name);
    const entries = execFileSync('tar', ['-tzf', a], { encoding: 'utf8' }).split('\n');
    for (const e of entries) if (e.startsWith('session/')) out.push(e);
    if (!entries.includes('seahorse/rows.jsonl')) continue;
    for (const line of execFileSync('tar', ['-xzOf', a, 'seahorse/rows.jsonl'], { encoding: 'utf8' }).split('\n')) {
      if (!line) continue;
      const r = JSON.parse(line) as { table: string; row: Record<string, unknown> };
      const id = ROW_ID[r.table];
      out.push(`${r.table} ${id ? String(r.row[id]) : JSON.stringify(r.row)}`);
    }
  }
  return out.sort();
}

function run(root: string, s: Shape, nth: number): { killed: boolean; steps: number; stderr: string } {
  const r = spawnSync(
    process.execPath,
    [
      KILLER,
      JSON.stringify({
        home: join(root, 'home'),
        stateDir: join(root, 'state'),
        archive: s.archive ? join(root, 'archive') : null,
        nowMs: NOW,
        nth,
        flags: { max_age_days: 30, max_sessions: 0, max_db_size_mb: 0 },
      }),
    ],
    { encoding: 'utf8', env: { PATH: process.env.PATH, PICOCLAW_GUARD_CONFIG: NO_GUARD_CONFIG }, timeout: 60_000 },
  );
  if (r.signal === 'SIGKILL') return { killed: true, steps: nth, stderr: r.stderr };
  if (r.status !== 0) throw new Error(`kill-at-step exited ${r.status ?? r.signal}: ${r.stderr.slice(0, 800)}`);
  const out = JSON.parse(r.stdout) as { steps: number; exit: number; warnings: string[] };
  if (out.exit !== 0) throw new Error(`the pass ended with exit ${out.exit}: ${out.warnings.join(' | ')}`);
  return { killed: false, steps: out.steps, stderr: r.stderr };
}

function endState(root: string): End {
  const sessions = join(root, 'home', 'workspace', 'sessions');
  const files = new Map<string, string>();
  for (const [p, v] of snapshot(sessions, (p) => /seahorse\.db/.test(p))) files.set(p.slice(root.length), v);
  const archiveDir = join(root, 'archive');
  return {
    files,
    db: JSON.stringify(dumpSeahorse(join(sessions, 'seahorse.db'))),
    // An archive's name holds a tag of the home's path (each copy's own): left out.
    archives: existsSync(archiveDir)
      ? readdirSync(archiveDir)
          .map((n) => n.replace(/^(\w+\.\d+Z)_[0-9a-f]{8}_/, '$1_'))
          .sort()
      : [],
    held: heldBy(archiveDir),
    journals: existsSync(join(root, 'state'))
      ? readdirSync(join(root, 'state')).filter((n) => n.startsWith('deleting-'))
      : [],
  };
}

/**
 * `names`: the same archives by name. A shared conversation's claimant that a kill leaves behind owns the
 * conversation on the next pass, so it goes in that session's archive, not in one of its own: then only
 * what the archives hold is the same (every file and row once, none twice).
 */
function expectSame(got: End, want: End, what: string, names = true): void {
  expect([...got.files.keys()].sort(), `${what}: session files`).toEqual([...want.files.keys()].sort());
  for (const [p, v] of want.files) expect(got.files.get(p), `${what}: ${p}`).toBe(v);
  expect(got.db === want.db, `${what}: seahorse rows differ from the uninterrupted pass's`).toBe(true);
  if (names) expect(got.archives, `${what}: archives`).toEqual(want.archives);
  expect(got.held, `${what}: what the archives hold`).toEqual(want.held);
  expect(got.journals, `${what}: journal left`).toEqual([]);
}

/** The uninterrupted pass on a copy of pristine: its end state and how many steps it went through. */
function reference(pristine: string, s: Shape): { end: End; steps: number } {
  const root = tempDir('pcg-ref-');
  cpSync(pristine, root, { recursive: true });
  const r = run(root, s, 0);
  return { end: endState(root), steps: r.steps };
}

function killThenRecover(pristine: string, s: Shape, nth: number): End {
  const root = tempDir('pcg-kill-');
  cpSync(pristine, root, { recursive: true });
  const k = run(root, s, nth);
  expect(k.killed, `the pass was not killed at step ${nth}`).toBe(true);
  run(root, s, 0);
  const end = endState(root);
  rmSync(root, { recursive: true, force: true });
  return end;
}

describe('a deletion interrupted at any step is finished, not redone', () => {
  it('a kill at every step of every deletion, then one pass: the state one uninterrupted pass leaves', () => {
    assertBuilt();
    const s: Shape = { kept: 2, victims: 3, withRows: 0b101, archive: true };
    const pristine = tempDir('pcg-pristine-');
    build(pristine, s);
    const ref = reference(pristine, s);
    // 3 victims: the rows of two, then each one's .jsonl, .meta.json and end.
    expect(ref.steps).toBe(2 + 3 * 3);
    expect(ref.end.archives).toHaveLength(3);
    for (let nth = 1; nth <= ref.steps; nth++)
      expectSame(killThenRecover(pristine, s, nth), ref.end, `kill at step ${nth}`);
  }, 180_000);

  it("a kill at every step of an orphan's and a shared conversation's deletion: finished, never archived again", () => {
    assertBuilt();
    const s: Shape = { kept: 1, victims: 2, withRows: 0, archive: true, orphans: 2, shared: true };
    const pristine = tempDir('pcg-pristine-');
    build(pristine, s);
    const ref = reference(pristine, s);
    // 2 victims without rows of their own (.jsonl, .meta.json and end each), 2 orphans and the shared
    // conversation (before its rows, and once they are gone, each).
    expect(ref.steps).toBe(2 * 3 + 3 * 2);
    expect(ref.end.archives).toHaveLength(2 + 2 + 1);
    for (let nth = 1; nth <= ref.steps; nth++)
      expectSame(killThenRecover(pristine, s, nth), ref.end, `kill at step ${nth}`, false);
  }, 180_000);

  it('property: any home shape, archive or not, a kill at any step converges', () => {
    assertBuilt();
    fc.assert(
      fc.property(
        fc.record({
          // At least one recent session: with none, the planner keeps the newest of the old ones.
          kept: fc.integer({ min: 1, max: 3 }),
          victims: fc.integer({ min: 1, max: 4 }),
          withRows: fc.integer({ min: 0, max: 15 }),
          archive: fc.boolean(),
          orphans: fc.integer({ min: 0, max: 2 }),
          shared: fc.boolean(),
        }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (s, at) => {
          const pristine = tempDir('pcg-pristine-');
          build(pristine, s);
          const ref = reference(pristine, s);
          const nth = 1 + Math.min(ref.steps - 1, Math.floor(at * ref.steps));
          expectSame(
            killThenRecover(pristine, s, nth),
            ref.end,
            `${JSON.stringify(s)}, kill at step ${nth}`,
            !s.shared,
          );
          rmSync(pristine, { recursive: true, force: true });
        },
      ),
      { numRuns: 8, seed: 2608 },
    );
  }, 240_000);
});
