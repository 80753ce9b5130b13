import { closeSync, existsSync, openSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { discoverHome } from '../../src/picoclaw/home.js';
import { buildInventory } from '../../src/picoclaw/inventory/inventory.js';
import { openSeahorseWrite } from '../../src/picoclaw/seahorse.js';
import {
  applyPlan,
  GroupOutcomes,
  newApplyResult,
  type ApplyResult,
  type GroupOutcome,
} from '../../src/prune/apply/apply.js';
import { PassArchiver } from '../../src/prune/apply/archive-step.js';
import { archiveBuffersHeld, GzipTarWriter } from '../../src/archive/tar.js';
import { planPrune, type Plan } from '../../src/prune/plan/plan.js';
import { DEFAULT_POLICY } from '../../src/prune/policy.js';
import { buildReport } from '../../src/prune/report/report.js';
import { renderPruneText } from '../../src/commands/prune-text.js';
import { collidingAgents, handHome, type HandSession } from '../support/home.js';
import { NOW, offlineApply } from '../support/plan-input.js';
import { plannedHome, reportInput } from '../support/report-input.js';
import { tempDir } from '../support/tmp.js';

/** How many outcomes a GroupOutcomes holds itself (its size reads as every plan group). */
const stored = (m: GroupOutcomes): number => Object.getOwnPropertyDescriptor(Map.prototype, 'size')!.get!.call(m);

const day = (d: number) => new Date(NOW - d * 86_400_000).toISOString();
const old = (key: string, extra: Partial<HandSession> = {}): HandSession => ({
  key,
  updated: day(200),
  seahorse: [day(200).replace('T', ' ').slice(0, 19)],
  ...extra,
});

function planOf(home: string): Plan {
  const h = discoverHome({ home, env: {} });
  const inv = buildInventory(h);
  return planPrune({
    // Every session but the newest goes by age here: the clock is trusted (the age step would refuse otherwise).
    trustClock: true,
    sessions: inv.sessions,
    orphanConversations: inv.orphanConversations,
    agentIds: h.agents.map((a) => a.id),
    policy: { ...DEFAULT_POLICY, max_db_size_mb: 0 },
    now: NOW,
    db: { present: true, fileBytes: 0, usedBytes: 0, contentBytes: null },
  });
}

/** Apply the plan of home with an archive folder; returns the result and every outcome the pass set, last per id. */
function applyArchived(home: string, dbPath: string, archive: string) {
  const plan = planOf(home);
  // Every outcome the pass sets, as it was set: what get() must give back.
  const spy = vi.spyOn(GroupOutcomes.prototype, 'set');
  const db = openSeahorseWrite(dbPath, 5000);
  let res: ApplyResult;
  const set = new Map<number, GroupOutcome>();
  try {
    res = applyPlan(offlineApply(plan, db, dbPath, { archiveDir: archive, archiveHome: realpathSync(home) }));
  } finally {
    db.close();
    for (const [id, o] of spy.mock.calls) set.set(id, structuredClone(o));
    spy.mockRestore();
  }
  return { plan, res, set };
}

describe('the outcomes of an archiving pass', () => {
  it("hold nothing per group for archives at their members' default paths, yet read back exactly what was set", () => {
    const home = tempDir();
    const sessions = [old('sk_v1_a'), old('sk_v1_b'), old('agent:cron-x'), old('sk_v1_c', { aliases: ['sk_v1_d'] })];
    sessions.push(old('sk_v1_d'), { key: 'sk_v1_new', updated: day(0) });
    const { dbPath } = handHome(home, sessions);
    const archive = join(tempDir(), 'archive');
    const { plan, res, set } = applyArchived(home, dbPath, archive);

    const deletes = [...set].filter(([, o]) => o.action === 'delete');
    expect(deletes.length).toBe(plan.groups.filter((g) => g.action === 'delete').length);
    expect(deletes.length).toBeGreaterThanOrEqual(4);
    expect(plan.groups.some((g) => g.members.length === 2 && g.action === 'delete')).toBe(true);
    for (const [id, o] of deletes) {
      // One archive per member, each its own.
      const g = plan.groups[id]!;
      expect(o.archives).toHaveLength(g.members.length);
      expect(new Set(o.archives).size).toBe(g.members.length);
      for (const a of o.archives!) {
        expect(existsSync(a)).toBe(true);
        expect(dirname(a)).toBe(archive);
      }
      g.members.forEach((m, i) => expect(o.archives![i]!.endsWith(`_${m.agent}_${m.base}.tar.gz`)).toBe(true));
      expect(res.groups.get(id)).toStrictEqual(o);
    }
    expect(res.deletedSessions).toBe(5);
    // The result keeps no object, and no path, for any of them.
    expect(stored(res.groups)).toBe(0);
    // Nor the pass its archive buffers (1 MiB and 64 KiB kept from one archive to the next) once it is done.
    expect(archiveBuffersHeld()).toBe(0);
    const fd = openSync(join(archive, 'scratch'), 'w');
    new GzipTarWriter(fd).end();
    closeSync(fd);
    expect(archiveBuffersHeld()).toBeGreaterThanOrEqual(1 << 20);
  });

  it('keep a suffixed archive name (the default was taken) whole, and read it back exactly', () => {
    // Agent "ops" with base "agent_cron-1" and agent "ops_agent" with base "cron-1" both spell ops_agent_cron-1.
    const home = tempDir();
    const { opsDir, opsAgentDir, config } = collidingAgents(home);
    const { dbPath } = handHome(
      home,
      [
        { key: 'sk_v1_new', updated: day(0) },
        old('agent:cron-1', { agentDir: opsDir }),
        old('cron-1', { agentDir: opsAgentDir }),
        old('sk_v1_plain'),
      ],
      { config },
    );
    const archive = join(tempDir(), 'archive');
    const { res, set } = applyArchived(home, dbPath, archive);

    const paths = [...set.values()].filter((o) => o.action === 'delete').flatMap((o) => o.archives!);
    expect(paths).toHaveLength(3);
    const suffixed = paths.filter((p) => p.endsWith('_ops_agent_cron-1-2.tar.gz'));
    expect(suffixed).toHaveLength(1);
    expect(existsSync(suffixed[0]!)).toBe(true);
    for (const [id, o] of set) expect(res.groups.get(id)).toStrictEqual(o);
    // Only the suffixed one is held.
    expect(stored(res.groups)).toBe(1);
  });

  it("are read by a report that lets the plan's groups go, as when it keeps them", () => {
    const home = tempDir();
    const sessions: HandSession[] = [];
    for (let i = 0; i < 30; i++)
      sessions.push({
        key: `sk_v1_s${i}`,
        updated: day(i * 3),
        aliases: i % 5 === 1 ? [`sk_v1_s${i + 1}`] : undefined,
      });
    handHome(home, sessions);
    const report = (consume: boolean, noArchivePaths = false) => {
      const planned = plannedHome(home, NOW);
      const plan = planned.plan;
      // Every member archived at its own default path, but the first member of one group, whose name was taken.
      const archiver = new PassArchiver(join(home, 'archive'), home, null, NOW, () => 0);
      const result = newApplyResult(plan);
      result.groups.archivesAt((s) => archiver.defaultPath(s));
      const deleted = plan.groups.filter((g) => g.action === 'delete');
      const byMember = new Map<string, string>();
      for (const g of deleted) {
        const archives = g.members.map((m, i) => {
          const p = archiver.defaultPath(m);
          const a = g === deleted[1] && i === 0 ? p.replace(/\.tar\.gz$/, '-2.tar.gz') : p;
          byMember.set(`${m.agent}\0${m.base}`, a);
          return a;
        });
        result.groups.set(g.id, { action: 'delete', reason: g.reason, archives });
      }
      expect(stored(result.groups)).toBe(1);
      return { r: buildReport({ ...reportInput(planned, NOW, result, consume), noArchivePaths }), byMember };
    };
    const kept = report(false);
    const spent = report(true);
    expect({ ...spent.r, duration_ms: 0 }).toEqual({ ...kept.r, duration_ms: 0 });
    const archives = spent.r.sessions.map((s) => s.archive).filter((a) => a !== null);
    expect(archives.length).toBeGreaterThan(10);
    expect(archives.filter((a) => a.endsWith('-2.tar.gz'))).toHaveLength(1);
    // Each session's entry names its own archive, alias groups' members included.
    expect(spent.r.sessions.some((s) => s.group !== null && s.action === 'delete')).toBe(true);
    for (const s of spent.r.sessions)
      expect(s.archive).toBe(s.action === 'delete' ? spent.byMember.get(`${s.agent}\0${s.file}`) : null);
    // For a caller that prints none of them (the text report) the paths are left out, and nothing else:
    // the text is the same, to the byte, at any width.
    const textual = report(true, true).r;
    expect(textual.sessions.every((s) => s.archive === null)).toBe(true);
    const noPaths = (r: typeof textual) => ({
      ...r,
      duration_ms: 0,
      sessions: r.sessions.map((s) => ({ ...s, archive: null })),
    });
    expect(noPaths(textual)).toEqual(noPaths(spent.r));
    for (const width of [80, 200, Infinity])
      expect(renderPruneText({ ...textual, duration_ms: 0 }, width)).toBe(
        renderPruneText({ ...spent.r, duration_ms: 0 }, width),
      );
  });
});
