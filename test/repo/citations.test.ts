import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.js';

const SCRIPT = join(import.meta.dirname, '../../scripts/check-citations.mjs');
const run = (root?: string) => spawnSync(process.execPath, root ? [SCRIPT, root] : [SCRIPT], { encoding: 'utf8' });

// Built from parts so that this file does not cite them itself.
const FACTS = ['picoclaw', 'facts.md'].join('-');
const SECTION = '\u00a7';
const DOCS = ['docs', ''].join('/');

describe('scripts/check-citations.mjs', () => {
  it('the repository cites only docs/ sections that exist, and no reference document, section number or issue', () => {
    const r = run();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('finds each kind of stale citation, and accepts docs/ sections that exist and upstream issue links', () => {
    const root = tempDir('pcg-cite-');
    mkdirSync(join(root, 'docs'));
    mkdirSync(join(root, 'src'));
    mkdirSync(join(root, 'test', 'fixtures', 'board'), { recursive: true });
    writeFileSync(
      join(root, 'docs', 'picoclaw.md'),
      '# PicoClaw\n\n## Delete order\n\n### Keys the guard reads from config.json\n',
    );
    writeFileSync(
      join(root, 'src', 'bad.ts'),
      [
        `/** Rows go children first (${FACTS} ${SECTION}3.5). */`,
        `// see ${['style', 'md'].join('.')} rule 4`,
        `// the policy of ${['seeds', 'policy.txt'].join('/')}`,
        `// fixed for ${['Issue', '6'].join(' ')}`,
        `// as asked in (${'#'}12)`,
        `// order: ${DOCS}picoclaw.md#delete-orders`,
        `// and ${DOCS}missing.md`,
        '',
      ].join('\n'),
    );
    writeFileSync(join(root, 'test', 'fixtures', 'board', 'vcgencmd'), `#!/bin/sh\n# fake (${FACTS})\n`);
    writeFileSync(
      join(root, 'src', 'good.ts'),
      [
        '// docs/picoclaw.md#delete-order and docs/picoclaw.md#keys-the-guard-reads-from-configjson',
        '// raspberrypi/firmware#133, pkg/memory/jsonl.go, upstream web/docs/guide.md',
        '',
      ].join('\n'),
    );
    const r = run(root);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toBe('9 citation(s) to fix.');
    expect(lines.filter((l) => l.startsWith('src/bad.ts:1:'))).toHaveLength(2); // the document and its section number
    for (const n of [2, 3, 4, 5])
      expect(
        lines.some((l) => l.startsWith(`src/bad.ts:${n}:`)),
        `line ${n}`,
      ).toBe(true);
    expect(r.stderr).toContain(
      `src/bad.ts:6: ${DOCS}picoclaw.md#delete-orders: ${DOCS}picoclaw.md has no section #delete-orders`,
    );
    expect(r.stderr).toContain(`src/bad.ts:7: ${DOCS}missing.md: ${DOCS}missing.md does not exist`);
    expect(r.stderr).toContain('test/fixtures/board/vcgencmd:2:');
    expect(r.stderr).not.toContain('good.ts');
  });
});
