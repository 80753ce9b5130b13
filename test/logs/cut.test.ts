import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boundLogs,
  CollapseError,
  fallocateCollapse,
  JOURNAL_NAME,
  type Collapser,
  type CutContext,
  type CutStep,
} from '../../src/logs/index.js';
import { ExitCode, GuardError } from '../../src/errors.js';
import { keptParts } from '../../src/picoclaw/gatewaylog/parts.js';
import { requireRoot, skipWithReason } from '../support/skip.js';
import { tempDir } from '../support/tmp.js';
import { AppendWriter, childWriter, numbersOf } from './support.js';

/**
 * The invariant of the cut (docs/logs.md): whatever the sizes, line lengths, the lines the
 * gateway appends between any two steps, and wherever a run is killed, once a later run has
 * finished, the kept parts followed by the file hold every line written, exactly once, in
 * order; no journal is left; and the file is back under the limit.
 */

const STEPS: CutStep[] = ['journal', 'part', 'journal-part', 'pad', 'journal-padded', 'collapse', 'done'];

class Kill extends Error {}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

function expectNoneLost(nums: number[], n: number): void {
  const seen = new Set(nums);
  expect(range(n).filter((i) => !seen.has(i))).toEqual([]);
  expect(nums.filter((i) => i < 1 || i > n)).toEqual([]);
}

/** Wait (bounded attempts, not a sleep) until `file` is larger than `bytes`. */
async function grownPast(file: string, bytes: number): Promise<void> {
  for (let i = 0; i < 20_000; i++) {
    if (statSync(file).size > bytes) return;
    await new Promise<void>((res) => setTimeout(res, 1));
  }
  throw new Error(`${file} never grew past ${bytes} bytes`);
}

function setup() {
  const root = tempDir('pcg-logs-');
  const file = join(root, 'logs', 'gateway.log');
  const stateDir = join(root, 'state');
  return { root, file, stateDir };
}

const canCollapse = (() => {
  let r: boolean | null = null;
  return async () => {
    if (r !== null) return r;
    const d = tempDir('pcg-probe-');
    writeFileSync(join(d, 'f'), Buffer.alloc(8192, 10));
    r = await fallocateCollapse(join(d, 'f'), 4096).then(
      () => true,
      () => false,
    );
    return r;
  };
})();

describe('cutting a log that a writer appends to', () => {
  it('keeps every line exactly once, in order, whatever the sizes, line lengths and kill point', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          limitKiB: fc.integer({ min: 16, max: 256 }),
          over: fc.double({ min: 1.05, max: 4, noNaN: true }),
          // Also lengths that divide the block size: a line end then falls exactly on the cut point.
          lineMin: fc.oneof(fc.integer({ min: 1, max: 600 }), fc.constantFrom(64, 128, 256, 512, 1024, 4096)),
          lineSpread: fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constant(0)),
          perStep: fc.integer({ min: 0, max: 40 }),
          kill: fc.option(fc.constantFrom(...STEPS), { nil: null }),
          seed: fc.integer(),
        }),
        async (p) => {
          const { file, stateDir } = setup();
          let s = p.seed >>> 0;
          const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
          const w = new AppendWriter(file, () => p.lineMin + Math.floor(rnd() * (p.lineSpread + 1)));
          const limit = p.limitKiB * 1024;
          while (statSync(file).size < limit * p.over) w.write();
          const c: CutContext = {
            stateDir,
            limitBytes: limit,
            keepParts: 1000,
            step: (st) => {
              w.write(p.perStep);
              if (st === p.kill) throw new Kill(st);
            },
          };
          const first = await boundLogs([file], c).catch((e: unknown) => {
            if (e instanceof Kill) return null;
            throw e;
          });
          if (p.kill !== null) expect(first).toBeNull();
          w.write(p.perStep);
          // Killed between steps: lines may be in a part and still in the file, but none is missing.
          expectNoneLost(numbersOf(file, { midCut: true }), w.n);
          // The next run finishes (or undoes) what was killed, then cuts what is still over the limit.
          const second = await boundLogs([file], { ...c, step: () => w.write(p.perStep) });
          expect(numbersOf(file)).toEqual(range(w.n));
          expect(existsSync(join(stateDir, JOURNAL_NAME))).toBe(false);
          if (p.kill !== null && p.kill !== 'done') expect(second.resumed?.step).toBeDefined();
          const third = await boundLogs([file], { ...c, step: undefined });
          expect(third.files[0]!.action).toMatch(/^(cut|under_limit)$/);
          expect(statSync(file).size).toBeLessThanOrEqual(limit);
          expect(numbersOf(file)).toEqual(range(w.n));
          expect(readdirSync(join(file, '..')).filter((n) => n.includes('probe') || n.endsWith('.tmp'))).toEqual([]);
          w.close();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('loses nothing while another process appends as fast as it can (O_APPEND, and O_APPEND|O_SYNC)', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    for (const sync of [false, true]) {
      const { file, stateDir } = setup();
      mkdirSync(join(file, '..'), { recursive: true });
      // O_SYNC makes each write wait for the card: fewer, smaller cuts.
      const limit = sync ? 24 * 1024 : 128 * 1024;
      const cuts = sync ? 3 : 6;
      const wr = childWriter(file, { sync, first: sync ? 100 : 2000 });
      await wr.ready;
      for (let i = 0; i < cuts; i++) {
        await grownPast(file, limit);
        const r = await boundLogs([file], { stateDir, limitBytes: limit, keepParts: 1000 });
        expect(r.files[0]!.action).toBe('cut');
      }
      const n = await wr.stop();
      expect(keptParts(file)).toHaveLength(cuts);
      expect(numbersOf(file)).toEqual(range(n));
    }
  });

  it('undoes the cut when the collapse fails, and finishes it when it happened but the tool failed', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.integer({ min: 50, max: 2000 }), async (happened, lineLen) => {
        const { file, stateDir } = setup();
        const w = new AppendWriter(file, () => lineLen);
        while (statSync(file).size < 100 * 1024) w.write();
        const before = readFileSync(file);
        let probing = true;
        const collapse: Collapser = async (path, len) => {
          if (probing) {
            probing = false;
            return fallocateCollapse(path, len);
          }
          if (happened) await fallocateCollapse(path, len);
          throw new CollapseError('Operation not supported', !happened);
        };
        const r = await boundLogs([file], { stateDir, limitBytes: 64 * 1024, keepParts: 5, collapse });
        expect(numbersOf(file)).toEqual(range(w.n));
        expect(existsSync(join(stateDir, JOURNAL_NAME))).toBe(false);
        if (happened) {
          expect(r.files[0]!.action).toBe('cut');
          expect(keptParts(file)).toHaveLength(1);
        } else {
          expect(r.files[0]!.action).toBe('unsupported');
          expect(readFileSync(file).equals(before)).toBe(true);
          expect(keptParts(file)).toEqual([]);
        }
        w.close();
      }),
      { numRuns: 20 },
    );
  });
});

