import fc from 'fast-check';
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { errnoCode, GuardError } from '../../src/errors.js';
import {
  cutJournalSpec,
  journalPath as cutJournalPath,
  readJournal as readCutJournal,
} from '../../src/logs/journal.js';
import { writeJournal as writeCutJournal, type CutJournal } from '../../src/logs/journal.js';
import { readSamples, samplesFile, writeSamples, type BootstrapSample } from '../../src/state/bootstrap-samples.js';
import { CLOCK_CONFIRMED, clockConfirmedAt, clockSpec, recordClockConfirmed } from '../../src/state/clock-confirmed.js';
import {
  journalPath,
  journalSpec,
  readJournal,
  writeJournal,
  type DeletionJournal,
} from '../../src/state/deletion-journal.js';
import { appendHistory, historyFile, readHistory, type PruneHistoryEntry } from '../../src/state/history.js';
import { addHolds, holdsFile, readHolds, type Hold } from '../../src/state/holds.js';
import { markerPath, markerSpec, readMarker, writeMarker, type LastRunMarker } from '../../src/state/marker.js';
import { notifyFile, readNotifyState, writeNotifyState, type NotifyState } from '../../src/state/notify-state.js';
import { addPin, pinsFile, readPins, type Pin } from '../../src/state/pins.js';
import {
  estimatesFile,
  readSizeEstimate,
  writeSizeEstimate,
  type SizeEstimate,
} from '../../src/state/size-estimate.js';
import { readJsonFile, type ReadStatus } from '../../src/state/store.js';
import { latchFile, readLatch, updateLatch, type LatchRecord } from '../../src/state/uvlatch.js';
import { owedFile, readOwedVacuum, writeOwedVacuum, type OwedVacuum } from '../../src/state/vacuum-owed.js';
import { quietFile, readQuietRecord, writeQuietRecord, type QuietRecord } from '../../src/state/quiet-pass.js';
import { isRoot, requireRoot } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';

/**
 * The one contract every file in the guard's state folder keeps (src/state/store.ts), checked through
 * each module's own public functions, so that a module that read or wrote past the store would fail here:
 * - a value written reads back (any value: fast-check), and the folder holds that file and nothing new;
 * - a missing file is the empty value, with no problem and nothing created;
 * - a damaged file (not JSON, cut short) and a file that is not a regular one (a FIFO, a folder, a symlink
 *   to a FIFO) or cannot be read (no permission) never block and never crash the reader: the module
 *   refuses (GuardError, exit 3, naming the file: pins, holds, the journals), reports (the empty value and
 *   a problem naming the file: latch, notify state) or takes the empty value (caches and notes), as its
 *   table row says; the store's own read says `damaged` or `unreadable` with one line naming the file;
 * - a write killed half-way leaves the old value: a temp file left behind is never read, is not touched
 *   by a later write of another process, and one of this process's id is replaced;
 * - a write on a full disk fails with ENOSPC and leaves the old value and no temp file.
 */

const NOW = Date.UTC(2026, 11, 1, 12);
const HOME = '/h';

type Policy = 'refuse' | 'report' | 'empty';

interface Raw {
  status: ReadStatus;
  problem: string | null;
}

interface Case<T> {
  name: string;
  path(dir: string): string;
  sample: fc.Arbitrary<T>;
  /** Write through the module's API; a module that reports a write error instead of throwing returns it. */
  write(dir: string, v: T): string | null | void;
  /** Read through the module's API. */
  read(dir: string): unknown;
  /** What `read` returns after `write(v)` into an empty folder. */
  expected(v: T): unknown;
  empty: unknown;
  policy: Policy;
  /** The problem the module's API reports (policy `report`). */
  reported?(dir: string): string | null;
  /** The store's own read of the file. */
  raw(dir: string): Raw;
  /** An append-only lines file (no temp file on a plain append; a torn last line is no entry). */
  lines?: boolean;
}

const iso = (min: number, max: number) => fc.integer({ min, max }).map((ms) => new Date(ms).toISOString());
const word = fc.string({ minLength: 1, maxLength: 12 });
const PAST = Date.UTC(2020, 0, 1);
const FUTURE = Date.UTC(2030, 0, 1);

