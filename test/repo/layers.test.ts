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

/**
 * Sub-folders of a top-level folder, and what each may import of the same folder (its own files always;
 * `root` is the folder's own files). Type-only imports may also point where `mayTypes` says: the report
 * names the deleter's result type, never its code.
 */
const SUB_LAYERS: Record<string, { unit: string; may: string[]; mayTypes?: string[] }[]> = {
  prune: [
    { unit: 'plan', may: ['policy.ts'] },
    { unit: 'apply', may: ['plan', 'policy.ts'] },
    { unit: 'report', may: ['plan', 'policy.ts'], mayTypes: ['apply'] },
    { unit: 'policy.ts', may: [] },
    { unit: 'root', may: ['plan', 'apply', 'report', 'policy.ts'] },
  ],
  picoclaw: [
    { unit: 'inventory', may: ['root'] },
    { unit: 'gatewaylog', may: ['root'] },
    { unit: 'root', may: ['inventory'] },
  ],
};

/** A file's folder and sub-unit (a sub-folder, a named file, or `root`) when its folder has SUB_LAYERS. */
function subUnitOf(file: string): { folder: string; unit: string } | null {
  const rel = relative(SRC, file).split('/');
  const rules = SUB_LAYERS[rel[0]!];
  if (rel.length < 2 || !rules) return null;
  if (rel.length > 2) return { folder: rel[0]!, unit: rel[1]! };
  const named = rules.find((r) => r.unit === rel[1]);
  return { folder: rel[0]!, unit: named ? named.unit : 'root' };
}

/** Modules of src/ and packages that read or write the disk, or read the clock. */
const CLOCK_OR_DISK_FILES = [
  'io/clock.ts',
  'io/sqlite.ts',
  'io/atomic.ts',
  'io/lock.ts',
  'io/smallfile.ts',
  'io/freespace.ts',
  'io/statedir.ts',
  'io/regular-file.ts',
  'io/process.ts',
];
const DISK_MODULES = [
  'node:fs',
  'node:fs/promises',
  'fs',
  'better-sqlite3',
  'node:child_process',
  'node:worker_threads',
  'node:net',
  'node:http',
];

/** Packages and node: modules a file imports at run time (type-only imports left out). */
function packagesOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(
    /(?:^|\n)\s*(import|export)(\s+type)?\s[^;]*?from\s+'([^.'][^']*)'|import\s*\(\s*'([^.'][^']*)'|require\(\s*'([^.'][^']*)'/g,
  )) {
    if (m[2] !== undefined) continue;
    out.push(m[3] ?? m[4] ?? m[5]!);
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

  it('no import cycle between files, type-only imports included (a type belongs to the lower file)', () => {
    const graph = new Map(
      files.map((f) => [
        f,
        importsOf(f)
          .filter((i) => i.path.startsWith(SRC))
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

  it('inside a folder, sub-folders keep their own order (the plan below the deleter and the report)', () => {
    const bad: string[] = [];
    for (const f of files) {
      const from = subUnitOf(f);
      if (from === null) continue;
      const rules = SUB_LAYERS[from.folder]!;
      for (const imp of importsOf(f)) {
        const to = subUnitOf(imp.path);
        if (to === null || to.folder !== from.folder || to.unit === from.unit) continue;
        const ok = rules.find((r) => r.unit === from.unit)?.may ?? [];
        const typeOk = rules.find((r) => r.unit === from.unit)?.mayTypes ?? [];
        if (ok.includes(to.unit) || (imp.typeOnly && typeOk.includes(to.unit))) continue;
        bad.push(`${relative(ROOT, f)} (${from.unit}) imports ${relative(ROOT, imp.path)} (${to.unit})`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('the plan touches neither the disk nor the clock, and never reaches the deleter, at run time', () => {
    const planFiles = files.filter((f) => relative(SRC, f).startsWith('prune/plan/'));
    expect(planFiles.length).toBeGreaterThan(3);
    const bad: string[] = [];
    for (const start of planFiles) {
      const seen = new Set<string>();
      const todo = [start];
      while (todo.length > 0) {
        const f = todo.pop()!;
        if (seen.has(f)) continue;
        seen.add(f);
        const rel = relative(SRC, f);
        if (rel.startsWith('prune/apply/')) bad.push(`${relative(SRC, start)} reaches the deleter (${rel})`);
        if (CLOCK_OR_DISK_FILES.includes(rel)) bad.push(`${relative(SRC, start)} reaches ${rel}`);
        for (const m of packagesOf(f))
          if (DISK_MODULES.includes(m)) bad.push(`${relative(SRC, start)} reaches ${m} through ${rel}`);
        const text = readFileSync(f, 'utf8');
        if (/\bDate\.now\(|new Date\(\)|performance\.now\(|process\.hrtime/.test(text))
          bad.push(`${relative(SRC, start)} reaches the clock in ${rel}`);
        for (const i of importsOf(f)) if (!i.typeOnly && i.path.startsWith(SRC)) todo.push(i.path);
      }
    }
    expect([...new Set(bad)]).toEqual([]);
  });

  it('no deleting path reaches PICOGUARD_FAKE_FREE_BYTES: only the health command may rehearse a full disk', () => {
    // What a process that deletes starts from: the commands (cli.ts imports each lazily, by name), the worker of
    // `prune --apply` (its own module) and the daemon's pass child (forked by path).
    const entries = [
      ...files.filter(
        (f) => /^commands\/[^/]+\.ts$/.test(relative(SRC, f)) && relative(SRC, f) !== 'commands/health.ts',
      ),
      join(SRC, 'daemon/prune-child.ts'),
      join(SRC, 'cli.ts'),
    ];
    const DELETERS = /^(prune\/apply\/|archive\/restore-write\.ts$|logs\/cut\.ts$|state\/deletion-journal\.ts$)/;
    const readsVariable = (f: string) => /PICOGUARD_FAKE_FREE_BYTES/.test(readFileSync(f, 'utf8'));
    const bad: string[] = [];
    const deleting: string[] = [];
    for (const start of entries) {
      const seen = new Set<string>();
      const todo = [start];
      let deletes = false;
      while (todo.length > 0) {
        const f = todo.pop()!;
        if (seen.has(f)) continue;
        seen.add(f);
        const rel = relative(SRC, f);
        if (DELETERS.test(rel)) deletes = true;
        if (readsVariable(f)) bad.push(`${relative(SRC, start)} reaches ${rel}`);
        for (const i of importsOf(f)) if (!i.typeOnly && i.path.startsWith(SRC)) todo.push(i.path);
      }
      if (deletes) deleting.push(relative(SRC, start));
    }
    expect(bad).toEqual([]);
    // The walk is worth something only if it saw the deleting commands delete.
    for (const e of ['commands/prune.ts', 'commands/delete.ts', 'commands/restore.ts', 'commands/logs.ts'])
      expect(deleting).toContain(e);
    expect(deleting).toContain('commands/run.ts');
    expect(deleting).toContain('daemon/prune-child.ts');
    // And the variable is read somewhere: by the health command, through the one module that knows it.
    const readers = files.filter(readsVariable).map((f) => relative(SRC, f));
    expect(readers).toContain('health/rehearsed-free-space.ts');
    const importers = files
      .filter((f) => importsOf(f).some((i) => i.path === join(SRC, 'health/rehearsed-free-space.ts')))
      .map((f) => relative(SRC, f));
    expect(importers).toEqual(['commands/health.ts']);
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
