import { USABLE_SINCE_MS } from '../../picoclaw/time.js';
import type { AgeCheck, PlanGroup, PlanHold } from './types.js';
import type { Policy } from '../policy.js';

/** What the age step reads of the planner's input. */
export interface AgeInput {
  policy: Policy;
  now: number;
  skipAgeCheck?: boolean;
  trustClock?: boolean;
  holds?: readonly PlanHold[];
}

/**
 * The planner's age step, and whether the clock can be trusted for it (docs/bad-input.md#the-clock):
 * what the age rules would delete is counted first, and the step runs only when the clock is
 * believable or the operator confirmed it (`trustClock`).
 */

const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
const SEASON_MS = 90 * DAY_MS;

/** How many of xs pass. */
function count<T>(xs: readonly T[], pass: (x: T) => boolean): number {
  let n = 0;
  for (const x of xs) if (pass(x)) n++;
  return n;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Why the clock cannot be trusted for the age step (docs/bad-input.md#the-clock), signals that hold
 * whatever the home looks like:
 * - the age steps would delete most of the dated sessions they may delete (at least 2, over half), and
 *   every one of those fell silent long before the cutoff (three age limits, 90 days at least: no
 *   deletable session was active in that time just before it): a clock far ahead looks exactly so,
 *   while a first pass on a board used every day for months deletes most of its sessions too, but up
 *   to the cutoff, and a board left idle for a few weeks is no sign;
 * - whatever their share, the sessions the age steps would delete fell silent more than a year
 *   before the cutoff while others were active since: a clock years ahead, however many sessions
 *   were written under it;
 * - the newest activity the sessions record is more than max_age_days older than the newest write
 *   on disk (their files' modification times): the times the sessions carry were written by a
 *   clock that lagged, or the clock that reads them now is not the one that wrote them.
 * Files of sessions under a restore hold are left out (a restore writes old content anew).
 */
export function clockSignals(
  groups: readonly PlanGroup[],
  deletable: Uint8Array,
  would: number,
  newestVictimMs: number | null,
  cutoffMs: number,
  newestMs: number | null,
  policy: Policy,
  holds: Map<string, PlanHold> | null,
): string[] {
  const out: string[] = [];
  const dated = count(groups, (g) => g.lastActivityMs !== null && deletable[g.id] === 1);
  // How long before the cutoff the sessions to delete fell silent: the newest of them against the cutoff.
  const silentMs = newestVictimMs === null ? 0 : cutoffMs - newestVictimMs;
  const limitMs = Math.max(policy.max_age_days, policy.cron_max_age_days) * DAY_MS;
  // A long silence: three age limits, and at least a season (a board idle for a few weeks is no sign).
  const longSilence = Math.max(3 * limitMs, SEASON_MS);
  if (would >= 2 && would * 2 > dated && silentMs > longSilence)
    out.push(
      `the age check would delete ${would} of the ${dated} dated sessions it may delete, all silent for ` +
        `${Math.round(silentMs / DAY_MS)} days before the cutoff: a clock far ahead looks so`,
    );
  else if (would >= 1 && silentMs > YEAR_MS && newestMs !== null && newestMs > cutoffMs)
    out.push(
      `the sessions the age check would delete fell silent ${Math.round(silentMs / DAY_MS)} days before ` +
        `the cutoff, while others were active since: a clock years ahead looks so`,
    );
  let newestWrite = -Infinity;
  for (const g of groups) {
    if (g.lastActivityMs === null || g.reason === 'restored_hold') continue;
    for (const m of g.members) {
      if (holds?.has(`${m.agent}\0${m.key}`)) continue;
      for (const f of [m.files.meta, m.files.jsonl]) if (f && f.mtimeMs > newestWrite) newestWrite = f.mtimeMs;
    }
  }
  if (newestMs !== null && newestWrite - newestMs > limitMs)
    out.push(
      `the newest activity the sessions record (${iso(newestMs)}) is ` +
        `${Math.round((newestWrite - newestMs) / DAY_MS)} days older than the newest write on disk ` +
        `(${iso(newestWrite)}): the times they carry do not match the clock`,
    );
  return out;
}

/** The age step: marks the victims (unless the clock is doubted) and says how it went. */
export function applyAgeStep(
  groups: PlanGroup[],
  deletable: Uint8Array,
  input: AgeInput,
  newestMs: number | null,
  holds: Map<string, PlanHold>,
): { ageCheck: AgeCheck; cutoff: number; clockDoubts: string[]; ageRefused: boolean } {
  const { policy, now } = input;
  let ageCheck: AgeCheck = 'disabled';
  let cutoff = -Infinity;
  const clockDoubts: string[] = [];
  const ageOn = policy.max_age_days > 0 || policy.cron_max_age_days > 0;
  let ageRefused = false;
  if (ageOn && now >= USABLE_SINCE_MS && !input.skipAgeCheck) {
    const mainCut = policy.max_age_days > 0 ? now - policy.max_age_days * DAY_MS : -Infinity;
    const cronCut = policy.cron_max_age_days > 0 ? now - policy.cron_max_age_days * DAY_MS : -Infinity;
    let would = 0;
    let newestVictim: number | null = null;
    for (const g of groups) {
      if (deletable[g.id] !== 1) continue;
      const t = g.lastActivityMs!;
      if (t < mainCut || (g.cronJob !== null && t < cronCut)) {
        would++;
        if (newestVictim === null || t > newestVictim) newestVictim = t;
      }
    }
    if (!input.trustClock && would > 0) {
      const cutoffMs = Math.max(mainCut, cronCut);
      const held = input.holds?.length ? holds : null;
      clockDoubts.push(...clockSignals(groups, deletable, would, newestVictim, cutoffMs, newestMs, policy, held));
      ageRefused = clockDoubts.length > 0;
    }
  }
  if (policy.max_age_days > 0) {
    if (now < USABLE_SINCE_MS) ageCheck = 'skipped_clock';
    else if (input.skipAgeCheck) ageCheck = 'skipped_clock_jump';
    else if (ageRefused) ageCheck = 'refused_clock';
    else {
      ageCheck = 'applied';
      cutoff = now - policy.max_age_days * DAY_MS;
      for (const g of groups) {
        if (deletable[g.id] && g.lastActivityMs! < cutoff) {
          g.action = 'delete';
          g.reason = 'max_age_days';
        }
      }
    }
  }
  return { ageCheck, cutoff, clockDoubts, ageRefused };
}