const pinArb: fc.Arbitrary<Pin> = fc.record({
  home: fc.constantFrom(HOME, '/other'),
  agent: fc.constantFrom('main', 'other'),
  key: word,
  pinned_at: iso(PAST, NOW),
  note: fc.option(fc.string({ maxLength: 20 }), { nil: null }),
});
const sameSession = (a: { home: string; agent: string; key: string }) => `${a.home}\0${a.agent}\0${a.key}`;

const holdArb: fc.Arbitrary<Hold> = fc.record({
  home: fc.constantFrom(HOME, '/other'),
  agent: fc.constantFrom('main', 'other'),
  key: word,
  restored_at: iso(PAST, NOW),
  until: iso(NOW + 1000, FUTURE),
});

const quietArb: fc.Arbitrary<QuietRecord> = fc.record({
  home: fc.constant(HOME),
  key: fc.string({ minLength: 1, maxLength: 64 }),
  stats: fc.array(fc.tuple(word, fc.oneof(fc.constant('absent'), word)), { maxLength: 6 }),
  at: iso(PAST, NOW),
  due_ms: fc.option(fc.integer({ min: NOW, max: FUTURE }), { nil: null }),
  sessions: fc.nat(5000),
  undated: fc.nat(50),
  displaced_by_undated: fc.nat(50),
  warnings: fc.array(fc.string({ maxLength: 30 }), { maxLength: 3 }),
});

const historyArb: fc.Arbitrary<PruneHistoryEntry> = fc.record({
  at: iso(PAST, NOW),
  home: fc.constantFrom(HOME, '/other'),
  mode: fc.constant('apply' as const),
  outcome: fc.constantFrom('ok' as const, 'partial' as const),
  deleted_sessions: fc.nat(1000),
  deleted_orphans: fc.nat(100),
  freed_bytes: fc.nat(),
  sessions_before: fc.nat(),
  sessions_after: fc.nat(),
  duration_ms: fc.nat(),
  reason: fc.option(fc.string({ maxLength: 30 }), { nil: null }),
});

const markerArb: fc.Arbitrary<LastRunMarker> = fc.record({
  home: fc.constant(HOME),
  finished_at: iso(PAST, NOW),
  outcome: fc.constantFrom('ok' as const, 'partial' as const),
  duration_ms: fc.nat(),
  deleted_sessions: fc.nat(),
});

const sampleArb: fc.Arbitrary<BootstrapSample> = fc.record({
  home: fc.constant(HOME),
  recorded_at: iso(PAST, NOW),
  source: fc.constantFrom('pre-start' as const, 'daemon' as const),
  sessions: fc.nat(100_000),
  jsonl_bytes: fc.nat(),
  db_bytes: fc.option(fc.nat(), { nil: null }),
  restart_started_at: fc.option(iso(PAST, NOW), { nil: null }),
  gap_seconds: fc.option(fc.nat(10_000), { nil: null }),
});

const level = fc.constantFrom('warn' as const, 'critical' as const);
const notifyArb: fc.Arbitrary<NotifyState> = fc.record({
  active: fc.dictionary(
    fc.stringMatching(/^[a-z_]{1,12}$/),
    fc.record({ level, code: word, message: fc.string(), since: iso(PAST, NOW), last_sent_at: iso(PAST, NOW) }),
    { maxKeys: 4 },
  ),
  outbox: fc.array(
    fc.record({
      id: word,
      message: fc.record({
        event: fc.constantFrom('raised' as const, 'cleared' as const, 'reminder' as const, 'test' as const),
        level: fc.constantFrom('ok' as const, 'warn' as const, 'critical' as const),
        code: word,
        message: fc.string(),
        time: iso(PAST, NOW),
      }),
      pending: fc.array(word, { maxLength: 3 }),
      created_at: iso(PAST, NOW),
    }),
    { minLength: 1, maxLength: 4 },
  ),
});

