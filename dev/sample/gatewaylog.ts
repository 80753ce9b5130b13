import {
  sampleGatewayEvents,
  type Level,
  type SampleLogEvent,
  type SampleLogLevel,
  type SampleLogOptions,
} from './gateway-events.js';
import { offsetText, wall, zTime } from './log-time.js';

/**
 * The sample gateway log rendered as PicoClaw writes it: the file's zerolog JSON lines, the console
 * lines on stdout or journald, and both interleaved when stdout is redirected into the file. The
 * events themselves come from gateway-events.ts.
 */

const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function visible(e: SampleLogEvent, level: SampleLogLevel): boolean {
  return RANK[e.level] >= RANK[level];
}

/** One line of the file: zerolog's JSON (docs/picoclaw.md#line-format). */
export function renderJsonLine(e: SampleLogEvent, offsetMin: number, buildPrefix = '/src/'): string {
  const obj: Record<string, unknown> = {
    level: e.level,
    component: e.component,
    ...e.fields,
    time: zTime(e.ms, offsetMin),
    caller: buildPrefix + e.caller,
  };
  if (e.message !== '') obj.message = e.message;
  return JSON.stringify(obj);
}

const CONSOLE_LEVEL: Record<Level, string> = { debug: 'DBG', info: 'INF', warn: 'WRN', error: 'ERR' };

/** PicoClaw's FormatFieldValue (pkg/logger/logger.go): quote strings with a space, newline-prefix multi-line ones. */
function consoleValue(v: unknown): string {
  if (typeof v === 'string') {
    if (v.includes('\n')) return '\n' + v;
    if (v.includes(' ')) return JSON.stringify(v);
    return v;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/**
 * One console line as PicoClaw prints it on stdout (no colour: not a TTY). The caller is
 * made relative to the process's working directory (zerolog's default FormatCaller).
 */
export function renderConsoleLine(
  e: SampleLogEvent,
  offsetMin: number,
  opts: { cwd?: string; buildPrefix?: string } = {},
): string {
  const w = wall(e.ms, offsetMin);
  if (e.stdoutOnly) return e.message;
  const abs = (opts.buildPrefix ?? '/src/') + e.caller;
  const cwd = (opts.cwd ?? '/').replace(/\/+$/, '');
  const caller = cwd === '' ? abs.replace(/^\/+/, '') : abs.startsWith(cwd + '/') ? abs.slice(cwd.length + 1) : abs;
  const keys = Object.keys(e.fields).sort();
  const ordered = keys.includes('error') ? ['error', ...keys.filter((k) => k !== 'error')] : keys;
  const parts = [w.time, CONSOLE_LEVEL[e.level], e.component, `${caller} >`];
  if (e.message !== '') parts.push(e.message);
  for (const k of ordered) parts.push(`${k}=${consoleValue(e.fields[k])}`);
  return parts.join(' ');
}

export interface ConsoleRenderOptions {
  /** Render as `journalctl -o short-iso` shows it: `<iso time> <host> picoclaw[<pid>]: <line>`. */
  journald?: { host?: string; ident?: string; precise?: boolean; colonOffset?: boolean };
  /** The gateway's working directory (callers are shown relative to it); default `/` (systemd). */
  cwd?: string;
  /** Include the fmt.Println banners stdout carries (`📦 Agent Status:` …); default true. */
  banners?: boolean;
}

/** The same sample as it appears on stdout: a plain redirect, or journald's short-iso. */
export function renderConsoleLog(o: SampleLogOptions, c: ConsoleRenderOptions = {}): string {
  const off = o.utcOffsetMin ?? 0;
  const out: string[] = [];
  for (const e of sampleGatewayEvents(o)) {
    if (e.stdoutOnly ? c.banners === false : !visible(e, o.level)) continue;
    const text = renderConsoleLine(e, off, { cwd: c.cwd });
    for (const physical of text.split('\n')) {
      if (!c.journald) {
        out.push(physical);
        continue;
      }
      if (physical === '') continue; // journald drops the empty line of "\n📦 …"
      const w = wall(e.ms, off);
      const frac = c.journald.precise ? '.' + String(w.sub).padStart(3, '0') + '000' : '';
      out.push(
        `${w.date}T${w.time}${frac}${offsetText(off, c.journald.colonOffset ?? false)}` +
          ` ${c.journald.host ?? 'raspberrypi'} ${c.journald.ident ?? 'picoclaw'}` +
          `[${e.pid}]: ${physical}`,
      );
    }
  }
  return out.length > 0 ? out.join('\n') + '\n' : '';
}

/** The file `<home>/logs/gateway.log` for this sample: JSON lines at the configured level. */
export function renderGatewayLog(o: SampleLogOptions): string {
  const off = o.utcOffsetMin ?? 0;
  const lines: string[] = [];
  for (const e of sampleGatewayEvents(o)) if (!e.stdoutOnly && visible(e, o.level)) lines.push(renderJsonLine(e, off));
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}

/**
 * gateway.log when the gateway's stdout is also redirected into it (`picoclaw gateway
 * >> ~/.picoclaw/logs/gateway.log`): zerolog's MultiWriter writes each event to the
 * console writer first and then to the file (docs/picoclaw.md#line-format), so every event appears twice in a
 * row, console then JSON, with the stdout banners in between.
 */
export function renderRedirectedLog(o: SampleLogOptions, c: Omit<ConsoleRenderOptions, 'journald'> = {}): string {
  const off = o.utcOffsetMin ?? 0;
  const out: string[] = [];
  for (const e of sampleGatewayEvents(o)) {
    if (e.stdoutOnly) {
      if (c.banners !== false) out.push(...renderConsoleLine(e, off, { cwd: c.cwd }).split('\n'));
      continue;
    }
    if (!visible(e, o.level)) continue;
    out.push(...renderConsoleLine(e, off, { cwd: c.cwd }).split('\n'));
    out.push(renderJsonLine(e, off));
  }
  return out.length > 0 ? out.join('\n') + '\n' : '';
}