describe('where a range cannot be collapsed', () => {
  it('changes nothing on tmpfs and says why', async (ctx) => {
    const shm = '/dev/shm';
    let tmpfs = false;
    try {
      tmpfs = statfsSync(shm).type === 0x01021994;
    } catch {
      /* none */
    }
    if (!tmpfs) return skipWithReason(ctx, '/dev/shm is not a tmpfs here');
    const root = join(shm, `pcg-logs-${process.pid}`);
    mkdirSync(join(root, 'logs'), { recursive: true });
    try {
      const file = join(root, 'logs', 'gateway.log');
      const w = new AppendWriter(file);
      while (statSync(file).size < 64 * 1024) w.write();
      const before = readFileSync(file);
      const r = await boundLogs([file], { stateDir: join(root, 'state'), limitBytes: 16 * 1024, keepParts: 3 });
      expect(r.files[0]!.action).toBe('unsupported');
      expect(r.files[0]!.reason).toMatch(/tmpfs/);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(readdirSync(join(root, 'logs'))).toEqual(['gateway.log']);
      w.close();
    } finally {
      (await import('node:fs')).rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('parts and dry-runs', () => {
  it('keeps at most keep_parts parts, deleting the oldest, and touches no other file', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 7 }), async (keep, cuts) => {
        const { file, stateDir } = setup();
        const w = new AppendWriter(file);
        const dir = join(file, '..');
        const others = [
          'gateway.log.old',
          'gateway.log.1.gz.bak',
          'other.log.1.gz',
          'gateway.log.0.gz',
          'launcher.log',
        ];
        for (const o of others) writeFileSync(join(dir, o), 'keep me\n');
        const seqs: number[] = [];
        for (let i = 0; i < cuts; i++) {
          while (statSync(file).size <= 32 * 1024) w.write();
          const r = await boundLogs([file], { stateDir, limitBytes: 32 * 1024, keepParts: keep });
          expect(r.files[0]!.action).toBe('cut');
          seqs.push(i + 1);
        }
        expect(keptParts(file).map((p) => p.seq)).toEqual(seqs.slice(-keep));
        for (const o of others) expect(readFileSync(join(dir, o), 'utf8')).toBe('keep me\n');
        // What is left is the newest lines, in order, without a gap.
        const left = numbersOf(file);
        expect(left).toEqual(range(w.n).slice(w.n - left.length));
        w.close();
      }),
      { numRuns: 12 },
    );
  });

  it('a dry-run says what it would cut and writes nothing', async () => {
    const { file, stateDir } = setup();
    const w = new AppendWriter(file);
    while (statSync(file).size < 100 * 1024) w.write();
    const before = readFileSync(file);
    const r = await boundLogs([file, join(file, '..', 'gateway_panic.log')], {
      stateDir,
      limitBytes: 32 * 1024,
      keepParts: 2,
      dryRun: true,
    });
    expect(r.files[0]!.action).toBe('would_cut');
    expect(r.files[0]!.part).toBe(`${file}.1.gz`);
    expect(r.files[1]!.action).toBe('absent');
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(join(file, '..'))).toEqual(['gateway.log']);
    expect(existsSync(stateDir)).toBe(false);
    w.close();
  });

  it('a file under the limit, or a limit of 0, is left alone', async () => {
    const { file, stateDir } = setup();
    const w = new AppendWriter(file);
    w.write(100);
    const before = readFileSync(file);
    for (const limitBytes of [0, 1024 * 1024]) {
      const r = await boundLogs([file], { stateDir, limitBytes, keepParts: 2 });
      expect(r.files[0]!.action).toBe(limitBytes === 0 ? 'off' : 'under_limit');
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    // Nothing to do writes nothing: no lock, no journal, not even the state folder (the daemon asks often).
    expect(existsSync(stateDir)).toBe(false);
    w.close();
  });
});

