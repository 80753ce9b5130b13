import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyzeStartupLog, type StartupReport } from '../../src/startup/index.js';
import { tempDir } from '../support/tmp.js';
import { ANCHOR } from './scenario.js';

/**
 * gateway.log lines that a log shipper or `jq -c` wrote again: the same JSON objects with
 * spaces after the colons, the keys in another order, non-ASCII as \u escapes. They must
 * give the report zerolog's own lines give.
 */
const FIX = fileURLToPath(new URL('../fixtures/logs/', import.meta.url));

/** One object on one line, keys reversed, `"key": value, ...`; `ascii` escapes non-ASCII as jq -a does. */
function reserialise(line: string, ascii: boolean): string {
  if (!line.startsWith('{')) return line;
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line; // a torn line stays torn
  }
  const json = (v: unknown) => {
    const t = JSON.stringify(v);
    // eslint-disable-next-line no-control-regex -- everything outside ASCII, which starts at NUL
    return ascii ? t.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : t;
  };
  return (
    '{ ' +
    Object.keys(o)
      .reverse()
      .map((k) => `${json(k)}: ${json(o[k])}`)
      .join(', ') +
    ' }'
  );
}

/** What a report says about the restarts, without where and how its bytes were read. */
function meaning(r: StartupReport) {
  const { source: _source, lines, ...rest } = r;
  return { ...rest, lines: { ...lines, unparsable: lines.unparsable } };
}

describe('re-serialised JSON log lines', () => {
  for (const name of ['sample-info-events.log', 'sample-debug.log', 'facts-example.log', 'mixed.log']) {
    for (const ascii of [false, true]) {
      it(`${name}${ascii ? ' (non-ASCII escaped)' : ''} gives the same report as zerolog's own lines`, async () => {
        const original = readFileSync(join(FIX, name), 'utf8');
        const copy = join(tempDir('pcg-reserialised-'), name);
        const lines = original.split('\n');
        const rewritten = lines.map((l) => reserialise(l, ascii));
        // The copy really is in another shape: no line of it starts the way zerolog's do.
        expect(rewritten.filter((l) => l.startsWith('{"level":"'))).toEqual([]);
        expect(rewritten.filter((l) => l.startsWith('{ ')).length).toBeGreaterThan(0);
        writeFileSync(copy, rewritten.join('\n'));
        const a = await analyzeStartupLog({ path: join(FIX, name) }, { dateAnchor: ANCHOR });
        const b = await analyzeStartupLog({ path: copy }, { dateAnchor: ANCHOR });
        expect(a.restarts.length).toBeGreaterThan(0);
        expect(meaning(b)).toEqual(meaning(a));
      });
    }
  }
});
