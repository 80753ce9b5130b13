import type { HealthReport } from '../health/index.js';
import type { ActiveCondition, NotifyLevel, StoredMessage } from '../state/notify-state.js';

/**
 * Which transitions to announce: pure (readings, the announced conditions, the clock → messages and
 * the next announced conditions), so every rule is tested with a fake clock on plain objects.
 *
 * A condition is a key (`health:<code>`, `gateway`, `disk`, `prune`, `bootstrap`) that is either
 * active (at a level at or above `min_level`) or not. The invariants (test/notify/detect.test.ts):
 * - one message per transition: `raised` when a key becomes active or its level rises, `cleared`
 *   when it stops being active, nothing while it stays as it is (unless a reminder is due);
 * - a family that this observation cannot see (no health reading yet, no pass this time) keeps its
 *   conditions as they were: not seeing a problem is not the problem clearing;
 * - the gateway counts only after it has been down or hung for `gateway_down_ms` in a row.
 */
export interface Rules {
  min_level: 'warn' | 'critical';
  /** 0: no reminders. */
  reminder_ms: number;
  gateway_down_ms: number;
  /** 0: never. */
  bootstrap_budget_seconds: number;
  disk_free_warn_bytes: number;
  disk_free_critical_bytes: number;
}

export interface PassSeen {
  /** The pass outcome (src/metrics/guard-metrics.ts PRUNE_OUTCOMES): ok, partial, failed count; the rest is no news. */
  outcome: string;
  error: string | null;
}

export interface BootstrapSeen {
  seconds: number;
  started_at: string | null;
}

export interface Observation {
  nowMs: number;
  /** null: no reading yet (health, gateway and disk keep their conditions). */
  health: HealthReport | null;
  /** undefined: no pass ended since the last observation. */
  pass?: PassSeen;
  /** undefined: no startup report; null: no finished restart in it. */
  bootstrap?: BootstrapSeen | null;
}

export interface DetectMemory {
  /** When the gateway was first seen down or hung in the current stretch (not persisted: a restart starts over). */
  gatewayBadSinceMs: number | null;
}

interface Condition {
  level: Exclude<NotifyLevel, 'ok'>;
  code: string;
  message: string;
}

/** Codes announced by their own rule, never as a plain health problem. */
export const OWN_RULE_CODES = new Set([
  'gateway_down',
  'gateway_hung',
  'picoclaw_missing',
  'gateway_starting',
  'disk_free',
]);
const GATEWAY_CODES = ['gateway_down', 'gateway_hung', 'picoclaw_missing'];
const RANK: Record<NotifyLevel, number> = { ok: 0, warn: 1, critical: 2 };
const MIB = 1024 * 1024;

function familyOf(key: string): string {
  return key.startsWith('health:') ? 'health' : key;
}

function minutes(ms: number): string {
  return ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : `${Math.max(1, Math.round(ms / 60_000))} min`;
}