const DB = '/x/seahorse.db';
const estimateArb: fc.Arbitrary<SizeEstimate> = fc.record({
  db: fc.constant(DB),
  since: iso(PAST, NOW),
  estimated_bytes_after: fc.nat(),
  content_bytes: fc.nat(),
  reason: fc.string({ maxLength: 40 }),
});
const owedArb: fc.Arbitrary<OwedVacuum> = fc.record({
  db: fc.constant(DB),
  since: iso(PAST, NOW),
  estimated_bytes_after: fc.option(fc.nat(), { nil: null }),
  content_bytes: fc.option(fc.nat(), { nil: null }),
  reason: fc.string({ maxLength: 40 }),
});

const latchArb = fc.record({ bootId: fc.uuid(), at: fc.integer({ min: PAST, max: NOW }), source: word });

const journalArb: fc.Arbitrary<DeletionJournal> = fc.record({
  home: fc.constant(HOME),
  startedAt: iso(PAST, NOW),
  what: word,
  archives: fc.array(word, { maxLength: 2 }),
  files: fc.array(fc.record({ path: word, ino: fc.nat(), bytes: fc.nat(), mtimeMs: fc.nat() }), {
    minLength: 1,
    maxLength: 4,
  }),
  conversations: fc.array(fc.record({ id: fc.nat(), key: word, lastMessageId: fc.option(fc.nat(), { nil: null }) }), {
    maxLength: 3,
  }),
});

const cutArb: fc.Arbitrary<CutJournal> = fc
  .record({
    file: word,
    dev: fc.nat(),
    ino: fc.nat(),
    cut: fc.nat(1 << 20),
    extra: fc.nat(1 << 20),
    seq: fc.nat(100),
    part: word,
    fragment: fc.base64String({ maxLength: 40 }),
    head: fc.stringMatching(/^[0-9a-f]{64}$/),
    step: fc.constantFrom('start' as const, 'part' as const),
  })
  .map(({ extra, ...j }) => ({ version: 1 as const, ...j, end: j.cut + extra }));

const raw = (r: Raw): Raw => ({ status: r.status, problem: r.problem });

