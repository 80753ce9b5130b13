import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/**
 * What can stand at a name in a sessions folder, put there for a test: a file of `text` ('empty': of
 * nothing; 'unreadable': mode 0), a symlink to such a file, a folder, a FIFO, or nothing ('absent').
 * Any other kind ('corrupt', 'torn', ...) is a file of the `text` the caller made for it.
 */
export function putEntry(path: string, what: string, text: string): void {
  if (what === 'absent') return;
  if (what === 'symlink') {
    writeFileSync(`${path}.target`, text);
    symlinkSync(`${path}.target`, path);
  } else if (what === 'directory') mkdirSync(path);
  else if (what === 'fifo') execFileSync('mkfifo', [path]);
  else writeFileSync(path, what === 'empty' ? '' : text);
  // Unreadable only to an ordinary user: root reads it, and the readings compared must agree either way.
  if (what === 'unreadable') chmodSync(path, 0);
}
