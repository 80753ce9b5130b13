import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GOALS,
  heldOutShape,
  mergeRuns,
  parseRun,
  tables,
  verdicts,
  type HomeInfo,
  type Sample,
  type ShapeRun,
} from '../../bench/memory-shape-lib.js';
import { sparseIdSequence, spreadMessageIds } from '../../bench/sparse-ids.js';
import { buildSampleHome } from '../../dev/sample/builder.js';
import { sqlite } from '../../src/io/sqlite.js';
import { tempDir } from '../support/tmp.js';

// The driver's own arithmetic (bench/memory-shape.ts): figures chosen here, verdicts checked.

const MiB = 1024;
const home = (id: string, kind: HomeInfo['kind'], sessions: number, maxId = sessions * 10): HomeInfo => ({
  id,
  kind,
  sessions,
  messages: sessions * 10,
  maxId,
  diskBytes: 1,
});

function runOf(cells: [Sample['build'], string, string, number, number?][], homes: HomeInfo[]): ShapeRun {
  return {
    version: 1,
    started: '2026-12-01T00:00:00Z',
    durationMs: 1,
    machine: 'test',
    measuredBy: 'test',
    clis: { old: 'old/cli.js', new: 'new/cli.js' },
    runs: 1,
    homes,
    samples: cells.map(([build, h, cmd, mib, wall]) => ({
      build,
      home: h,
      cmd,
      rssKb: Math.round(mib * MiB),
      wallMs: wall ?? 1000,
      load: 0.5,
    })),
  };
}

const sizes = [home('h2000', 'size', 2000), home('h20000', 'size', 20_000), home('h100000', 'size', 100_000)];
const find = (r: ShapeRun, start: string) => verdicts(r).find((v) => v.goal.startsWith(start))!;

describe('memory-shape verdicts', () => {
  it('growth: met at the bound, missed just past it, and names the worst command of each build', () => {
    const at = (g: number) =>
      runOf(
        [
          ['new', 'h2000', 'prune', 60],
          ['new', 'h100000', 'prune', 60 + g],
          ['new', 'h2000', 'sessions', 50],
          ['new', 'h100000', 'sessions', 51],
          ['old', 'h2000', 'prune', 60],
          ['old', 'h100000', 'prune', 130],
        ],
        sizes,
      );
    expect(find(at(GOALS.growthMiB), 'Growth').status).toBe('met');
    const missed = find(at(GOALS.growthMiB + 0.5), 'Growth');
    expect(missed.status).toBe('missed');
    expect(missed.detail).toContain('+15.5 MiB (prune)');
    expect(missed.detail).toContain("today's build +70.0 MiB (prune)");
  });

  it('cap: the largest size and every sparse home count; 90 MiB itself is a miss', () => {
    const homes = [...sizes, home('sparse', 'sparse', 20_000, 15_000_000)];
    const r = (sparseMiB: number) =>
      runOf(
        [
          ['new', 'h2000', 'prune', 60],
          ['new', 'h100000', 'prune', 70],
          ['new', 'sparse', 'prune --json', sparseMiB],
        ],
        homes,
      );
    expect(find(r(89.9), 'Every command').status).toBe('met');
    const v = find(r(90), 'Every command');
    expect(v.status).toBe('missed');
    expect(v.detail).toContain('prune --json @ 20,000 sparse (max id 15,000,000)');
    expect(find(runOf([['new', 'h100000', 'prune', 70]], sizes), 'Every command').detail).toContain(
      'no sparse-id home',
    );
  });

  it('time: the ratio of medians, within noise only when both builds ran more than once', () => {
    const r = (oldWalls: number[], newWalls: number[]) =>
      runOf(
        [
          ...oldWalls.map((w): [Sample['build'], string, string, number, number] => ['old', 'h20000', 'prune', 60, w]),
          ...newWalls.map((w): [Sample['build'], string, string, number, number] => ['new', 'h20000', 'prune', 60, w]),
        ],
        sizes,
      );
    expect(find(r([1000], [950]), 'Time').status).toBe('met');
    expect(find(r([1000], [1050]), 'Time').status).toBe('missed');
    const noisy = find(r([900, 1100], [1000, 1100]), 'Time');
    expect(noisy.status).toBe('met within noise');
    expect(noisy.detail).toContain('1.05');
    expect(find(r([900, 1000], [1500, 1600]), 'Time').status).toBe('missed');
    expect(find(runOf([['new', 'h2000', 'prune', 60]], [sizes[0]!]), 'Time').status).toBe('not measured');
  });

  it('held-out homes get their own growth verdict; tables have a row per command', () => {
    const homes = [home('x5', 'held', 5000), home('x50', 'held', 50_000)];
    const r = runOf(
      [
        ['new', 'x5', 'prune', 60],
        ['new', 'x50', 'prune', 80],
        ['old', 'x5', 'prune', 60],
        ['old', 'x50', 'prune', 70],
      ],
      homes,
    );
    r.heldOut = { seed: 123, shape: heldOutShape(123) };
    expect(verdicts(r)).toHaveLength(1);
    const v = find(r, 'Held-out homes (seed 123)');
    expect(v.status).toBe('missed');
    expect(v.detail).toContain('+20.0 MiB');
    const growth = tables(r).find((t) => t.title.startsWith('Growth'))!;
    expect(growth.rows).toEqual([['prune', '+10.0', '+20.0']]);
  });

  it('parseRun reads the last line of the driver output and refuses anything else', () => {
    const r = runOf([['new', 'h2000', 'prune', 60]], sizes);
    expect(parseRun(`progress\n${JSON.stringify(r)}\n`)).toEqual(r);
    expect(() => parseRun('{"version":2}')).toThrow(/memory-shape run/);
    expect(() => parseRun(JSON.stringify({ ...r, samples: [{ build: 'x', cmd: 'p', wallMs: 1 }] }))).toThrow(
      /bad sample/,
    );
  });
});