const CASES: Case<never>[] = [
  {
    name: 'pins (pins.json)',
    path: (d) => pinsFile.path(d),
    sample: fc.uniqueArray(pinArb, { selector: sameSession, minLength: 1, maxLength: 5 }),
    write: (d, pins: Pin[]) => void pins.forEach((p) => addPin(d, p)),
    read: (d) => readPins(d),
    expected: (pins: Pin[]) => pins,
    empty: [],
    policy: 'refuse',
    raw: (d) => raw(pinsFile.read(d)),
  } satisfies Case<Pin[]>,
  {
    name: 'restore holds (restore-holds.json)',
    path: (d) => holdsFile.path(d),
    sample: fc.uniqueArray(holdArb, { selector: sameSession, minLength: 1, maxLength: 5 }),
    write: (d, holds: Hold[]) => addHolds(d, holds, NOW),
    read: (d) => readHolds(d),
    expected: (holds: Hold[]) => holds,
    empty: [],
    policy: 'refuse',
    raw: (d) => raw(holdsFile.read(d)),
  } satisfies Case<Hold[]>,
  {
    name: 'the deletion journal (deleting-<tag>.json)',
    path: (d) => journalPath(d, HOME),
    sample: journalArb,
    write: (d, j: DeletionJournal) => writeJournal(journalPath(d, HOME), j),
    read: (d) => readJournal(journalPath(d, HOME)),
    expected: (j: DeletionJournal) => j,
    empty: null,
    policy: 'refuse',
    raw: (d) => raw(readJsonFile(journalPath(d, HOME), journalSpec)),
  } satisfies Case<DeletionJournal>,
  {
    name: 'the log cut journal (log-cut.json)',
    path: (d) => cutJournalPath(d),
    sample: cutArb,
    write: (d, j: CutJournal) => writeCutJournal(d, j),
    read: (d) => readCutJournal(d),
    expected: (j: CutJournal) => j,
    empty: null,
    policy: 'refuse',
    raw: (d) => raw(readJsonFile(cutJournalPath(d), cutJournalSpec)),
  } satisfies Case<CutJournal>,
  {
    name: 'the under-voltage latch (under-voltage-latch.json)',
    path: (d) => latchFile.path(d),
    sample: latchArb,
    write: (d, v: { bootId: string; at: number; source: string }) =>
      updateLatch({ stateDir: d, observed: true, bootId: v.bootId, now: new Date(v.at), source: v.source }).error,
    read: (d) => readLatch(d).record,
    expected: (v: { bootId: string; at: number; source: string }): LatchRecord => ({
      under_voltage_seen: true,
      first_seen_at: new Date(v.at).toISOString(),
      boot_id: v.bootId,
      boot_seen_at: new Date(v.at).toISOString(),
      source: v.source,
    }),
    empty: null,
    policy: 'report',
    reported: (d) => readLatch(d).error,
    raw: (d) => raw(latchFile.read(d)),
  } satisfies Case<{ bootId: string; at: number; source: string }>,
  {
    name: 'the notify state (notify-state.json)',
    path: (d) => notifyFile.path(d),
    sample: notifyArb,
    write: (d, s: NotifyState) => writeNotifyState(d, s),
    read: (d) => readNotifyState(d).state,
    expected: (s: NotifyState) => s,
    empty: { active: {}, outbox: [] },
    policy: 'report',
    reported: (d) => readNotifyState(d).error,
    raw: (d) => raw(notifyFile.read(d)),
  } satisfies Case<NotifyState>,
  {
    name: 'the prune history (prune-history.jsonl)',
    path: (d) => historyFile.path(d),
    sample: fc.array(historyArb, { minLength: 1, maxLength: 6 }),
    write: (d, es: PruneHistoryEntry[]) => void es.forEach((e) => appendHistory(d, e)),
    read: (d) => readHistory(d),
    expected: (es: PruneHistoryEntry[]) => es,
    empty: [],
    policy: 'empty',
    raw: (d) => raw(historyFile.read(d)),
    lines: true,
  } satisfies Case<PruneHistoryEntry[]>,
  {
    name: 'the last-run marker (daemon-last-run-<tag>.json)',
    path: (d) => markerPath(d, HOME),
    sample: markerArb,
    write: (d, m: LastRunMarker) => writeMarker(d, m),
    read: (d) => readMarker(d, HOME),
    expected: (m: LastRunMarker) => m,
    empty: null,
    policy: 'empty',
    raw: (d) => raw(readJsonFile(markerPath(d, HOME), markerSpec(HOME))),
  } satisfies Case<LastRunMarker>,
  {
    name: 'the bootstrap samples (bootstrap-samples.json)',
    path: (d) => samplesFile.path(d),
    sample: fc.array(sampleArb, { minLength: 1, maxLength: 8 }),
    write: (d, s: BootstrapSample[]) => writeSamples(d, HOME, s),
    read: (d) => readSamples(d, HOME),
    expected: (s: BootstrapSample[]) => [...s].sort((a, b) => Date.parse(a.recorded_at) - Date.parse(b.recorded_at)),
    empty: [],
    policy: 'empty',
    raw: (d) => raw(samplesFile.read(d)),
  } satisfies Case<BootstrapSample[]>,
  {
    name: 'the size estimate (size-estimate.json)',
    path: (d) => estimatesFile.path(d),
    sample: estimateArb,
    write: (d, e: SizeEstimate) => writeSizeEstimate(d, DB, e),
    read: (d) => readSizeEstimate(d, DB),
    expected: (e: SizeEstimate) => e,
    empty: null,
    policy: 'empty',
    raw: (d) => raw(estimatesFile.read(d)),
  } satisfies Case<SizeEstimate>,
  {
    name: 'the owed VACUUM (vacuum-owed.json)',
    path: (d) => owedFile.path(d),
    sample: owedArb,
    write: (d, o: OwedVacuum) => writeOwedVacuum(d, DB, o),
    read: (d) => readOwedVacuum(d, DB),
    expected: (o: OwedVacuum) => o,
    empty: null,
    policy: 'empty',
    raw: (d) => raw(owedFile.read(d)),
  } satisfies Case<OwedVacuum>,
  {
    name: 'the quiet pre-start record (quiet-pass.json)',
    path: (d) => quietFile.path(d),
    sample: quietArb,
    write: (d, r: QuietRecord) => writeQuietRecord(d, HOME, r),
    read: (d) => readQuietRecord(d, HOME),
    expected: (r: QuietRecord) => r,
    empty: null,
    policy: 'empty',
    raw: (d) => raw(quietFile.read(d)),
  } satisfies Case<QuietRecord>,
  {
    name: 'the clock confirmation (clock-confirmed)',
    path: (d) => join(d, CLOCK_CONFIRMED),
    sample: fc.integer({ min: PAST, max: NOW }),
    write: (d, ms: number) => recordClockConfirmed(d, ms),
    read: (d) => clockConfirmedAt(d),
    expected: (ms: number) => ms,
    empty: null,
    policy: 'empty',
    raw: (d) => raw(readJsonFile(join(d, CLOCK_CONFIRMED), clockSpec)),
  } satisfies Case<number>,
] as unknown as Case<never>[];

