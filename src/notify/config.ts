import { createHash } from 'node:crypto';
import { field, readSection, reject, sectionError, sectionNaming, type Field } from '../config/section.js';

/**
 * The `notify` section of the guard config (docs/notify.md#configuration): where messages go and
 * which transitions are sent. A target is an ntfy topic URL, a webhook URL or a command (an argv
 * list, run without a shell). URLs and tokens are secrets: no message of this file quotes them,
 * and what is shown of a target is its label (src/notify/redact.ts).
 */
export type TargetType = 'ntfy' | 'webhook' | 'command';

export interface NotifyTarget {
  type: TargetType;
  /** ntfy topic URL or webhook URL (http or https). */
  url?: string;
  /** argv of the command: the program (an absolute path) and its arguments. */
  command?: string[];
  /** What logs and `notify --test` call it; default: the redacted URL or the program. */
  name?: string;
  /** Sent as `Authorization: Bearer <token>` (ntfy access tokens, webhook secrets). */
  token?: string;
}

export type MinLevel = 'warn' | 'critical';

export interface NotifyConfig {
  targets: NotifyTarget[];
  /** Health problems (and the other conditions) at or above this level are sent. */
  min_level: MinLevel;
  /** A reminder every this many minutes while a condition lasts; 0: none. */
  reminder_minutes: number;
  /** At most this many messages an hour (a token bucket of 3); the rest wait their turn. */
  max_per_hour: number;
  /** One delivery attempt's limit (HTTP request or command). */
  timeout_seconds: number;
  /** Attempts after the first before a message is given up for a target. */
  retries: number;
  /** The first retry's delay; each next one doubles it (at most an hour). */
  retry_seconds: number;
  /** The gateway down or hung this long before it is announced. */
  gateway_down_minutes: number;
  /** A restart's bootstrap gap above this is announced; null: prune.max_bootstrap_seconds, else 30 s; 0: never. */
  bootstrap_budget_seconds: number | null;
  /** Free space under this (MiB) is announced; null: health.disk_free_warn_mb. */
  disk_free_mb: number | null;
}

export const DEFAULT_NOTIFY: Readonly<NotifyConfig> = Object.freeze({
  targets: [],
  min_level: 'warn',
  reminder_minutes: 0,
  max_per_hour: 20,
  timeout_seconds: 10,
  retries: 5,
  retry_seconds: 30,
  gateway_down_minutes: 5,
  bootstrap_budget_seconds: null,
  disk_free_mb: null,
});

/** Adds one ntfy target whose URL stays out of the config file (e.g. from a systemd credential). */
export const NOTIFY_URL_ENV = 'PICOCLAW_GUARD_NOTIFY_URL';

const TARGET_KEYS = ['type', 'url', 'command', 'name', 'token'] as const;

function httpUrl(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** One target, or why not (naming the item and the key, never a value). */
export function readTarget(v: unknown, n: number): NotifyTarget | string {
  const at = `item ${n + 1}`;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `${at} must be an object`;
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!(TARGET_KEYS as readonly string[]).includes(k))
      return `${at} has an unknown key ${JSON.stringify(k.slice(0, 40))} (known: ${TARGET_KEYS.join(', ')})`;
  if (o.type !== 'ntfy' && o.type !== 'webhook' && o.type !== 'command')
    return `${at}: "type" must be "ntfy", "webhook" or "command"`;
  const t: NotifyTarget = { type: o.type };
  if (o.name !== undefined) {
    if (typeof o.name !== 'string' || o.name.trim() === '' || o.name.length > 64)
      return `${at}: "name" must be a string of 1 to 64 characters`;
    t.name = o.name;
  }
  if (o.token !== undefined) {
    if (typeof o.token !== 'string' || o.token === '' || /\s/.test(o.token))
      return `${at}: "token" must be a string without spaces`;
    t.token = o.token;
  }
  if (o.type === 'command') {
    if (o.url !== undefined) return `${at}: a command target has no "url"`;
    const c = o.command;
    if (!Array.isArray(c) || c.length === 0 || !c.every((x) => typeof x === 'string'))
      return `${at}: "command" must be a list of strings, the program first`;
    if (!(c[0] as string).startsWith('/')) return `${at}: "command" must start with an absolute path (no shell)`;
    t.command = c;
  } else {
    if (o.command !== undefined) return `${at}: an ${o.type} target has no "command"`;
    if (!httpUrl(o.url)) return `${at}: "url" must be an http:// or https:// URL`;
    t.url = o.url as string;
  }
  return t;
}

const isAmount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const number = (what: string, ok: (v: number) => boolean): Field<number> =>
  field(what, ['number'], (v) => isAmount(v) && ok(v));
const orNull = (what: string): Field<number | null> =>
  field(`${what}, or null`, ['number', 'null'], (v) => v === null || isAmount(v));

const FIELDS: { [K in keyof NotifyConfig]: Field<NotifyConfig[K]> } = {
  targets: {
    what: 'a list of targets ({"type": "ntfy" | "webhook", "url": ...} or {"type": "command", "command": [...]})',
    types: ['array'],
    read: (v) => {
      if (!Array.isArray(v)) return reject();
      const out: NotifyTarget[] = [];
      for (const [i, x] of v.entries()) {
        const t = readTarget(x, i);
        if (typeof t === 'string') return reject(`has a bad target: ${t}`);
        out.push(t);
      }
      return out;
    },
  },
  min_level: field('"warn" or "critical"', ['string'], (v) => v === 'warn' || v === 'critical'),
  reminder_minutes: number('a number of minutes, 0 or more (0: no reminders)', () => true),
  max_per_hour: number('a number from 1 to 3600', (v) => v >= 1 && v <= 3600),
  timeout_seconds: number('a number of seconds from 0.1 to 300', (v) => v >= 0.1 && v <= 300),
  retries: number('a whole number from 0 to 20', (v) => Number.isInteger(v) && v <= 20),
  retry_seconds: number('a number of seconds from 0.1 to 3600', (v) => v >= 0.1 && v <= 3600),
  gateway_down_minutes: number('a number of minutes, 0 or more', () => true),
  bootstrap_budget_seconds: orNull('a number of seconds, 0 or more (0: never)'),
  disk_free_mb: orNull('a number of MiB, 0 or more'),
};

export function parseNotifyConfig(
  section: Record<string, unknown> | undefined,
  path: string | null,
  env: NodeJS.ProcessEnv = {},
): NotifyConfig {
  const naming = sectionNaming('notify', path, Object.keys(FIELDS));
  const out: NotifyConfig = { ...DEFAULT_NOTIFY, ...readSection(FIELDS, section, naming) };
  out.targets = [...out.targets];
  const envUrl = env[NOTIFY_URL_ENV];
  if (envUrl !== undefined && envUrl !== '') {
    if (!httpUrl(envUrl))
      throw sectionError(
        { ...naming, where: `environment ${NOTIFY_URL_ENV}`, path: null },
        `environment ${NOTIFY_URL_ENV} must be an http:// or https:// URL`,
        'set it to the ntfy topic URL, or unset it',
      );
    out.targets.push({ type: 'ntfy', url: envUrl, name: `ntfy (${NOTIFY_URL_ENV})` });
  }
  return out;
}

/** A stable key for a target that names no secret: a hash of its whole definition. */
export function targetKey(t: NotifyTarget): string {
  return createHash('sha256')
    .update(JSON.stringify([t.type, t.url ?? null, t.command ?? null, t.token ?? null]))
    .digest('hex')
    .slice(0, 12);
}
