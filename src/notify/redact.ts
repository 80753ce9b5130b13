import { basename } from 'node:path';
import type { NotifyTarget } from './config.js';

/**
 * What may be shown of a target. An ntfy topic name is a password (whoever knows it reads and
 * posts to the topic), a webhook URL often carries `?token=` or a secret path, and a URL may hold
 * `user:password@`. So only the scheme, host and port of a URL are ever shown, the path as `/…`;
 * of a command only the program's file name (its arguments may be secrets).
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const rest = u.pathname !== '/' || u.search !== '' || u.hash !== '' ? '/…' : '';
    return `${u.protocol}//${u.host}${rest}`;
  } catch {
    return '<invalid URL>';
  }
}

export function targetLabel(t: NotifyTarget): string {
  if (t.name) return t.name;
  if (t.type === 'command') return `command ${basename(t.command?.[0] ?? '?')}`;
  return `${t.type} ${redactUrl(t.url ?? '')}`;
}

/** The secrets a target carries, longest first: every one is cut out of any text that is logged or printed. */
export function secretsOf(t: NotifyTarget): string[] {
  const out = new Set<string>();
  if (t.token) out.add(t.token);
  if (t.url) {
    out.add(t.url);
    try {
      const u = new URL(t.url);
      if (u.pathname.length > 1) out.add(u.pathname);
      for (const p of u.pathname.split('/')) if (p.length >= 3) out.add(p);
      if (u.search) out.add(u.search.slice(1));
      for (const [, v] of u.searchParams) if (v.length >= 3) out.add(v);
      if (u.username) out.add(u.username);
      if (u.password) out.add(u.password);
    } catch {
      // an invalid URL never reaches a request
    }
  }
  for (const a of t.command?.slice(1) ?? []) if (a.length >= 3) out.add(a);
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every secret of the target replaced by `…`. */
export function scrub(text: string, t: NotifyTarget): string {
  let s = text;
  for (const secret of secretsOf(t)) s = s.split(secret).join('…');
  return s;
}