/** A fresh state folder (inside a fresh temp folder, so a listing shows only what the store made). */
function stateDir(): string {
  const d = join(tempDir(), 'state');
  mkdirSync(d);
  return d;
}

function one<T>(c: Case<T>, seed: number): T {
  return fc.sample(c.sample, { seed, numRuns: 1 })[0]!;
}

/** The public read, as an outcome: the value, or the error it threw. */
function outcome(c: Case<never>, dir: string): { value?: unknown; error?: unknown } {
  try {
    return { value: c.read(dir) };
  } catch (error) {
    return { error };
  }
}

/** What the contract says the module's read of a file that is there and cannot be used gives. */
function expectRefusedOrEmpty(c: Case<never>, dir: string, raw: ReadStatus): void {
  const path = c.path(dir);
  const r = c.raw(dir);
  expect(r.status).toBe(raw);
  expect(r.problem).toContain(path);
  expect(r.problem).not.toContain('\n');
  const o = outcome(c, dir);
  if (c.policy === 'refuse') {
    expect(o.error).toBeInstanceOf(GuardError);
    expect((o.error as GuardError).exitCode).toBe(3);
    expect((o.error as GuardError).message).toContain(path);
    return;
  }
  expect(o.error).toBeUndefined();
  expect(o.value).toEqual(c.empty);
  if (c.policy === 'report') expect(c.reported!(dir)).toContain(path);
}

/**
 * Run `fn`, failing fast if it blocks on the FIFO at `fifo`: a watchdog process opens the FIFO for both
 * reading and writing after a deadline (which releases an open or a read waiting on it) and leaves a
 * mark; the mark present afterwards means `fn` was waiting for it.
 */
const WATCHDOG =
  "setTimeout(() => { const fs = require('fs'); fs.writeFileSync(process.env.MARK, 'fired');" +
  ' const fd = fs.openSync(process.env.FIFO, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);' +
  " fs.writeSync(fd, 'x'); setTimeout(() => fs.closeSync(fd), 500); }, 5000);";

function noBlock<T>(fifo: string, fn: () => T): T {
  const mark = join(tempDir(), 'watchdog-fired');
  const child = spawn(process.execPath, ['-e', WATCHDOG], { env: { FIFO: fifo, MARK: mark }, stdio: 'ignore' });
  try {
    return fn();
  } finally {
    child.kill('SIGKILL');
    expect(existsSync(mark), `blocked on ${fifo} until the watchdog opened it`).toBe(false);
  }
}

/** A file's bytes and identity, to tell that nothing touched it. */
const fingerprint = (p: string) => {
  const st = lstatSync(p);
  return { ino: st.ino, mtimeMs: st.mtimeMs, bytes: st.isFile() ? readFileSync(p).toString('base64') : null };
};

