import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../errors.js';

/**
 * node_exporter's textfile collector output (collector/textfile.go in
 * prometheus/node_exporter): the
 * metrics are written to `<name>.prom.<pid>.tmp` and renamed over `<name>.prom`, so the
 * collector (which reads only `*.prom`) never sees a partial file.
 *
 * Written only when the text changed, and without fsync: the file is regenerated at the
 * next refresh, so durability across a power cut is not needed, and every avoided flush
 * is an SD card write saved. Point the folder at a tmpfs where node_exporter allows it.
 */
export const TEXTFILE_NAME = 'picoclaw_guard.prom';

export class TextfileWriter {
  private last: string | null = null;
  readonly path: string;
  private readonly tmp: string;

  constructor(
    readonly dir: string,
    name = TEXTFILE_NAME,
  ) {
    this.path = join(dir, name);
    this.tmp = join(dir, `${name}.${process.pid}.tmp`);
  }

  /** Write the metrics if they changed; returns whether a file was written. Throws on I/O errors (the caller logs). */
  write(text: string): boolean {
    if (text === this.last) return false;
    try {
      writeFileSync(this.tmp, text, { mode: 0o644 });
      renameSync(this.tmp, this.path);
    } catch (err) {
      try {
        unlinkSync(this.tmp);
      } catch {
        /* never written */
      }
      throw err;
    }
    this.last = text;
    return true;
  }

  /** Remove the file (clean shutdown): stale readings must not outlive the daemon. */
  remove(): void {
    try {
      unlinkSync(this.path);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    this.last = null;
  }
}
