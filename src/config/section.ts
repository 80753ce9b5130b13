import { ExitCode, GuardError } from '../errors.js';

/**
 * The one validator for a section of settings: the guard config's `prune`, `health`, `server`
 * and `metrics` sections, PicoClaw's `session.prune` block, and the prune policy's environment
 * variables and flags. Each owner declares its keys as fields; this checks them and words the
 * errors, so every section fails the same way: a usage error naming the file (or variable or
 * flag), the key and what a valid value is.
 *
 * No message ever quotes a value, not even a number: a config can hold secrets (`server.token`;
 * PicoClaw's config.json holds API keys next to `session.prune`), and a rule with exceptions
 * ("numbers are safe") is one a later key breaks. A value of a type the key never takes is
 * named by its type ("not a string"); a value of the right type is not described at all, the
 * expected range says what is wrong with it.
 */

export type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

export function jsonType(v: unknown): JsonType {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'boolean':
      return 'boolean';
    case 'number':
    case 'bigint':
      return 'number';
    case 'string':
      return 'string';
    default:
      return 'object';
  }
}

const TYPE_WORD: Record<JsonType, string> = {
  null: 'null',
  boolean: 'a boolean',
  number: 'a number',
  string: 'a string',
  array: 'an array',
  object: 'an object',
};

/** A field's refusal. `problem` is the whole predicate ("must be 0 or more (...)"); null: "must be <what>". */
export class Rejected {
  constructor(readonly problem: string | null) {}
}

export function reject(problem: string | null = null): Rejected {
  return new Rejected(problem);
}

export interface Field<T> {
  /** What a valid value is, as the message says it: "a whole number from 1 to 3600". */
  what: string;
  /** The types this key can take; a value of another type is named by its type. */
  types: readonly JsonType[];
  /** The value to keep (possibly converted), or a refusal. Never puts the value in a refusal's text. */
  read: (v: unknown) => T | Rejected;
}

export type FieldValue<F> = F extends Field<infer T> ? T : never;

/** A field that keeps the value as it is when `ok` accepts it. */
export function field<T = unknown>(what: string, types: readonly JsonType[], ok: (v: unknown) => boolean): Field<T> {
  return { what, types, read: (v) => (ok(v) ? (v as T) : reject()) };
}

/** How a section's errors name things. */
export interface Naming {
  /** What every message starts with: the file, "the guard config", "environment X", "--flag". */
  where: string;
  /** The file the error is about (GuardError.path), when there is one. */
  path: string | null;
  /** A key as the message names it: `"health.temp_warn_celsius"` or `max_age_days`. */
  key: (k: string) => string;
  /** The error for a key the section does not have. */
  unknownKey: (k: string) => { message: string; hint?: string };
  /** What to do about a wrong value, when there is something to say. */
  hint?: string;
}

/**
 * The style of the guard config's sections: `FILE: "server.port" must be ...` and
 * `FILE: unknown key "server.prot"` with the known keys as the hint.
 */
export function sectionNaming(section: string, path: string | null, keys: readonly string[]): Naming {
  const where = path ?? 'the guard config';
  return {
    where,
    path,
    key: (k) => `"${section}.${k}"`,
    unknownKey: (k) => ({ message: `${where}: unknown key "${section}.${k}"`, hint: `known ${section} keys: ${keys.join(', ')}` }),
  };
}

/** A usage error about this section (nothing was read or deleted). */
export function sectionError(naming: Naming, message: string, hint: string | undefined = naming.hint): GuardError {
  return new GuardError(message, { exitCode: ExitCode.USAGE, path: naming.path ?? undefined, hint });
}

/** The predicate of the message for a refused value: never the value, at most its type. */
export function problemText(f: Field<unknown>, value: unknown, refusal: Rejected): string {
  if (refusal.problem !== null) return refusal.problem;
  const t = jsonType(value);
  return f.types.includes(t) ? `must be ${f.what}` : `must be ${f.what}, not ${TYPE_WORD[t]}`;
}

/** Check one value of one key. */
export function readValue<T>(f: Field<T>, key: string, value: unknown, naming: Naming): T {
  const r = f.read(value);
  if (r instanceof Rejected) throw sectionError(naming, `${naming.where}: ${naming.key(key)} ${problemText(f, value, r)}`);
  return r;
}

/**
 * Check every key a section sets, in the order it sets them; the first unknown key or wrong
 * value is the error. Returns only the keys the section sets (the owner fills in defaults).
 */
export function readSection<F extends Record<string, Field<unknown>>>(
  fields: F,
  section: Record<string, unknown> | undefined,
  naming: Naming,
): Partial<{ [K in keyof F]: FieldValue<F[K]> }> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(section ?? {})) {
    const f = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (!f) {
      const u = naming.unknownKey(key);
      throw sectionError(naming, u.message, u.hint);
    }
    out[key] = readValue(f, key, value, naming);
  }
  return out as Partial<{ [K in keyof F]: FieldValue<F[K]> }>;
}
