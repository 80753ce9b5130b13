import { discoverHome, type PicoClawHome } from '../../src/picoclaw/home.js';
import { buildInventory, type Inventory } from '../../src/picoclaw/inventory/inventory.js';
import type { ApplyResult } from '../../src/prune/apply/apply.js';
import { planPrune, type Plan } from '../../src/prune/plan/plan.js';
import { policyValues, resolvePolicy, type ResolvedPolicy } from '../../src/prune/policy.js';
import type { ReportInput } from '../../src/prune/report/report.js';
import { handHome } from './home.js';
import { tempDir } from './tmp.js';

/** A home's inventory and its plan under max_age_days 30 and max_sessions 10, no database facts: for report tests. */
export function plannedHome(
  home: string,
  nowMs: number,
): { h: PicoClawHome; policy: ResolvedPolicy; inventory: Inventory; plan: Plan } {
  const h = discoverHome({ home, env: {} });
  const policy = resolvePolicy({ flags: { max_age_days: 30, max_sessions: 10 } });
  const inventory = buildInventory(h);
  const plan = planPrune({
    sessions: inventory.sessions,
    orphanConversations: inventory.orphanConversations,
    agentIds: h.agents.map((a) => a.id),
    policy: policyValues(policy),
    now: nowMs,
    db: { present: false, fileBytes: 0, usedBytes: 0, contentBytes: null },
  });
  return { h, policy, inventory, plan };
}

/** The input of buildReport for that plan: a dry-run without result, or an apply with one. */
export function reportInput(
  p: ReturnType<typeof plannedHome>,
  nowMs: number,
  result: ApplyResult | null,
  consume: boolean,
): ReportInput {
  return {
    mode: result ? 'apply' : 'dry-run',
    now: new Date(nowMs),
    home: p.h,
    policy: p.policy,
    t0: 0,
    gateway: null,
    inventory: p.inventory,
    plan: p.plan,
    result,
    skipped: null,
    exitCode: 0,
    warnings: [],
    dbFacts: null,
    consume,
  };
}

/** 40 sessions a few days apart before `nowMs`: alias groups, seahorse rows, cron runs, sessions old and new. */
export function sampleReportHome(nowMs: number): string {
  const home = tempDir();
  const day = (d: number) => new Date(nowMs - d * 86_400_000).toISOString();
  const sessions = [];
  for (let i = 0; i < 40; i++) {
    const at = day(i * 3);
    sessions.push({
      key: i % 4 === 0 ? `agent:cron-job${i % 3}-0000000${i % 10}-1111-2222-3333-444444444444` : `sk_v1_s${i}`,
      updated: at,
      seahorse: i % 2 ? [at.replace('T', ' ').slice(0, 19)] : undefined,
      aliases: i % 5 === 1 ? ['agent:main:main', `sk_v1_s${i + 1}`] : undefined,
    });
  }
  handHome(home, sessions);
  return home;
}