describe.each(CASES.map((c) => [c.name, c] as const))('the state file contract: %s', (_name, c) => {
  it('any value written reads back, the folder then holds that file and nothing else is touched', () => {
    fc.assert(
      fc.property(c.sample, (v) => {
        const dir = stateDir();
        const neighbour = join(dir, 'neighbour.txt');
        writeFileSync(neighbour, 'not the store’s');
        const before = fingerprint(neighbour);
        expect(c.write(dir, v) ?? null).toBeNull();
        expect(c.read(dir)).toEqual(c.expected(v));
        expect(c.raw(dir)).toEqual({ status: 'ok', problem: null });
        if (c.policy === 'report') expect(c.reported!(dir)).toBeNull();
        expect(readdirSync(dir).sort()).toEqual([basename(c.path(dir)), 'neighbour.txt'].sort());
        expect(fingerprint(neighbour)).toEqual(before);
      }),
      { numRuns: 25 },
    );
  });

  it('a missing file (or state folder) is the empty value, with no problem, and reading creates nothing', () => {
    const dir = join(tempDir(), 'never-made');
    expect(outcome(c, dir)).toEqual({ value: c.empty });
    expect(c.raw(dir)).toEqual({ status: 'missing', problem: null });
    if (c.policy === 'report') expect(c.reported!(dir)).toBeNull();
    expect(existsSync(dir)).toBe(false);
  });

  it('a damaged file (not JSON, or cut short by a kill) is refused or read as empty, as the module says', () => {
    const dir = stateDir();
    const v = one(c, 1);
    c.write(dir, v);
    const whole = readFileSync(c.path(dir));
    writeFileSync(c.path(dir), '{not json\n');
    expectRefusedOrEmpty(c, dir, 'damaged');
    if (c.lines) {
      // A damaged line among whole ones costs that line only.
      writeFileSync(c.path(dir), Buffer.concat([Buffer.from('{not json\n'), whole]));
      expect(c.read(dir)).toEqual(c.expected(v));
      expect(c.raw(dir)).toMatchObject({ status: 'damaged', problem: expect.stringContaining('1 damaged line') });
    }
    // Cut short at the middle of the file: the file is damaged, except a lines file, where only the torn
    // last line is lost and the whole lines before it are read.
    const half = whole.subarray(0, Math.floor(whole.length / 2));
    writeFileSync(c.path(dir), half);
    if (!c.lines) return expectRefusedOrEmpty(c, dir, 'damaged');
    const kept = (c.expected(v) as unknown[]).slice(0, half.toString('utf8').split('\n').length - 1);
    expect(c.read(dir)).toEqual(kept);
    expect(c.raw(dir)).toEqual({ status: 'ok', problem: null });
    // The next append ends the torn line first: it costs no other line (the torn one is then a damaged line).
    const torn = !half.toString('utf8').endsWith('\n');
    const more = one(c, 2) as unknown[];
    c.write(dir, more as never);
    expect(c.read(dir)).toEqual([...kept, ...more]);
    expect(c.raw(dir).status).toBe(torn ? 'damaged' : 'ok');
  });

  it('a write killed half-way leaves the old value; its temp file is never read, and only ours is replaced', () => {
    const dir = stateDir();
    const a = one(c, 3);
    c.write(dir, a);
    const name = basename(c.path(dir));
    // What a writer killed before its rename leaves: a temp file holding part of the new value.
    const stale = join(dir, `.${name}.tmp-${process.pid + 1}`);
    writeFileSync(stale, readFileSync(c.path(dir)).subarray(0, 5));
    expect(c.read(dir)).toEqual(c.expected(a));
    if (c.lines) return;
    // A later write: the old temp file of another process id is left as it is (it may be another
    // writer's, now); one of this process's id (a pid reused after a reboot) is written over and renamed.
    const fresh = stateDir();
    const other = join(fresh, `.${name}.tmp-${process.pid + 1}`);
    const mine = join(fresh, `.${name}.tmp-${process.pid}`);
    writeFileSync(other, '{"torn": ');
    writeFileSync(mine, '{"torn": ');
    const before = fingerprint(other);
    const b = one(c, 4);
    expect(c.write(fresh, b) ?? null).toBeNull();
    expect(c.read(fresh)).toEqual(c.expected(b));
    expect(fingerprint(other)).toEqual(before);
    expect(readdirSync(fresh).sort()).toEqual([basename(other), name].sort());
  });

  it.each(['a FIFO', 'a folder', 'a symlink to a FIFO'])(
    '%s at its path: reads and writes return at once; the read refuses or is empty, as the module says',
    (kind) => {
      const dir = stateDir();
      const path = c.path(dir);
      const fifo = kind === 'a symlink to a FIFO' ? join(tempDir(), 'elsewhere.fifo') : path;
      if (kind === 'a folder') mkdirSync(path);
      else execFileSync('mkfifo', [fifo]);
      if (kind === 'a symlink to a FIFO') symlinkSync(fifo, path);
      const guard = <T>(fn: () => T) => (kind === 'a folder' ? fn() : noBlock(fifo, fn));
      guard(() => expectRefusedOrEmpty(c, dir, 'unreadable'));
      // A write either replaces the odd file (a rename never opens it) or fails naming an errno; it never
      // writes through a symlink.
      guard(() => {
        try {
          c.write(dir, one(c, 5));
        } catch (err) {
          expect(err instanceof GuardError || errnoCode(err) !== undefined).toBe(true);
        }
      });
      if (kind === 'a symlink to a FIFO') expect(lstatSync(fifo).isFIFO()).toBe(true);
    },
  );

  it('a file it has no permission to read is refused or read as empty; a folder it cannot write fails typed', () => {
    const dir = stateDir();
    c.write(dir, one(c, 6));
    chmodSync(c.path(dir), 0o000);
    // Root reads any file: as root, the read runs as nobody (the effective uid only, given back at once;
    // the test files run one to a process), with the folders on the way made searchable.
    const asNobody = isRoot() && typeof process.seteuid === 'function';
    if (asNobody) for (const d of [dirname(dir), dir]) chmodSync(d, 0o755);
    const run = <T>(fn: () => T): T => {
      if (!asNobody) return fn();
      process.seteuid!(65534);
      try {
        return fn();
      } finally {
        process.seteuid!(0);
      }
    };
    run(() => expectRefusedOrEmpty(c, dir, 'unreadable'));
    expect(run(() => c.raw(dir).problem)).toMatch(/EACCES/);
    // A folder and a file it cannot write: the write fails with EACCES, typed, and the old value stays (an
    // append-only file in a read-only folder can still be appended to while the file itself is writable).
    const ro = stateDir();
    const a = one(c, 9);
    c.write(ro, a);
    for (const d of [dirname(ro), ro]) chmodSync(d, 0o755);
    chmodSync(c.path(ro), 0o444);
    chmodSync(ro, 0o555);
    const failure = run(() => {
      try {
        return c.write(ro, one(c, 10)) ?? null;
      } catch (err) {
        return `${errnoCode(err)}: ${String(err)}`;
      }
    });
    expect(failure).toMatch(/EACCES/);
    expect(c.read(ro)).toEqual(c.expected(a));
    expect(readdirSync(ro)).toEqual([basename(c.path(ro))]);
  });
});

