import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
/** Folders the shipped code must never reach: the demo and sample builder, benchmarks, tests. */
const NOT_SHIPPED = ['dev', 'bench', 'test'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? tsFiles(p) : e.isFile() && e.name.endsWith('.ts') ? [p] : [];
  });
}

/**
 * The module specifiers of a file that land in a folder the package does not ship: static and
 * type-only imports, `export … from`, `import()` and `require()` (TypeScript's own pre-processor
 * finds them all, comments and strings aside).
 */
function forbiddenImports(file: string, text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.') || spec.startsWith('/'))
    .filter((spec) => {
      const top = relative(ROOT, resolve(dirname(file), spec)).split(/[\\/]/)[0];
      return top !== undefined && NOT_SHIPPED.includes(top);
    });
}

/** The root files a tsconfig compiles, relative to the repository. */
function compiled(config: string): string[] {
  const path = join(ROOT, config);
  const read = ts.readConfigFile(path, (p) => ts.sys.readFile(p));
  expect(read.error, config).toBeUndefined();
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, undefined, path);
  expect(parsed.errors, config).toEqual([]);
  return parsed.fileNames.map((f) => relative(ROOT, f));
}

describe('dev/ (demo, sample-home builder, seahorse schema) is never shipped', () => {
  it('the check sees every kind of import into dev/, bench/ and test/, and lets src/ imports through', () => {
    const file = join(ROOT, 'src', 'commands', 'x.ts');
    const text = [
      "import { buildSampleHome } from '../../dev/sample/builder.js';",
      "import type { SampleRestart } from '../../dev/sample/gateway-events.js';",
      "export { seahorseSchemaSql } from '../../dev/seahorse-schema.js';",
      "const m = await import('../../bench/lib.js');",
      "const t = require('../../test/support/tmp.js');",
      "import { sqlite } from '../io/sqlite.js';",
      "import { join } from 'node:path';",
      "// import { x } from '../../dev/sample/random.js';",
    ].join('\n');
    expect(forbiddenImports(file, text)).toEqual([
      '../../dev/sample/builder.js',
      '../../dev/sample/gateway-events.js',
      '../../dev/seahorse-schema.js',
      '../../bench/lib.js',
      '../../test/support/tmp.js',
    ]);
  });

  it('no file under src/ imports from dev/, bench/ or test/', () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(30);
    const found = files.flatMap((f) =>
      forbiddenImports(f, readFileSync(f, 'utf8')).map((spec) => `${relative(ROOT, f)}: ${spec}`),
    );
    expect(found).toEqual([]);
  });

  it('tsconfig.build.json (what the package ships) compiles src/ only; tsconfig.json also compiles dev/', () => {
    const build = compiled('tsconfig.build.json');
    expect(build.length).toBeGreaterThan(30);
    expect(build.filter((f) => !f.startsWith('src/'))).toEqual([]);
    const dev = compiled('tsconfig.json').filter((f) => f.startsWith('dev/'));
    expect(dev).toEqual(expect.arrayContaining(['dev/demo.ts', 'dev/sample/builder.ts', 'dev/seahorse-schema.ts']));
  });

  it('package.json ships dist/src and no compiled dev/ or bench/ code; npm run demo runs dist/dev/demo.js', () => {
    type Pkg = { files: string[]; scripts: Record<string, string> };
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Pkg;
    expect(pkg.files.filter((f) => f.startsWith('dist'))).toEqual(['dist/src']);
    expect(pkg.scripts.demo).toBe('node dist/dev/demo.js');
  });
});
