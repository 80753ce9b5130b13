import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { keptParts } from '../../src/picoclaw/gatewaylog/parts.js';

/**
 * A numbered log and the check that nothing was lost: line n carries `"n":n`, so after any
 * number of cuts the kept parts (oldest first) followed by the file must hold lines 1..N,
 * each once, in order. The blank line a cut leaves (the padded tail of the straddling line)
 * is not a line the writer wrote, and is skipped.
 */
export function logLine(n: number, padTo: number): string {
  const head = `{"level":"info","n":${n},"pad":"`;
  const tail = `","message":"line ${n}"}\n`;
  return head + 'x'.repeat(Math.max(0, padTo - head.length - tail.length)) + tail;
}

/** The lines the writer wrote, read back from parts + file: their numbers, in order. */
export function numbersOf(file: string, opts: { midCut?: boolean } = {}): number[] {
  const chunks: Buffer[] = keptParts(file).map((p) => gunzipSync(readFileSync(p.path)));
  if (existsSync(file)) chunks.push(readFileSync(file));
  const out: number[] = [];
  for (const chunk of chunks) {
    const text = chunk.toString('utf8');
    // Each part ends at a line end: a line never spans two pieces.
    if (text.length > 0 && !text.endsWith('\n') && chunk !== chunks[chunks.length - 1])
      throw new Error('a part does not end at a line end');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      // Killed between the pad and the collapse: the straddling line's tail is spaces in the file
      // (the whole line is in the newest part).
      if (opts.midCut && / +$/.test(line) && chunk === chunks[chunks.length - 1]) continue;
      const m = /^\{"level":"info","n":(\d+),"pad":"x*","message":"line (\d+)"\}$/.exec(line);
      if (!m || m[1] !== m[2]) throw new Error(`a torn or foreign line: ${JSON.stringify(line.slice(0, 80))}`);
      out.push(Number(m[1]));
    }
  }
  return out;
}

/** An O_APPEND writer in this process (what PicoClaw's os.OpenFile(..., O_APPEND) gives), one write(2) per line. */
export class AppendWriter {
  private fd: number;
  n = 0;
  constructor(
    readonly path: string,
    private readonly lengths: () => number = () => 100,
  ) {
    mkdirSync(join(path, '..'), { recursive: true });
    this.fd = openSync(path, 'a', 0o644);
  }
  write(count = 1): void {
    for (let i = 0; i < count; i++) writeSync(this.fd, logLine(++this.n, this.lengths()));
  }
  close(): void {
    closeSync(this.fd);
  }
}

/**
 * A writer in another process, appending numbered lines as fast as it can (O_APPEND, and
 * O_SYNC like gateway_panic.log when asked; `paced`: 200 lines a millisecond at most) until
 * its standard input closes; it then prints
 * the number of its last line. Its lines are numbered from `after` + 1. `ready` resolves once
 * it has written up to line `first`.
 */
export function childWriter(
  path: string,
  opts: { sync?: boolean; lineBytes?: number; first?: number; after?: number; paced?: boolean } = {},
): {
  child: ChildProcess;
  ready: Promise<void>;
  stop: () => Promise<number>;
} {
  const code = `
    const fs = require('node:fs');
    const c = fs.constants;
    const fd = fs.openSync(${JSON.stringify(path)}, c.O_WRONLY | c.O_CREAT | c.O_APPEND ${opts.sync ? '| c.O_SYNC' : ''}, 0o644);
    const pad = ${opts.lineBytes ?? 120};
    let n = ${opts.after ?? 0}, stop = false, told = false;
    process.stdin.on('data', () => {});
    process.stdin.on('end', () => { stop = true; });
    function line(n) {
      const head = '{"level":"info","n":' + n + ',"pad":"';
      const tail = '","message":"line ' + n + '"}\\n';
      return head + 'x'.repeat(Math.max(0, pad - head.length - tail.length - (n % 37))) + tail;
    }
    function burst() {
      for (let i = 0; i < 200 && !stop; i++) fs.writeSync(fd, line(++n));
      if (!told && n >= ${opts.first ?? 1000}) { told = true; process.stderr.write('ready\\n'); }
      if (stop) { fs.closeSync(fd); process.stdout.write(String(n) + '\\n'); return; }
      ${opts.paced ? 'setTimeout(burst, 1)' : 'setImmediate(burst)'};
    }
    burst();`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
    child.on('exit', (c) => reject(new Error(`writer exited early (${c})`)));
  });
  const stop = () =>
    new Promise<number>((resolve, reject) => {
      child.on('exit', (c) => (c === 0 ? resolve(Number(out.trim())) : reject(new Error(`writer exited ${c}`))));
      child.stdin.end();
    });
  return { child, ready, stop };
}