/** The conditions this observation sees, and which families it saw at all. */
function conditions(
  obs: Observation,
  rules: Rules,
  mem: DetectMemory,
): { now: Map<string, Condition>; seen: Set<string> } {
  const now = new Map<string, Condition>();
  const seen = new Set<string>();
  const h = obs.health;
  if (h) {
    seen.add('health');
    for (const p of h.problems)
      if (!OWN_RULE_CODES.has(p.code) && !now.has(`health:${p.code}`))
        now.set(`health:${p.code}`, { level: p.level, code: p.code, message: p.message });

    seen.add('gateway');
    const g = h.problems.find((p) => GATEWAY_CODES.includes(p.code));
    if (!g) mem.gatewayBadSinceMs = null;
    else {
      mem.gatewayBadSinceMs ??= obs.nowMs;
      const lasted = obs.nowMs - mem.gatewayBadSinceMs;
      if (lasted >= rules.gateway_down_ms)
        now.set('gateway', { level: g.level, code: g.code, message: `${g.message} (for ${minutes(lasted)})` });
    }

    if (h.filesystem.available) {
      seen.add('disk');
      const fs = h.filesystem;
      const at = fs.mount_point ? ` on ${fs.mount_point}` : '';
      const free = `${Math.round(fs.free_bytes / MIB)} MiB free${at}`;
      if (fs.free_bytes < rules.disk_free_critical_bytes)
        now.set('disk', {
          level: 'critical',
          code: 'disk_free',
          message: `${free} (critical below ${rules.disk_free_critical_bytes / MIB} MiB)`,
        });
      else if (fs.free_bytes < rules.disk_free_warn_bytes)
        now.set('disk', {
          level: 'warn',
          code: 'disk_free',
          message: `${free} (notify below ${rules.disk_free_warn_bytes / MIB} MiB)`,
        });
    }
  }

  const pass = obs.pass;
  if (pass && (pass.outcome === 'ok' || pass.outcome === 'failed' || pass.outcome === 'partial')) {
    seen.add('prune');
    if (pass.outcome === 'failed')
      now.set('prune', {
        level: 'critical',
        code: 'prune_failed',
        message: `a prune pass failed: ${pass.error ?? 'no reason given'}`,
      });
    else if (pass.outcome === 'partial')
      now.set('prune', {
        level: 'warn',
        code: 'prune_partial',
        message: `a prune pass stopped part-way: ${pass.error ?? 'it kept sessions it had planned to delete'}`,
      });
  }

  if (obs.bootstrap !== undefined) {
    seen.add('bootstrap');
    const b = obs.bootstrap;
    const budget = rules.bootstrap_budget_seconds;
    if (b && budget > 0 && b.seconds > budget)
      now.set('bootstrap', {
        level: 'warn',
        code: 'bootstrap_gap',
        message:
          `the gateway start${b.started_at ? ` at ${b.started_at}` : ''} spent ${b.seconds} s in the seahorse ` +
          `bootstrap (budget ${budget} s): prune sessions or raise the budget`,
      });
  }

  for (const [k, c] of now) if (RANK[c.level] < RANK[rules.min_level]) now.delete(k);
  return { now, seen };
}

export interface Detected {
  messages: StoredMessage[];
  active: Record<string, ActiveCondition>;
  /** The announced conditions changed (the state file is to be written). */
  changed: boolean;
}

export function detect(
  active: Readonly<Record<string, ActiveCondition>>,
  obs: Observation,
  rules: Rules,
  mem: DetectMemory,
): Detected {
  const time = new Date(obs.nowMs).toISOString();
  const { now, seen } = conditions(obs, rules, mem);
  const next: Record<string, ActiveCondition> = {};
  const messages: StoredMessage[] = [];
  let changed = false;
  for (const [key, prev] of Object.entries(active)) {
    if (!seen.has(familyOf(key))) {
      next[key] = prev;
      continue;
    }
    const cur = now.get(key);
    if (!cur) {
      messages.push({ event: 'cleared', level: 'ok', code: prev.code, message: `cleared: ${prev.message}`, time });
      changed = true;
      continue;
    }
    if (RANK[cur.level] > RANK[prev.level]) {
      messages.push({ event: 'raised', level: cur.level, code: cur.code, message: cur.message, time });
      next[key] = { ...cur, since: prev.since, last_sent_at: time };
      changed = true;
    } else if (rules.reminder_ms > 0 && obs.nowMs - Date.parse(prev.last_sent_at) >= rules.reminder_ms) {
      messages.push({ event: 'reminder', level: cur.level, code: cur.code, message: cur.message, time });
      next[key] = { ...cur, since: prev.since, last_sent_at: time };
      changed = true;
    } else if (cur.level !== prev.level || cur.code !== prev.code) {
      // Lower, or the same condition under another code (down → hung): kept quiet, remembered.
      next[key] = { ...prev, level: cur.level, code: cur.code, message: cur.message };
      changed = true;
    } else next[key] = prev;
  }
  for (const [key, cur] of now) {
    if (key in active) continue;
    messages.push({ event: 'raised', level: cur.level, code: cur.code, message: cur.message, time });
    next[key] = { ...cur, since: time, last_sent_at: time };
    changed = true;
  }
  return { messages, active: next, changed };
}