describe('the state file contract on a full disk', () => {
  let fs: string | null = null;
  afterAll(() => {
    if (fs) execFileSync('umount', ['-l', fs]);
  });

  it.for(CASES.map((c) => [c.name, c] as const))(
    '%s: a write on a full disk fails with ENOSPC, and the old value and nothing else is left',
    ([, c], ctx) => {
      requireRoot(ctx, 'mount a small tmpfs that fills up (mount -t tmpfs)');
      if (!fs) {
        fs = tempDir();
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1024k', 'tmpfs', fs]);
      }
      const dir = join(fs, c.name.replace(/\W+/g, '-'));
      mkdirSync(dir);
      const a = one(c, 7);
      const b = one(c, 8);
      expect(c.expected(b)).not.toEqual(c.expected(a));
      c.write(dir, a);
      const filler = join(fs, 'filler');
      try {
        const chunk = Buffer.alloc(4096, 1);
        for (;;) writeFileSync(filler, chunk, { flag: 'a' });
      } catch (err) {
        expect(errnoCode(err)).toBe('ENOSPC');
      }
      let failure: string | null = null;
      try {
        failure = c.write(dir, b) ?? null;
      } catch (err) {
        failure = `${errnoCode(err)}: ${String(err)}`;
      }
      try {
        if (c.lines) {
          // An append may still fit in the file's last page: then it is there; the old lines are, either way.
          const got = c.read(dir) as unknown[];
          expect(got.slice(0, (c.expected(a) as unknown[]).length)).toEqual(c.expected(a));
          if (failure) expect(failure).toMatch(/ENOSPC/);
        } else {
          expect(failure).toMatch(/ENOSPC/);
          expect(c.read(dir)).toEqual(c.expected(a));
        }
        expect(readdirSync(dir)).toEqual([basename(c.path(dir))]);
      } finally {
        rmSync(filler);
        rmSync(dir, { recursive: true });
      }
      expect(statSync(fs).isDirectory()).toBe(true);
    },
  );
});

