import { existsSync } from 'node:fs';
import { parse, printParseErrorCode, visit, type ParseError, type ParseErrorCode } from 'jsonc-parser';
import { ExitCode, GuardError } from './errors.js';
import { SmallFileError, readSmallText } from './io/smallfile.js';

/**
 * The guard's own config file (JSONC: `//` and `/* *\/` comments and trailing commas
 * allowed, so uncommenting any line of config/picoclaw-guard.example.jsonc keeps it
 * valid; never PicoClaw's config.json, which rejects unknown keys). Sections: `prune`
 * (the policy), `health` (thresholds), `server` (daemon HTTP), `metrics`, `logs` (gateway log size), `notify`
 * (push notifications, src/notify/config.ts). Each section
 * is validated by the code that owns it; this only finds and parses the file, and
 * rejects unknown sections and keys given twice.
 *
 * The file may hold the server token, so no error quotes its text: a syntax error
 * says where (line and column), a duplicate says which key.
 *
 * Location: --config, else $PICOCLAW_GUARD_CONFIG, else /etc/picoclaw-guard/config.json
 * when it exists (a missing default file means defaults; a missing file named by the
 * flag or the variable is an error naming which).
 */
export const DEFAULT_GUARD_CONFIG = '/etc/picoclaw-guard/config.json';
export const GUARD_SECTIONS = ['prune', 'health', 'server', 'metrics', 'logs', 'notify'] as const;
export type GuardSection = (typeof GUARD_SECTIONS)[number];

export interface GuardConfig {
  path: string | null;
  sections: Partial<Record<GuardSection, Record<string, unknown>>>;
}

const FIX_HINT = 'fix the file; config/picoclaw-guard.example.jsonc shows every key';

export function loadGuardConfig(flag?: string, env: NodeJS.ProcessEnv = process.env): GuardConfig {
  const fromEnv = flag === undefined && env.PICOCLAW_GUARD_CONFIG !== undefined && env.PICOCLAW_GUARD_CONFIG !== '';
  const explicit = flag ?? (fromEnv ? env.PICOCLAW_GUARD_CONFIG : undefined);
  const path = explicit ?? DEFAULT_GUARD_CONFIG;
  if (!explicit && !existsSync(path)) return { path: null, sections: {} };
  const given = flag !== undefined ? `--config ${path}` : fromEnv ? `PICOCLAW_GUARD_CONFIG=${path}` : path;
  let text: string;
  try {
    text = readSmallText(path, 'config');
  } catch (err) {
    const why =
      err instanceof SmallFileError
        ? err.problem === 'absent'
          ? 'no such file'
          : err.message.slice(path.length + 1)
        : String(err);
    throw new GuardError(`cannot read the guard config ${given}: ${why}`, {
      exitCode: ExitCode.USAGE,
      path,
      hint:
        flag !== undefined
          ? 'check the path given with --config'
          : fromEnv
            ? 'fix or unset PICOCLAW_GUARD_CONFIG'
            : 'check that the file is a readable regular file',
    });
  }
  return { path, sections: parseGuardConfigText(text, path) };
}

/** Line and column (both from 1) of an offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

const WHY: Partial<Record<string, string>> = {
  InvalidSymbol: 'unexpected character',
  ValueExpected: 'a value was expected',
  PropertyNameExpected: 'a key in double quotes was expected',
  ColonExpected: 'a colon was expected',
  CommaExpected: 'a comma was expected',
  CloseBraceExpected: 'a closing } was expected',
  CloseBracketExpected: 'a closing ] was expected',
  EndOfFileExpected: 'text after the end of the object',
  UnexpectedEndOfComment: 'a comment is not closed',
  UnexpectedEndOfString: 'a string is not closed',
  UnexpectedEndOfNumber: 'a number is cut short',
  InvalidEscapeCharacter: 'a bad escape in a string',
  InvalidCharacter: 'a control character in a string',
  InvalidUnicode: 'a bad \\u escape in a string',
};

function syntaxWhy(code: ParseErrorCode): string {
  const name = printParseErrorCode(code);
  return WHY[name] ?? name;
}

function shortKey(k: string): string {
  return JSON.stringify(k.length > 64 ? `${k.slice(0, 64)}…` : k);
}

/**
 * Parse the JSONC text of a guard config into its sections. Errors name the file and a position or a key, never the
 * text.
 */
export function parseGuardConfigText(text: string, path: string): GuardConfig['sections'] {
  const errors: ParseError[] = [];
  const raw: unknown = parse(text, errors, {
    allowTrailingComma: true,
    disallowComments: false,
    allowEmptyContent: false,
  });
  if (errors.length > 0) {
    const e = errors[0]!;
    const { line, column } = lineColumn(text, e.offset);
    throw new GuardError(
      `the guard config ${path} is not valid JSON at line ${line}, column ${column} (${syntaxWhy(e.error)})`,
      {
        exitCode: ExitCode.USAGE,
        path,
        hint: FIX_HINT,
      },
    );
  }
  const dup = firstDuplicateKey(text);
  if (dup) {
    const { line, column } = lineColumn(text, dup.offset);
    throw new GuardError(`the guard config ${path} sets ${shortKey(dup.key)} twice (line ${line}, column ${column})`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'JSON keeps only the last value of a repeated key; keep one of them',
    });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new GuardError(`the guard config ${path} must be a JSON object`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: FIX_HINT,
    });
  }
  const sections: GuardConfig['sections'] = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === '$schema') continue;
    if (!(GUARD_SECTIONS as readonly string[]).includes(k)) {
      throw new GuardError(`the guard config ${path} has an unknown section ${shortKey(k)}`, {
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
  return sections;
}

/** The first key that appears twice in one object (as a dotted path), with its second offset. */
export function firstDuplicateKey(text: string): { key: string; offset: number } | null {
  const stack: Set<string>[] = [];
  let found: { key: string; offset: number } | null = null;
  visit(
    text,
    {
      onObjectBegin: () => {
        stack.push(new Set());
      },
      onObjectEnd: () => {
        stack.pop();
      },
      onObjectProperty: (property, offset, _length, _line, _col, pathSupplier) => {
        const keys = stack[stack.length - 1];
        if (!keys || found) return;
        if (keys.has(property)) {
          const parent = pathSupplier().filter((p): p is string => typeof p === 'string');
          found = { key: [...parent, property].join('.'), offset };
        }
        keys.add(property);
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  );
  return found;
}
