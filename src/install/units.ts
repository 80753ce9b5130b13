import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExitCode, GuardError } from '../errors.js';

/**
 * Install-time code: the systemd units as `install-units` writes them for this board.
 *
 * The systemd units shipped at the package root (picoclaw-guard.service,
 * picoclaw-guard-prestart.service, picoclaw.service.d/picoclaw-guard.conf) are complete,
 * working files for the common layout (Node in /usr/bin, a global npm install, user
 * `picoclaw`). `install-units` rewrites the few lines that depend on the board: the Node
 * and CLI paths, the user, the PicoClaw home, the writable paths, ProtectHome, the video
 * group, the firmware devices, the loopback-only IP filter, and the gateway unit's name.
 * Everything else, hardening included, is the shipped text.
 */
export const GUARD_UNIT = 'picoclaw-guard.service';
export const PRESTART_UNIT = 'picoclaw-guard-prestart.service';
export const DROPIN_NAME = 'picoclaw-guard.conf';
export const SHIPPED_GATEWAY_UNIT = 'picoclaw.service';

export interface UnitValues {
  node: string;
  cli: string;
  user: string;
  /** The user's primary group; null leaves Group= out (systemd then uses the user's). */
  group: string | null;
  home: string;
  /** Writable paths beside the home; a `-` prefix tolerates a path that does not exist yet. */
  readWritePaths: string[];
  protectHome: 'yes' | 'read-only';
  gatewayUnit: string;
  /** Add SupplementaryGroups=video (vcgencmd on a Raspberry Pi). */
  videoGroup: boolean;
  /**
   * The device nodes of the shipped DeviceAllow= lines that exist on this board. The
   * others are left out: systemd logs "Couldn't stat device" for each missing one at
   * every start (every board without the Raspberry Pi firmware, every RISC-V board).
   */
  devices: string[];
  /** Keep IPAddressDeny=any + IPAddressAllow=localhost. */
  loopbackOnly: boolean;
  version: string;
}

export interface RenderedUnit {
  /** Relative to the destination folder. */
  file: string;
  text: string;
}

/** The package root: the folder above this file holding package.json (dist/src/install or src/install). */
export function packageRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(d, 'package.json')) && existsSync(join(d, GUARD_UNIT))) return d;
    const up = dirname(d);
    if (up === d)
      throw new GuardError(`cannot find the shipped unit files above ${fileURLToPath(import.meta.url)}`, {
        exitCode: ExitCode.FAILURE,
        hint: 'reinstall picoclaw-guard (the package ships picoclaw-guard.service at its root)',
      });
    d = up;
  }
}

export function readTemplates(root = packageRoot()): { guard: string; prestart: string; dropin: string } {
  return {
    guard: readFileSync(join(root, GUARD_UNIT), 'utf8'),
    prestart: readFileSync(join(root, PRESTART_UNIT), 'utf8'),
    dropin: readFileSync(join(root, `${SHIPPED_GATEWAY_UNIT}.d`, DROPIN_NAME), 'utf8'),
  };
}

/**
 * A path as a unit file may hold it: absolute, no whitespace, quotes or backslashes
 * (they would need quoting rules that differ between ExecStart= and ReadWritePaths=),
 * `%` doubled (systemd specifiers) and `$` doubled in command lines.
 */
export function unitPath(p: string, what: string, inCommand = false): string {
  if (!p.startsWith('/'))
    throw new GuardError(`${what} must be an absolute path, not ${p}`, { exitCode: ExitCode.USAGE });
  if (/[\s"'\\]/.test(p)) {
    throw new GuardError(`${what} (${p}) contains a space, quote or backslash, which the units cannot hold safely`, {
      exitCode: ExitCode.USAGE,
      hint: 'move it (or link it) to a path without such characters',
    });
  }
  const s = p.replace(/%/g, '%%');
  return inCommand ? s.replace(/\$/g, '$$$$') : s;
}

export function validUnitName(name: string): boolean {
  return /^[a-zA-Z0-9:_.\\@-]+\.service$/.test(name) && name.length <= 255;
}

function header(file: string, v: UnitValues): string {
  return `# Written by \`picoclaw-guard install-units\` (picoclaw-guard ${v.version})\n# from the shipped ${file}.\n`;
}

/** Width the written units keep to, so `install-units --dry-run` and an editor show them whole. */
const UNIT_WIDTH = 80;

/**
 * `Key=word word ...` on one line, or continued with a trailing backslash (systemd joins
 * such lines, the backslash read as a space) when long paths make it wider than 80
 * columns. Only for space-separated values whose words hold no whitespace (unitPath).
 */
function continued(key: string, words: string[]): string {
  const one = `${key}=${words.join(' ')}`;
  if (one.length <= UNIT_WIDTH) return one;
  const lines: string[] = [];
  let cur = `${key}=${words[0]}`;
  for (const w of words.slice(1)) {
    if (cur.length + 1 + w.length + 2 > UNIT_WIDTH) {
      lines.push(cur + ' \\');
      cur = '    ' + w;
    } else cur += ' ' + w;
  }
  lines.push(cur);
  return lines.join('\n');
}

/** A comment wider than the units' width, as several `# ` lines (a wrapped comment's line without `#` is no unit). */
function wrapComment(line: string): string[] {
  if (line.length <= UNIT_WIDTH || !line.startsWith('# ')) return [line];
  const lines: string[] = [];
  let cur = '#';
  for (const w of line.slice(2).split(' ')) {
    if (cur !== '#' && cur.length + 1 + w.length > UNIT_WIDTH) {
      lines.push(cur);
      cur = '#';
    }
    cur += ' ' + w;
  }
  lines.push(cur);
  return lines;
}

function rewrite(text: string, v: UnitValues): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# ') && line.length > UNIT_WIDTH) {
      out.push(...wrapComment(line));
      continue;
    }
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    const key = m?.[1];
    const value = m?.[2] ?? '';
    if (key === 'ExecStart') {
      const parts = /^(\S+)\s+(\S+)(.*)$/.exec(value);
      if (!parts) throw new Error(`unexpected ExecStart= in a shipped unit: ${value}`);
      out.push(
        continued('ExecStart', [
          unitPath(v.node, 'the Node.js binary', true),
          unitPath(v.cli, 'the picoclaw-guard CLI', true),
          ...parts[3]!.trim().split(/\s+/).filter(Boolean),
        ]),
      );
    } else if (key === 'User') out.push(`User=${v.user}`);
    else if (key === 'Group') {
      if (v.group) out.push(`Group=${v.group}`);
    } else if (key === 'Environment' && value.startsWith('PICOCLAW_HOME='))
      out.push(`Environment=PICOCLAW_HOME=${unitPath(v.home, 'the PicoClaw home')}`);
    else if (key === 'ReadWritePaths')
      out.push(
        continued(
          'ReadWritePaths',
          [v.home, ...v.readWritePaths].map((p) =>
            p.startsWith('-') ? '-' + unitPath(p.slice(1), 'a writable path') : unitPath(p, 'a writable path'),
          ),
        ),
      );
    else if (key === 'ProtectHome') out.push(`ProtectHome=${v.protectHome}`);
    else if (key === 'DeviceAllow' && !v.devices.includes(value.split(/\s+/)[0]!)) continue;
    else if ((key === 'IPAddressDeny' || key === 'IPAddressAllow') && !v.loopbackOnly) continue;
    else if ((key === 'After' || key === 'WantedBy') && value.split(/\s+/).includes(SHIPPED_GATEWAY_UNIT)) {
      out.push(
        `${key}=${value
          .split(/\s+/)
          .map((u) => (u === SHIPPED_GATEWAY_UNIT ? v.gatewayUnit : u))
          .join(' ')}`,
      );
    } else if (line === '#SupplementaryGroups=video') out.push(v.videoGroup ? 'SupplementaryGroups=video' : line);
    else out.push(line);
  }
  return out.join('\n');
}

