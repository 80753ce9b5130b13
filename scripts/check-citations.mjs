#!/usr/bin/env node
// Fails when code or tests cite something a clone does not have: the reference documents that
// lived beside the repository during development (the facts and style notes, the seed text),
// their bare section numbers, the project's issue numbers, or a docs/ page or section that does
// not exist. Comments cite docs/<page>.md#<section> in this repository, or the upstream source.
//
// Usage: node scripts/check-citations.mjs [repository root]   (exit 1 and one line per finding)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const SCANNED = ['src', 'dev', 'test', 'bench', 'scripts'];
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

const FORBIDDEN = [
  {
    re: /\b(?:picoclaw-facts|board-health-facts|ops-facts)\.md\b/,
    why: 'cites a reference document that is not in the repository: cite docs/... or the upstream source',
  },
  { re: /\bstyle\.md\b/, why: 'cites the style notes, which are not in the repository' },
  { re: /\bseeds\//, why: 'cites a seed document, which is not in the repository' },
  { re: /\.\.\/shared\//, why: 'reaches outside the repository (../shared)' },
  {
    re: /§\s*\d/,
    why: 'a bare section number of a document that is not in the repository: cite docs/<page>.md#<section>',
  },
  { re: /\b[Ii]ssues?\s+#?\d+/, why: "names one of the project's issues: say what the code does instead" },
  {
    re: /(?:^|[\s(])#\d+\b/,
    why: "names one of the project's issues: say what the code does instead (upstream issues are owner/repo#N)",
  },
];
// A docs/ path not preceded by another path segment (upstream paths such as pkg/.../docs/x.md are fine).
const DOCS_REF = /(?<![\w/.-])docs\/([\w.-]+\.md)(?:#([\w-]+))?/g;

function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorCache = new Map();
function anchors(page) {
  if (!anchorCache.has(page)) {
    const path = join(root, 'docs', page);
    const set = existsSync(path)
      ? new Set(
          readFileSync(path, 'utf8')
            .split('\n')
            .filter((l) => /^#{1,6}\s/.test(l))
            .map((l) => slug(l.replace(/^#+\s*/, ''))),
        )
      : null;
    anchorCache.set(page, set);
  }
  return anchorCache.get(page);
}

/** An extensionless executable script (a fixture's fake vcgencmd): its comments count too. */
function isScript(path) {
  if (/\.[\w]+$/.test(path)) return false;
  return readFileSync(path, 'utf8').startsWith('#!');
}

function* files(dir) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile() && (CODE.test(e.name) || isScript(p))) yield p;
  }
}

const findings = [];
for (const top of SCANNED) {
  for (const file of files(join(root, top))) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const where = `${relative(root, file)}:${i + 1}`;
      for (const { re, why } of FORBIDDEN) if (re.test(line)) findings.push(`${where}: ${why}: ${line.trim()}`);
      for (const m of line.matchAll(DOCS_REF)) {
        const [ref, page, anchor] = m;
        const set = anchors(page);
        if (!set) findings.push(`${where}: ${ref}: docs/${page} does not exist`);
        else if (anchor && !set.has(anchor)) findings.push(`${where}: ${ref}: docs/${page} has no section #${anchor}`);
      }
    });
  }
}

if (findings.length > 0) {
  process.stderr.write(`${findings.join('\n')}\n${findings.length} citation(s) to fix.\n`);
  process.exit(1);
}
process.stdout.write(
  'citations: every docs/ reference exists; no reference document, section number or issue number is cited.\n',
);