describe('merged runs', () => {
  it('a round done in parts gives the verdicts of the whole', () => {
    const small = runOf([['new', 'h2000', 'prune', 60]], [sizes[0]!]);
    const large = runOf([['new', 'h100000', 'prune', 80]], [sizes[2]!]);
    const merged = mergeRuns([small, large]);
    expect(merged.homes.map((h) => h.id)).toEqual(['h2000', 'h100000']);
    expect(find(merged, 'Growth').detail).toContain('+20.0 MiB (prune)');
    expect(() => mergeRuns([small, { ...large, clis: { old: 'other', new: 'new/cli.js' } }])).toThrow(/different/);
  });
});

describe('held-out shapes', () => {
  it('one seed gives one shape, in the ranges the brief names; seeds differ', () => {
    expect(heldOutShape(77)).toEqual(heldOutShape(77));
    const shapes = Array.from({ length: 200 }, (_, i) => heldOutShape(1000 + i));
    for (const s of shapes) {
      expect(s.build.agents).toBeGreaterThanOrEqual(1);
      expect(s.build.agents).toBeLessThanOrEqual(4);
      expect(s.build.messagesPerSession).toBeGreaterThanOrEqual(1);
      expect(s.build.messagesPerSession).toBeLessThanOrEqual(40);
      const k = s.build.kindShares!;
      expect(k.cron + k.alias + k.undated + k.pre2024).toBeLessThan(1);
      expect(s.build.peerDigits).toBeLessThanOrEqual(15);
    }
    expect(new Set(shapes.map((s) => JSON.stringify(s))).size).toBe(200);
    expect(shapes.some((s) => s.idGap === 1) && shapes.some((s) => s.idGap > 1)).toBe(true);
  });

  it('the builder follows the kind shares and peer digits it is given', () => {
    const dir = tempDir();
    const h = buildSampleHome({
      dir: join(dir, 'home'),
      sessions: 300,
      seahorse: false,
      messagesPerSession: 2,
      kindShares: { cron: 0, alias: 0, undated: 0.5, pre2024: 0 },
      peerDigits: 14,
    });
    const kinds = h.sessions.map((s) => s.kind);
    expect(kinds).not.toContain('cron');
    expect(kinds).not.toContain('alias');
    expect(kinds).not.toContain('pre2024');
    const undated = kinds.filter((k) => k === 'undated').length;
    expect(undated).toBeGreaterThan(100);
    expect(undated).toBeLessThan(200);
    const peers = h.sessions.flatMap((s) => s.aliases.map((a) => /direct:(\d+)$/.exec(a)?.[1]).filter(Boolean));
    expect(peers.length).toBeGreaterThan(0);
    for (const p of peers) expect(p).toHaveLength(14);
  });
});

