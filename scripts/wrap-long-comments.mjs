#!/usr/bin/env node
// Wraps comment lines longer than the limit (Prettier never wraps comments). Touches only lines
// that are wholly a comment: `// text`, `/** text */` and ` * text` inside a block. A comment
// after code on the same line is left alone and reported, to be moved above its line by hand.
// Words are never split; a word longer than the line stays whole.
//
// Usage: node scripts/wrap-long-comments.mjs [--width 120] [--check] FILE...
//   --check   change nothing; list the lines that would change (exit 1 when there are any)
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const widthAt = args.indexOf('--width');
const width = widthAt >= 0 ? Number(args[widthAt + 1]) : 120;
const check = args.includes('--check');
const files = args.filter((a, i) => !a.startsWith('--') && !(widthAt >= 0 && i === widthAt + 1));

/** Words of `text` in lines of at most `room` columns (a longer word gets a line of its own). */
function wrap(text, room) {
  const lines = [];
  let cur = '';
  for (const word of text.split(/ +/).filter((w) => w !== '')) {
    if (cur !== '' && cur.length + 1 + word.length > room) {
      lines.push(cur);
      cur = word;
    } else cur = cur === '' ? word : `${cur} ${word}`;
  }
  if (cur !== '') lines.push(cur);
  return lines;
}

/** The wrapped replacement for one over-long comment line, or null when it is not a whole-line comment. */
function rewrap(line) {
  let m = /^(\s*)\/\/( +)(.*)$/.exec(line);
  if (m) {
    const prefix = `${m[1]}//${m[2]}`;
    return wrap(m[3], width - prefix.length).map((l) => prefix + l);
  }
  m = /^(\s*)\/\*\*\s+(.*?)\s*\*\/\s*$/.exec(line);
  if (m) {
    const prefix = `${m[1]} * `;
    return [`${m[1]}/**`, ...wrap(m[2], width - prefix.length).map((l) => prefix + l), `${m[1]} */`];
  }
  m = /^(\s*\*)( +)(.*)$/.exec(line);
  if (m && !m[3].endsWith('*/')) {
    const prefix = m[1] + m[2];
    return wrap(m[3], width - prefix.length).map((l) => prefix + l);
  }
  return null;
}

let changed = 0;
for (const file of files) {
  const src = readFileSync(file, 'utf8').split('\n');
  const out = [];
  let touched = false;
  let inTemplate = false;
  for (const [i, line] of src.entries()) {
    // A comment-looking line inside a multi-line template literal is text, not a comment.
    const ticks = (line.replace(/\\`/g, '').match(/`/g) ?? []).length;
    const wasInTemplate = inTemplate;
    if (ticks % 2 === 1) inTemplate = !inTemplate;
    if (line.length <= width || wasInTemplate) {
      out.push(line);
      continue;
    }
    const repl = rewrap(line);
    if (repl === null || repl.length < 2) {
      if (/\/\/ |\/\*/.test(line))
        process.stderr.write(`${file}:${i + 1}: over ${width} columns, not a whole-line comment\n`);
      out.push(line);
      continue;
    }
    touched = true;
    changed++;
    if (check) process.stdout.write(`${file}:${i + 1}\n`);
    out.push(...repl);
  }
  if (touched && !check) writeFileSync(file, out.join('\n'));
}
process.stderr.write(`${changed} comment line(s) ${check ? 'to wrap' : 'wrapped'}\n`);
if (check && changed > 0) process.exitCode = 1;
