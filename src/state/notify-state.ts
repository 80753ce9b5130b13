import { isRecord, jsonState } from './store.js';

/**
 * What the notifier remembers across daemon restarts, in the state folder (docs/notify.md#what-is-remembered):
 * - `active`: the conditions it has announced and not yet announced cleared, so a restart while a problem
 *   lasts sends nothing (the same transition is never announced twice);
 * - `outbox`: messages not yet accepted by every target, so a kill between the transition and its delivery
 *   still delivers it at the next start (for at most OUTBOX_MAX_AGE_MS).
 *
 * Written only when one of them changes (a transition, a delivery that finished): an idle daemon on a
 * healthy board writes nothing. Written whole, atomically (temp file, fsync, rename).
 */
export const NOTIFY_STATE_FILE = 'notify-state.json';
export const OUTBOX_MAX = 20;
export const OUTBOX_MAX_AGE_MS = 24 * 3600 * 1000;

export type NotifyLevel = 'ok' | 'warn' | 'critical';

export interface ActiveCondition {
  level: Exclude<NotifyLevel, 'ok'>;
  code: string;
  message: string;
  /** When it was announced (ISO). */
  since: string;
  /** The last message about it, the raise or a reminder (ISO). */
  last_sent_at: string;
}

/** The part of a message that survives a restart; the health snapshot does not (it would be stale, and large). */
export interface StoredMessage {
  event: 'raised' | 'cleared' | 'reminder' | 'test';
  level: NotifyLevel;
  code: string;
  message: string;
  time: string;
}

export interface OutboxItem {
  id: string;
  message: StoredMessage;
  /** Keys of the targets that have not accepted it yet (src/notify/config.ts targetKey: a hash, no secret). */
  pending: string[];
  created_at: string;
}

export interface NotifyState {
  active: Record<string, ActiveCondition>;
  outbox: OutboxItem[];
}

export function emptyNotifyState(): NotifyState {
  return { active: {}, outbox: [] };
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const LEVELS = ['ok', 'warn', 'critical'];
const EVENTS = ['raised', 'cleared', 'reminder', 'test'];

function activeOf(v: unknown): ActiveCondition | null {
  const o = v as Partial<ActiveCondition> | null;
  if (!o || typeof o !== 'object') return null;
  if ((o.level !== 'warn' && o.level !== 'critical') || !isStr(o.code) || !isStr(o.message)) return null;
  if (!isStr(o.since) || !isStr(o.last_sent_at)) return null;
  return { level: o.level, code: o.code, message: o.message, since: o.since, last_sent_at: o.last_sent_at };
}

function outboxOf(v: unknown): OutboxItem | null {
  const o = v as Partial<OutboxItem> | null;
  if (!o || typeof o !== 'object' || !isStr(o.id) || !isStr(o.created_at) || !Array.isArray(o.pending)) return null;
  const m = o.message as Partial<StoredMessage> | undefined;
  if (!m || !EVENTS.includes(m.event as string) || !LEVELS.includes(m.level as string)) return null;
  if (!isStr(m.code) || !isStr(m.message) || !isStr(m.time)) return null;
  return {
    id: o.id,
    created_at: o.created_at,
    pending: o.pending.filter(isStr),
    message: { event: m.event!, level: m.level!, code: m.code, message: m.message, time: m.time },
  };
}

/** An entry of the wrong shape is dropped; a file that is not an object is damaged (reported, starting afresh). */
export const notifyFile = jsonState<NotifyState>(NOTIFY_STATE_FILE, {
  what: 'a notify state',
  validate: (o) => {
    if (!isRecord(o)) return null;
    const state = emptyNotifyState();
    if (isRecord(o.active))
      for (const [k, v] of Object.entries(o.active)) {
        const a = activeOf(v);
        // As a data property: a key JSON gives as its own (even `__proto__`) stays one, never a prototype.
        if (a)
          Object.defineProperty(state.active, k, { value: a, enumerable: true, writable: true, configurable: true });
      }
    if (Array.isArray(o.outbox))
      for (const v of o.outbox) {
        const item = outboxOf(v);
        if (item) state.outbox.push(item);
      }
    return state;
  },
  empty: emptyNotifyState,
  mode: 0o600,
  remedy: 'starting afresh (a condition still active may be announced again)',
});

/** The remembered state; a missing file is an empty state, an unreadable or foreign one too (with the reason). */
export function readNotifyState(stateDir: string): { state: NotifyState; error: string | null } {
  const r = notifyFile.read(stateDir);
  return { state: r.value, error: r.problem };
}

/** Throws StateWriteError (src/state/store.ts). */
export function writeNotifyState(stateDir: string, state: NotifyState): void {
  notifyFile.write(stateDir, state);
}
