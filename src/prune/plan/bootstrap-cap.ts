import { formatBytes, WHOLE_MIB } from '../../io/bytes.js';
import {
  CAP_MARGIN,
  predictGap,
  predictionError,
  sessionsForBudget,
  type BootstrapModel,
  type Trust,
} from '../../startup-model/fit.js';
import type { PlanGroup } from './types.js';

/**
 * The `max_bootstrap_seconds` step of the planner: from the startup-time model, a cap on
 * the default agent's sessions (the only ones PicoClaw bootstraps at start), and the
 * oldest deletable sessions of that folder beyond it. Pure; the model comes in fitted.
 * With an untrusted model, nothing is deleted for this key and the plan says why.
 */
export interface BootstrapInput {
  budgetSeconds: number;
  /** The default agent's sessions folder. */
  dir: string;
  model: BootstrapModel | null;
  trust: Trust;
}

export interface BootstrapVolume {
  sessions: number;
  jsonl_bytes: number;
  /** The model's gap; null without a model. */
  predicted_seconds: number | null;
  /** Its ± (predictionError); the cap keeps predicted + CAP_MARGIN × this within the budget. */
  error_seconds: number | null;
}

export interface BootstrapPlan {
  budget_seconds: number;
  state: 'applied' | 'within_budget' | 'untrusted' | 'unreachable';
  message: string;
  model: BootstrapModel | null;
  trust: Trust;
  before: BootstrapVolume;
  after: BootstrapVolume;
  /** The most sessions the budget allows at the current MiB per session (null: none would do). */
  cap_sessions: number | null;
  deleted_groups: number;
}

const r1 = (x: number) => Math.round(x * 10) / 10;

export function describeVolume(v: { sessions: number; jsonl_bytes: number }): string {
  return `${v.sessions} sessions / ${formatBytes(v.jsonl_bytes, WHOLE_MIB)}`;
}

export function applyBootstrapCap(
  groups: PlanGroup[],
  deletable: Uint8Array,
  input: BootstrapInput | null,
): BootstrapPlan | null {
  if (!input || input.budgetSeconds <= 0) return null;
  const inDir = (g: PlanGroup) => g.members.filter((m) => m.dir === input.dir);
  let sessions = 0;
  let bytes = 0;
  for (const g of groups) {
    if (g.action !== 'keep') continue;
    for (const m of inDir(g)) {
      sessions++;
      bytes += m.jsonlBytes;
    }
  }
  const m = input.model;
  const vol = (s: number, b: number): BootstrapVolume => ({
    sessions: s,
    jsonl_bytes: b,
    predicted_seconds: m ? r1(predictGap(m, s, b)) : null,
    error_seconds: m ? r1(predictionError(m, s, b)) : null,
  });
  const said = (v: BootstrapVolume) => `${v.predicted_seconds} s ± ${v.error_seconds} s for ${describeVolume(v)}`;
  const before = vol(sessions, bytes);
  const cap = m ? sessionsForBudget(m, input.budgetSeconds, sessions > 0 ? bytes / sessions : 0) : null;
  const base = {
    budget_seconds: input.budgetSeconds,
    model: m,
    trust: input.trust,
    before,
    cap_sessions: cap === Infinity ? null : cap,
    deleted_groups: 0,
  };
  if (!m || !input.trust.trusted) {
    const more = input.trust.more_restarts
      ? `; it needs ${input.trust.more_restarts} more restart(s) with a measured gap`
      : '';
    return {
      ...base,
      state: 'untrusted',
      after: before,
      message:
        `nothing deleted for max_bootstrap_seconds: the startup model is not trustworthy ` +
        `yet (${input.trust.why})${more}`,
    };
  }
  const fits = (s: number, b: number) =>
    predictGap(m, s, b) + CAP_MARGIN * predictionError(m, s, b) <= input.budgetSeconds;
  if (fits(sessions, bytes)) {
    return {
      ...base,
      state: 'within_budget',
      after: before,
      message:
        `next restart predicted ${said(before)}: within the ${input.budgetSeconds}` +
        ` s budget (with ${CAP_MARGIN} × ± of room)`,
    };
  }
  if (cap === null) {
    // Deleting every session would not reach it: deleting some would cost history for nothing.
    return {
      ...base,
      state: 'unreachable',
      after: before,
      message:
        `nothing deleted for max_bootstrap_seconds: the model's fixed part alone ` +
        `(${r1(m.a)} s, ${CAP_MARGIN} × ± ${r1(predictionError(m, 0, 0))} s of room) exceeds the ` +
        `${input.budgetSeconds} s budget, whatever is deleted`,
    };
  }
  const detail =
    `next restart predicted ${said(before)}; the ${input.budgetSeconds} s budget (with ` +
    `${CAP_MARGIN} × ± of room) allows about ${cap} sessions`;
  let deleted = 0;
  for (const g of groups) {
    if (fits(sessions, bytes)) break;
    const mine = inDir(g);
    if (mine.length === 0 || g.action !== 'keep' || !deletable[g.id]) continue;
    g.action = 'delete';
    g.reason = 'max_bootstrap_seconds';
    g.detail = detail;
    deleted++;
    sessions -= mine.length;
    for (const x of mine) bytes -= x.jsonlBytes;
  }
  const after = vol(sessions, bytes);
  if (!fits(sessions, bytes)) {
    return {
      ...base,
      state: 'unreachable',
      after,
      deleted_groups: deleted,
      message:
        `the ${input.budgetSeconds} s budget cannot be reached: only protected sessions (newest, undated ` +
        `or unreadable) are left; ${deleted} group(s) deleted, next restart predicted ` +
        `${said(after)}`,
    };
  }
  return {
    ...base,
    state: 'applied',
    after,
    deleted_groups: deleted,
    message:
      `${deleted} group(s) of the default agent deleted: next restart predicted ` +
      `${said(after)} (was ${said(before)}; budget ${input.budgetSeconds} s, kept with ` +
      `${CAP_MARGIN} × ± of room)`,
  };
}
