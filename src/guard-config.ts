import { existsSync, readFileSync } from 'node:fs';
import { ExitCode, GuardError, errnoCode } from './errors.js';

/**
 * The guard's own config file (JSON; never PicoClaw's config.json, which rejects
 * unknown keys). Sections: `prune` (the policy), `health` (thresholds), `server`
 * (daemon HTTP), `metrics`. Each section is validated by the code that owns it;
 * this only finds and parses the file, and rejects unknown sections.
 *
 * Location: --config, else $PICOCLAW_GUARD_CONFIG, else /etc/picoclaw-guard/config.json
 * when it exists (a missing default file means defaults; a missing explicit file is an error).
 */
export const DEFAULT_GUARD_CONFIG = '/etc/picoclaw-guard/config.json';
export const GUARD_SECTIONS = ['prune', 'health', 'server', 'metrics'] as const;
export type GuardSection = (typeof GUARD_SECTIONS)[number];

export interface GuardConfig {
  path: string | null;
  sections: Partial<Record<GuardSection, Record<string, unknown>>>;
}

export function loadGuardConfig(flag?: string, env: NodeJS.ProcessEnv = process.env): GuardConfig {
  const explicit = flag ?? env.PICOCLAW_GUARD_CONFIG;
  const path = explicit ?? DEFAULT_GUARD_CONFIG;
  if (!explicit && !existsSync(path)) return { path: null, sections: {} };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' && env.PICOCLAW_GUARD_CONFIG && !flag) return { path: null, sections: {} };
    throw new GuardError(`cannot read the guard config ${path}: ${errnoCode(err) ?? String(err)}`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'check the path given with --config (or PICOCLAW_GUARD_CONFIG)',
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(stripComments(text));
  } catch (err) {
    throw new GuardError(`the guard config ${path} is not valid JSON (${err instanceof Error ? err.message.split('\n')[0] : 'parse error'})`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'fix the file; config/picoclaw-guard.example.jsonc shows every key',
    });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new GuardError(`the guard config ${path} must be a JSON object`, { exitCode: ExitCode.USAGE, path });
  }
  const sections: GuardConfig['sections'] = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === '$schema') continue;
    if (!(GUARD_SECTIONS as readonly string[]).includes(k)) {
      throw new GuardError(`the guard config ${path} has an unknown section "${k}"`, {
        exitCode: ExitCode.USAGE,
        path,
        hint: `known sections: ${GUARD_SECTIONS.join(', ')}`,
      });
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      throw new GuardError(`the guard config ${path}: "${k}" must be an object`, { exitCode: ExitCode.USAGE, path });
    }
    sections[k as GuardSection] = v as Record<string, unknown>;
  }
  return { path, sections };
}

/** Allow // line comments in the guard's config (the example file documents defaults that way). */
export function stripComments(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') { out += text[i + 1] ?? ''; i++; }
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else out += c;
  }
  return out;
}
