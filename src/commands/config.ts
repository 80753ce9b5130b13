import { ExitCode } from '../errors.js';
import { checkSections, type ValueRow } from './config-sections.js';
import { escapeControl, fitTable, layout, outputWidth } from './format.js';
import { printJson } from './json-stream.js';

/**
 * `picoclaw-guard config check`: every section of the guard config validated by its owner (not only
 * the one a command reads), and the effective settings with the source of each value. Exit 2 on any
 * error, after listing every refused section. Secrets (server.token) show as "(set)".
 */

const shown = (v: unknown): string =>
  v === null || v === undefined
    ? '-'
    : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
      ? String(v)
      : JSON.stringify(v);

const source = (r: ValueRow): string => (r.from ? `${r.source} (${r.from})` : r.source);

export async function run(opts: Record<string, unknown>): Promise<number> {
  const r = await checkSections(
    typeof opts.config === 'string' ? opts.config : undefined,
    process.env,
    typeof opts.home === 'string' ? opts.home : undefined,
  );
  const ok = r.sections.every((s) => s.ok);
  if (opts.json) {
    printJson({ config: r.path, ok, sections: r.sections });
    return ok ? ExitCode.OK : ExitCode.USAGE;
  }
  const width = outputWidth(opts);
  const out: string[] = [
    `guard config: ${r.path ?? 'none (every value is a default, the environment or PicoClaw config.json)'}`,
  ];
  for (const s of r.sections) {
    out.push('');
    if (!s.ok) {
      out.push(`${s.section}: ERROR: ${escapeControl(s.error!.message)}`);
      if (s.error!.hint) out.push(`  what to do: ${escapeControl(s.error!.hint)}`);
      continue;
    }
    out.push(`${s.section}:`);
    out.push(
      ...fitTable(
        [{ header: 'KEY' }, { header: 'VALUE', fit: 'end', min: 8 }, { header: 'SOURCE', fit: 'middle', min: 12 }],
        s.values.map((v) => [`  ${v.key}`, escapeControl(shown(v.value)), escapeControl(source(v))]),
        width,
      ),
    );
  }
  out.push('');
  const bad = r.sections.filter((s) => !s.ok).map((s) => s.section);
  out.push(ok ? 'OK: every section is valid' : `ERROR in ${bad.join(', ')}: fix the file (exit 2)`);
  process.stdout.write(layout(out, width) + '\n');
  return ok ? ExitCode.OK : ExitCode.USAGE;
}
