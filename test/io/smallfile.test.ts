import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, ftruncateSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SMALL_FILE_CAPS, SmallFileError, readSmallText } from '../../src/io/smallfile.js';
import { tempDir } from '../support/tmp.js';

/** The one reader of small user-controlled files: regular files only, capped, errors naming the file. */
function problem(fn: () => unknown): SmallFileError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SmallFileError);
    return err as SmallFileError;
  }
  throw new Error('expected a SmallFileError');
}

export function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

describe('readSmallText', () => {
  it('reads a regular file, and follows a symlink to one', () => {
    const d = tempDir();
    writeFileSync(join(d, 'a.json'), '{"pid": 5}');
    symlinkSync(join(d, 'a.json'), join(d, 'link.json'));
    expect(readSmallText(join(d, 'a.json'), 'pid')).toBe('{"pid": 5}');
    expect(readSmallText(join(d, 'link.json'), 'pid')).toBe('{"pid": 5}');
  });

  it('a FIFO with no writer is refused at once (a blocking read would wait forever)', () => {
    const p = join(tempDir(), 'config.json');
    mkfifo(p);
    const e = problem(() => readSmallText(p, 'config'));
    expect(e.problem).toBe('not_regular');
    expect(e.message).toBe(`${p} is a FIFO, not a regular file`);
  });

  it('a symlink to /dev/zero is refused (reading it would never end)', () => {
    const p = join(tempDir(), '.picoclaw.pid');
    symlinkSync('/dev/zero', p);
    const e = problem(() => readSmallText(p, 'pid'));
    expect(e.message).toBe(`${p} is a character device, not a regular file`);
  });

  it('a directory is refused, naming it', () => {
    const p = join(tempDir(), 'config.json');
    mkdirSync(p);
    expect(problem(() => readSmallText(p, 'config')).message).toBe(`${p} is a directory, not a regular file`);
  });

  it('a file over the cap of its kind is refused without reading it', () => {
    const d = tempDir();
    const pid = join(d, '.picoclaw.pid');
    writeFileSync(pid, `{"pid": 1, "pad": "${'x'.repeat(2000)}"}`);
    expect(problem(() => readSmallText(pid, 'pid')).message).toMatch(
      new RegExp(`^${pid} is larger than 1 KiB \\(\\d+ bytes\\)$`),
    );
    // A sparse 5 GB file: only its size is looked at.
    const huge = join(d, 'config.json');
    const fd = openSync(huge, 'w');
    ftruncateSync(fd, 5 * 1024 ** 3);
    closeSync(fd);
    const e = problem(() => readSmallText(huge, 'config'));
    expect(e.problem).toBe('too_large');
    expect(e.message).toContain(`${huge} is larger than ${SMALL_FILE_CAPS.config / 1024 / 1024} MiB`);
    // Exactly at the cap is fine.
    writeFileSync(pid, 'x'.repeat(SMALL_FILE_CAPS.pid));
    expect(readSmallText(pid, 'pid')).toHaveLength(SMALL_FILE_CAPS.pid);
  });

  it('missing: problem "absent"; noFollow refuses a symlink', () => {
    const d = tempDir();
    expect(problem(() => readSmallText(join(d, 'none'), 'state')).problem).toBe('absent');
    writeFileSync(join(d, 'real'), 'x');
    symlinkSync(join(d, 'real'), join(d, 'ln'));
    expect(problem(() => readSmallText(join(d, 'ln'), 'meta', { noFollow: true })).problem).toBe('symlink');
  });
});
