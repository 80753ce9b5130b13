import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type DatabaseT from 'better-sqlite3';

export type Database = DatabaseT.Database;
export type Statement = DatabaseT.Statement;

const require = createRequire(import.meta.url);
let ctor: typeof DatabaseT | undefined;

/**
 * better-sqlite3, loaded on first use (it is a native module: commands that never
 * touch SQLite do not pay for it). URI file names are switched on so that a dry-run
 * can open a database with `immutable=1`, which creates no -wal/-shm files.
 */
export function sqlite(): typeof DatabaseT {
  if (!ctor) {
    process.env.SQLITE_USE_URI = '1';
    ctor = require('better-sqlite3') as typeof DatabaseT;
  }
  return ctor;
}

/** A `file:` URI for a path, with query parameters (the path is percent-encoded). */
export function sqliteUri(path: string, params: Record<string, string>): string {
  const q = new URLSearchParams(params).toString();
  return `${pathToFileURL(path).href}?${q}`;
}
