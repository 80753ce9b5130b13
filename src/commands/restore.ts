import { restoreArchives } from '../prune/restore.js';
import { homeFromOpts } from './common.js';
import { fitTable, layout, outputWidth, printJson } from './format.js';

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const home = homeFromOpts(opts);
  const entries = restoreArchives(home, String(args[0]), { key: typeof opts.key === 'string' ? opts.key : undefined, list: opts.list === true });
  if (opts.json) printJson({ home: home.home, entries });
  else {
    const width = outputWidth(opts);
    const out = fitTable(
      [{ header: 'ACTION' }, { header: 'AGENT', fit: 'end', min: 8 }, { header: 'KEY', fit: 'middle', min: 24 }, { header: 'NOTE', fit: 'wrap', min: 20 }],
      entries.map((e) => [e.action, e.agent, e.key, e.reason ?? e.files.join(', ')]),
      width,
    );
    if (entries.some((e) => e.action === 'restored')) out.push('Restored sessions are re-indexed into seahorse.db by PicoClaw at its next start.');
    process.stdout.write(layout(out, width) + '\n');
  }
  return entries.some((e) => e.action === 'skipped') ? 7 : 0;
}
