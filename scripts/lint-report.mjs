#!/usr/bin/env node
// Counts ESLint findings per rule and per folder, to plan a lint pass: which rules are worth
// their noise, which folders need hand fixes. Reads ESLint's JSON output (not the source).
//
// Usage: npx eslint . -f json -o lint.json; node scripts/lint-report.mjs lint.json [--depth N] [--fixable]
//   --depth N   folder depth to group by (default 2: src/prune, test/daemon, bench)
//   --fixable   also print how many findings `eslint --fix` would remove, per rule
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

// A reader that closed the pipe (`| head`) is not an error.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
if (!file) {
  process.stderr.write('usage: node scripts/lint-report.mjs <eslint-json-output> [--depth N] [--fixable]\n');
  process.exit(2);
}
const depthAt = args.indexOf('--depth');
const depth = depthAt >= 0 ? Number(args[depthAt + 1]) : 2;
const showFixable = args.includes('--fixable');

/** @type {{ filePath: string; messages: { ruleId: string | null; fix?: unknown; fatal?: boolean }[] }[]} */
const results = JSON.parse(readFileSync(file, 'utf8'));
const byRule = new Map(); // rule -> Map(folder -> count)
const fixable = new Map(); // rule -> count with an automatic fix
const files = new Map(); // rule -> Set(file)
const folders = new Set();
for (const r of results) {
  const rel = relative(process.cwd(), r.filePath);
  const parts = rel.split('/');
  const folder = parts.length <= 1 ? '.' : parts.slice(0, Math.min(depth, parts.length - 1)).join('/');
  for (const m of r.messages) {
    const rule = m.ruleId ?? (m.fatal ? '(parse error)' : '(no rule)');
    folders.add(folder);
    if (!byRule.has(rule)) byRule.set(rule, new Map());
    const f = byRule.get(rule);
    f.set(folder, (f.get(folder) ?? 0) + 1);
    if (m.fix) fixable.set(rule, (fixable.get(rule) ?? 0) + 1);
    if (!files.has(rule)) files.set(rule, new Set());
    files.get(rule).add(rel);
  }
}

const total = (m) => [...m.values()].reduce((a, b) => a + b, 0);
const rules = [...byRule.entries()].sort((a, b) => total(b[1]) - total(a[1]));
const cols = [...folders].sort();
let grand = 0;
process.stdout.write(`# by rule (total, files${showFixable ? ', fixable' : ''}: folders)\n`);
for (const [rule, m] of rules) {
  const n = total(m);
  grand += n;
  const where = [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([f, c]) => `${f} ${c}`)
    .join(', ');
  const fx = showFixable ? `, ${fixable.get(rule) ?? 0} fixable` : '';
  process.stdout.write(`${String(n).padStart(6)}  ${rule}  (${files.get(rule).size} files${fx}): ${where}\n`);
}
process.stdout.write(`${String(grand).padStart(6)}  total\n\n# by folder\n`);
for (const c of cols) {
  const n = rules.reduce((a, [, m]) => a + (m.get(c) ?? 0), 0);
  process.stdout.write(`${String(n).padStart(6)}  ${c}\n`);
}