describe('files as the previous version wrote them', () => {
  // Byte for byte what each module wrote before the store (the formats are unchanged, so these are also
  // what it writes now): a state folder left by that version is read as it was meant.
  const at = '2026-11-30T12:00:00.000Z';
  const pin = { home: HOME, agent: 'main', key: 'k', pinned_at: at, note: null };
  const hold = { home: HOME, agent: 'main', key: 'k', restored_at: at, until: '2026-12-07T12:00:00.000Z' };
  const entry = {
    at,
    home: HOME,
    mode: 'apply',
    outcome: 'ok',
    deleted_sessions: 1,
    deleted_orphans: 0,
    freed_bytes: 10,
    sessions_before: 3,
    sessions_after: 2,
    duration_ms: 5,
    reason: null,
  };
  const sample = {
    home: HOME,
    recorded_at: at,
    source: 'daemon',
    sessions: 2,
    jsonl_bytes: 100,
    db_bytes: null,
    restart_started_at: null,
    gap_seconds: null,
  };
  const estimate = { db: DB, since: at, estimated_bytes_after: 5, content_bytes: 2, reason: 'r' };
  const latch = { under_voltage_seen: true, first_seen_at: at, boot_id: 'b', boot_seen_at: at, source: 'vcgencmd' };
  const marker = { home: HOME, finished_at: at, outcome: 'ok', duration_ms: 5, deleted_sessions: 1 };
  const rows: [string, (d: string) => string, string, (d: string) => unknown, unknown][] = [
    ['pins', (d) => pinsFile.path(d), JSON.stringify({ pins: [pin] }, null, 1) + '\n', readPins, [pin]],
    ['holds', (d) => holdsFile.path(d), JSON.stringify({ holds: [hold] }, null, 1) + '\n', readHolds, [hold]],
    ['history', (d) => historyFile.path(d), JSON.stringify(entry) + '\n', (d) => readHistory(d), [entry]],
    ['marker', (d) => markerPath(d, HOME), JSON.stringify(marker) + '\n', (d) => readMarker(d, HOME), marker],
    [
      'samples',
      (d) => samplesFile.path(d),
      JSON.stringify({ version: 1, samples: [sample] }, null, 1) + '\n',
      (d) => readSamples(d, HOME),
      [sample],
    ],
    [
      'size estimate',
      (d) => estimatesFile.path(d),
      JSON.stringify([estimate], null, 2) + '\n',
      (d) => readSizeEstimate(d, DB),
      estimate,
    ],
    [
      'owed VACUUM',
      (d) => owedFile.path(d),
      JSON.stringify([{ ...estimate, estimated_bytes_after: null }], null, 2) + '\n',
      (d) => readOwedVacuum(d, DB),
      { ...estimate, estimated_bytes_after: null },
    ],
    ['latch', (d) => latchFile.path(d), JSON.stringify(latch, null, 2) + '\n', (d) => readLatch(d).record, latch],
    [
      'notify state',
      (d) => notifyFile.path(d),
      JSON.stringify({ active: {}, outbox: [] }) + '\n',
      (d) => readNotifyState(d),
      { state: { active: {}, outbox: [] }, error: null },
    ],
    ['clock', (d) => join(d, CLOCK_CONFIRMED), at + '\n', (d) => clockConfirmedAt(d), Date.parse(at)],
  ];
  it.each(rows)('%s', (_name, path, text, read, expected) => {
    const dir = stateDir();
    writeFileSync(path(dir), text);
    expect(read(dir)).toEqual(expected);
  });
});
