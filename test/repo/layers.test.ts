import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/, lowest first. A module may import from its own folder and from any lower
 * layer, never from a higher one or from another folder of its own layer; and no chain of
 * imports may come back to where it started. README.md's "Layout" section says the same in words.
 */
const LAYERS: string[][] = [
  ['errors.ts', 'version.ts', 'types'],
  ['io'],
  ['guard-config.ts', 'config'],
  ['picoclaw'],
  ['state'],
  ['health', 'startup', 'logs'],
  ['startup-model', 'archive'],
  ['prune', 'metrics', 'notify'],
  ['daemon', 'install'],
  ['commands'],
  ['cli.ts'],
];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The top-level unit of src/ a file belongs to: its folder, or the file itself for top-level files. */
function unitOf(file: string): string {
  const rel = relative(SRC, file).split('/');
  return rel.length === 1 ? rel[0]! : rel[0]!;
}

function rankOf(unit: string): number {
  const r = LAYERS.findIndex((l) => l.includes(unit));
  return r;
}

interface Import {
  path: string;
  /** `import type` / `export type`: erased when compiled, so it cannot make a cycle at run time. */
  typeOnly: boolean;
}

/** Relative imports of a file, static and dynamic, as absolute .ts paths. */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(
    /(?:^|\n)\s*(import|export)(\s+type)?\s[^;]*?from\s+'(\.{1,2}\/[^']+)'|import\s*\(\s*'(\.{1,2}\/[^']+)'/g,
  )) {
    const spec = m[3] ?? m[4]!;
    out.push({ path: normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'), typeOnly: m[2] !== undefined });
  }
  return out;
}

const files = walk(SRC);

describe('src/ layers', () => {
  it('every top-level folder and file of src/ has a layer', () => {
    const units = [...new Set(files.map(unitOf))];
    expect(units.filter((u) => rankOf(u) < 0)).toEqual([]);
  });

  it('no import goes up a layer or sideways into another folder of the same layer', () => {
    const bad: string[] = [];
    for (const f of files) {
      const from = unitOf(f);
      for (const { path: t } of importsOf(f)) {
        if (!t.startsWith(SRC)) {
          bad.push(`${relative(ROOT, f)} imports ${relative(ROOT, t)}, outside src/`);
          continue;
        }
        const to = unitOf(t);
        if (to === from) continue;
        if (rankOf(to) >= rankOf(from)) bad.push(`${relative(ROOT, f)} (${from}) imports ${relative(ROOT, t)} (${to})`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('no import cycle between files (at run time: type-only imports are erased)', () => {
    const graph = new Map(
      files.map((f) => [
        f,
        importsOf(f)
          .filter((i) => !i.typeOnly && i.path.startsWith(SRC))
          .map((i) => i.path),
      ]),
    );
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const stack: string[] = [];
    const visit = (f: string): void => {
      state.set(f, 'open');
      stack.push(f);
      for (const t of graph.get(f) ?? []) {
        if (state.get(t) === 'open')
          cycles.push([...stack.slice(stack.indexOf(t)), t].map((p) => relative(SRC, p)).join(' -> '));
        else if (!state.has(t)) visit(t);
      }
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of files) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('a file in src/ over 600 lines says in its first 40 lines why it is one job (not a line cap)', () => {
    const long = files
      .map((f) => ({ f: relative(ROOT, f), text: readFileSync(f, 'utf8') }))
      .filter((x) => x.text.split('\n').length - 1 > 600)
      .filter((x) => !/Why this file is long:/.test(x.text.split('\n').slice(0, 40).join('\n')))
      .map((x) => x.f);
    expect(long).toEqual([]);
  });
});
