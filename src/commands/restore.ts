import { restoreArchives } from '../prune/restore.js';
import { homeFromOpts } from './common.js';
import { printJson, shortKey, table } from './format.js';

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const home = homeFromOpts(opts);
  const entries = restoreArchives(home, String(args[0]), { key: typeof opts.key === 'string' ? opts.key : undefined, list: opts.list === true });
  if (opts.json) printJson({ home: home.home, entries });
  else {
    process.stdout.write(
      table(['ACTION', 'AGENT', 'KEY', 'NOTE'], entries.map((e) => [e.action, e.agent, shortKey(e.key, 50), e.reason ?? e.files.join(', ')])) + '\n',
    );
    if (entries.some((e) => e.action === 'restored')) process.stdout.write('Restored sessions are re-indexed into seahorse.db by PicoClaw at its next start.\n');
  }
  return entries.some((e) => e.action === 'skipped') ? 7 : 0;
}