describe('sparse message ids', () => {
  it('the id sequence ascends with gaps and ends near the asked maximum', () => {
    const ids = sparseIdSequence(20_000, 15_000_000, 5);
    for (let i = 1; i < ids.length; i++) expect(ids[i]!).toBeGreaterThan(ids[i - 1]!);
    expect(ids[ids.length - 1]!).toBeGreaterThan(15_000_000 * 0.95);
    expect(ids[ids.length - 1]!).toBeLessThan(15_000_000 * 1.05);
    expect(sparseIdSequence(10, 5, 1)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('a rebuilt seahorse.db keeps every row and reference, with ids spread up to the maximum', () => {
    const dir = tempDir();
    const h = buildSampleHome({ dir: join(dir, 'home'), sessions: 80, messagesPerSession: 10, seed: 3 });
    const Database = sqlite();
    const snapshot = (path: string) => {
      const db = new Database(path, { readonly: true });
      const q = (sql: string) => db.prepare(sql).all();
      const out = {
        // Per conversation, the content in id order: the order of insertion survives.
        messages: q(
          `SELECT conversation_id, group_concat(role || ':' || content, '|') AS c FROM
             (SELECT * FROM messages ORDER BY message_id) GROUP BY conversation_id ORDER BY conversation_id`,
        ),
        parts: q(
          `SELECT m.conversation_id, p.type, p.text FROM message_parts p JOIN messages m USING (message_id) ORDER BY p.part_id`,
        ),
        summaryMessages: q(
          `SELECT s.summary_id, m.content FROM summary_messages s JOIN messages m USING (message_id) ORDER BY 1, s.ordinal`,
        ),
        contextItems: q(
          `SELECT c.conversation_id, c.ordinal, m.content FROM context_items c LEFT JOIN messages m USING (message_id) ORDER BY 1, 2`,
        ),
        conversations: q('SELECT * FROM conversations ORDER BY conversation_id'),
        summaries: q('SELECT * FROM summaries ORDER BY summary_id'),
        ftsOrphans: q(
          `SELECT COUNT(*) AS n FROM messages_fts f
             WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = f.message_id)`,
        ),
        ftsRows: q('SELECT COUNT(*) AS n FROM messages_fts'),
        count: (db.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n,
        maxId: (db.prepare('SELECT MAX(message_id) AS m FROM messages').get() as { m: number }).m,
        seq: (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'messages'`).get() as { seq: number }).seq,
      };
      db.close();
      return out;
    };
    const before = snapshot(h.seahorsePath!);
    const sp = spreadMessageIds(h.seahorsePath!, 2_000_000, 9);
    const after = snapshot(h.seahorsePath!);
    expect(sp.messages).toBe(before.count);
    expect(before.maxId).toBe(before.count);
    expect(after.count).toBe(before.count);
    expect(after.maxId).toBe(sp.maxId);
    expect(after.maxId).toBeGreaterThan(2_000_000 * 0.8);
    expect(after.seq).toBe(after.maxId);
    for (const k of ['messages', 'parts', 'summaryMessages', 'contextItems', 'conversations', 'summaries'] as const)
      expect(after[k], k).toEqual(before[k]);
    expect(after.ftsOrphans).toEqual([{ n: 0 }]);
    expect(after.ftsRows).toEqual([{ n: before.count }]);
  });
});