describe('the journal', () => {
  it('one that cannot be used is an error naming it and what to do, and nothing is touched', async () => {
    for (const text of ['{not json', '{"version":2}', JSON.stringify({ version: 1, file: 'x', step: 'padded' })]) {
      const { file, stateDir } = setup();
      const w = new AppendWriter(file);
      while (statSync(file).size < 64 * 1024) w.write();
      const before = readFileSync(file);
      mkdirSync(stateDir, { recursive: true });
      writeFileSync(join(stateDir, JOURNAL_NAME), text);
      const err = await boundLogs([file], { stateDir, limitBytes: 16 * 1024, keepParts: 2 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GuardError);
      expect((err as GuardError).exitCode).toBe(ExitCode.DATA);
      expect((err as GuardError).message).toContain(join(stateDir, JOURNAL_NAME));
      expect((err as GuardError).hint).toMatch(/delete it/);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(keptParts(file)).toEqual([]);
      w.close();
    }
  });

  it('a log rewritten in place after a kill is neither padded nor collapsed; the part stays', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    for (const killAt of ['journal-part', 'journal-padded'] as const) {
      const { file, stateDir } = setup();
      const w = new AppendWriter(file);
      while (statSync(file).size < 100 * 1024) w.write();
      const c: CutContext = { stateDir, limitBytes: 32 * 1024, keepParts: 5 };
      const killed = await boundLogs([file], {
        ...c,
        step: (st) => {
          if (st === killAt) throw new Kill(st);
        },
      }).catch((e: unknown) => e);
      expect(killed).toBeInstanceOf(Kill);
      // Someone truncates and rewrites the log in place (an editor, a copy-and-truncate rotation).
      // Longer than the cut's end, so only the head hash tells it from the log the journal describes.
      const other = '{"level":"info","message":"someone else wrote this"}\n'.repeat(3000);
      writeFileSync(file, other);
      const r = await boundLogs([file], { ...c, limitBytes: 1024 * 1024 });
      expect(r.resumed?.outcome).toMatch(/^(abandoned|skipped)$/);
      expect(readFileSync(file, 'utf8')).toBe(other);
      expect(keptParts(file)).toHaveLength(1);
      expect(existsSync(join(stateDir, JOURNAL_NAME))).toBe(false);
      w.close();
    }
  });

  it('a probe that cannot be written (a full or locked folder) is asked again, not remembered', async (ctx) => {
    if (!(await canCollapse()))
      return skipWithReason(ctx, 'the temporary folder cannot collapse ranges (not ext4/xfs)');
    requireRoot(ctx, 'make the logs folder immutable (chattr +i), so that even root cannot create the probe in it');
    const { file, stateDir } = setup();
    const w = new AppendWriter(file);
    while (statSync(file).size < 64 * 1024) w.write();
    const dir = join(file, '..');
    const c = { stateDir, limitBytes: 16 * 1024, keepParts: 2 };
    execFileSync('chattr', ['+i', dir]);
    let r;
    try {
      r = await boundLogs([file], c);
    } finally {
      execFileSync('chattr', ['-i', dir]);
    }
    expect(r.files[0]!.action).toBe('skipped');
    expect(r.files[0]!.reason).toMatch(/cannot write the probe: EPERM/);
    // The same process, the folder writable again: the cut happens (the failure was not cached).
    const again = await boundLogs([file], c);
    expect(again.files[0]!.action).toBe('cut');
    expect(numbersOf(file)).toEqual(range(w.n));
    w.close();
  });
});
