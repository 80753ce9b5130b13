import { hostname } from 'node:os';
import type { HealthReport } from '../health/index.js';
import type { StoredMessage } from '../state/notify-state.js';

/**
 * One message, and how each kind of target receives it (docs/notify.md#what-each-event-looks-like):
 * - ntfy: POST of the text, with the `Title`, `Priority` and `Tags` headers ntfy documents
 *   (docs.ntfy.sh/publish: priority 1 min ... 3 default ... 5 max/urgent; tags are emoji short codes);
 * - webhook and command: one JSON object, `{event, level, code, message, board, time, health}`.
 */
export interface BoardName {
  hostname: string;
  model: string | null;
}

export interface NotifyMessage extends StoredMessage {
  board: BoardName;
  /** The health report of the refresh that saw the transition; null for a test or a message resent after a restart. */
  health: HealthReport | null;
}

export function boardName(h: HealthReport | null): BoardName {
  return { hostname: hostname(), model: h?.board.available ? (h.board.model ?? null) : null };
}

export function headline(m: Pick<NotifyMessage, 'event' | 'level' | 'code'>): string {
  switch (m.event) {
    case 'raised':
      return `${m.level.toUpperCase()} ${m.code}`;
    case 'reminder':
      return `still ${m.level.toUpperCase()}: ${m.code}`;
    case 'cleared':
      return `cleared: ${m.code}`;
    default:
      return 'test message';
  }
}

/** A header value Node's fetch accepts (Latin-1 only): RFC 2047 encoded-word when it is not ASCII (ntfy decodes it). */
export function headerText(s: string): string {
  const flat = s.replace(/[\r\n]+/g, ' ');

  return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat, 'utf8').toString('base64')}?=`;
}

const PRIORITY: Record<string, number> = { critical: 5, warn: 4, ok: 3 };
const TAGS: Record<string, string> = { critical: 'rotating_light', warn: 'warning', ok: 'white_check_mark' };

export function ntfyRequest(m: NotifyMessage): { body: string; headers: Record<string, string> } {
  const title = `${m.board.hostname}: ${headline(m)}`;
  const priority = m.event === 'cleared' ? 2 : m.event === 'test' ? 3 : (PRIORITY[m.level] ?? 3);
  const tag =
    m.event === 'cleared' ? TAGS.ok! : m.event === 'test' ? 'test_tube' : (TAGS[m.level] ?? 'information_source');
  return {
    body: m.message,
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      title: headerText(title),
      priority: String(priority),
      tags: `${tag},picoclaw-guard`,
    },
  };
}

export function jsonBody(m: NotifyMessage): string {
  return JSON.stringify({
    event: m.event,
    level: m.level,
    code: m.code,
    message: m.message,
    board: m.board,
    time: m.time,
    health: m.health,
  });
}