export function renderUnits(v: UnitValues, t = readTemplates()): RenderedUnit[] {
  if (!validUnitName(v.gatewayUnit))
    throw new GuardError(`"${v.gatewayUnit}" is not a service unit name`, {
      exitCode: ExitCode.USAGE,
      hint: 'e.g. --gateway-unit picoclaw.service',
    });
  if (
    !/^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$/.test(v.user) ||
    (v.group !== null && !/^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$/.test(v.group))
  ) {
    throw new GuardError(`"${v.user}" is not a user name systemd accepts`, { exitCode: ExitCode.USAGE });
  }
  return [
    { file: GUARD_UNIT, text: header(GUARD_UNIT, v) + rewrite(t.guard, v) },
    { file: PRESTART_UNIT, text: header(PRESTART_UNIT, v) + rewrite(t.prestart, v) },
    {
      file: `${v.gatewayUnit}.d/${DROPIN_NAME}`,
      text: header(`${SHIPPED_GATEWAY_UNIT}.d/${DROPIN_NAME}`, v) + rewrite(t.dropin, v),
    },
  ];
}

/** The device nodes the shipped units' DeviceAllow= lines name. */
export function allowedDevices(t = readTemplates()): string[] {
  const out = new Set<string>();
  for (const text of [t.guard, t.prestart]) for (const m of text.matchAll(/^DeviceAllow=(\S+)/gm)) out.add(m[1]!);
  return [...out];
}

// --- facts about this board, for the values ----------------------------------------------

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  dir: string;
}

/**
 * A user by name through NSS (`getent passwd NAME`: /etc/passwd, LDAP, systemd-homed, ...). 'absent' when NSS
 * knows no such user (getent exits 2), 'unknown' when getent cannot be run (then /etc/passwd is all there is).
 */
export function lookupUser(name: string): PasswdEntry | 'absent' | 'unknown' {
  const r = spawnSync('getent', ['passwd', name], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status === null) return 'unknown';
  if (r.status === 2) return 'absent';
  if (r.status !== 0) return 'unknown';
  const f = r.stdout.split('\n')[0]!.split(':');
  if (f.length < 6 || f[0] !== name || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!)) return 'unknown';
  return { name, uid: Number(f[2]), gid: Number(f[3]), dir: f[5] ?? '' };
}

export function readPasswd(path = '/etc/passwd'): PasswdEntry[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 4 && /^\d+$/.test(f[2]!) && /^\d+$/.test(f[3]!))
    .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), dir: f[5] ?? '' }));
}

export function readGroups(path = '/etc/group'): { name: string; gid: number }[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 3 && /^\d+$/.test(f[2]!))
    .map((f) => ({ name: f[0]!, gid: Number(f[2]) }));
}

/** Paths under these are hidden or read-only with ProtectHome=. */
export function underHomeDirs(p: string): boolean {
  return ['/home', '/root', '/run/user'].some((d) => p === d || p.startsWith(d + '/'));
}

/** Keep only paths not already inside another one (ReadWritePaths of a parent covers its children). */
export function outermost(paths: string[]): string[] {
  const clean = [...new Set(paths.map((p) => p.replace(/\/+$/, '') || '/'))].sort((a, b) => a.length - b.length);
  const out: string[] = [];
  for (const p of clean) if (!out.some((o) => p === o || p.startsWith(o === '/' ? '/' : o + '/'))) out.push(p);
  return out;
}
