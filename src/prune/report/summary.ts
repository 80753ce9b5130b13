import type { Plan } from '../plan/plan.js';

/**
 * Sessions counted by verdict (action and reason), for the summary a person reads first and the
 * prompt before an apply. Generic on purpose: a verdict the planner gains (a new keep reason) is
 * counted and shown with no code here.
 */
export interface VerdictCount {
  action: 'keep' | 'delete';
  reason: string;
  sessions: number;
  /** .jsonl + .meta.json bytes. */
  bytes: number;
}

export class VerdictTally {
  private readonly byKey = new Map<string, VerdictCount>();

  add(action: 'keep' | 'delete', reason: string, bytes: number): void {
    const k = `${action}\0${reason}`;
    let c = this.byKey.get(k);
    if (!c) this.byKey.set(k, (c = { action, reason, sessions: 0, bytes: 0 }));
    c.sessions++;
    c.bytes += bytes;
  }

  /** Deletions first, then the most sessions first; ties by reason, so the order is stable. */
  list(): VerdictCount[] {
    return [...this.byKey.values()].sort(
      (a, b) =>
        (a.action === b.action ? 0 : a.action === 'delete' ? -1 : 1) ||
        b.sessions - a.sessions ||
        (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0),
    );
  }
}

/** The plan's verdicts, before anything is deleted (what the prompt before an apply shows). */
export function planVerdicts(plan: Plan): VerdictCount[] {
  const t = new VerdictTally();
  for (const g of plan.groups) for (const m of g.members) t.add(g.action, g.reason, m.jsonlBytes + m.metaBytes);
  return t.list();
}
