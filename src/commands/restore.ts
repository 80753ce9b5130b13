import { existsSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';
import { ExitCode, GuardError } from '../errors.js';
import { resolveStateDir } from '../io/statedir.js';
import { activeHolds, holdDetail, holdsPath, releaseHolds } from '../state/holds.js';
import { resolveKey, restoreArchives, type RestoreAction } from '../archive/restore.js';
import { homeFromOpts } from './common.js';
import { fitTable, layout, outputWidth, shortKey } from './format.js';
import { printJson } from './json-stream.js';

async function release(opts: Record<string, unknown>, stateDir: string, now: Date): Promise<number> {
  const home = homeFromOpts(opts);
  const homeReal = realpathSync(home.home);
  const held = activeHolds(stateDir, homeReal, now.getTime());
  const key = resolveKey(
    String(opts.release),
    held.map((h) => h.key),
    holdsPath(stateDir),
  );
  const gone = releaseHolds(stateDir, homeReal, (k) => k === key, now.getTime());
  if (opts.json) printJson({ home: home.home, released: gone });
  else
    process.stdout.write(
      layout(
        gone.map(
          (h) =>
            `released ${h.agent} ${shortKey(h.key, 40)} (${holdDetail(h)}): the next pass applies the policy to it again`,
        ),
        outputWidth(opts),
      ) + '\n',
    );
  return ExitCode.OK;
}

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const now = new Date();
  const stateDir = resolveStateDir(typeof opts.stateDir === 'string' ? opts.stateDir : undefined);
  if (typeof opts.release === 'string') return release(opts, stateDir, now);
  const path = args[0];
  if (typeof path !== 'string') {
    // One line, like commander's own "missing required argument" (the argument is optional only for --release).
    throw new GuardError("missing required argument 'DIR|FILE' (an archive folder or file; or --release KEY)", {
      exitCode: ExitCode.USAGE,
    });
  }
  // The archive first: a mistyped path is the mistake to name, not a PicoClaw home looked for next.
  if (!existsSync(path))
    throw new GuardError(`no archive at ${path}: no such file or folder; nothing was restored`, {
      exitCode: ExitCode.USAGE,
      path,
      hint: 'give an archive file or the folder passed to prune --archive',
    });
  const holdDays = typeof opts.holdDays === 'number' ? opts.holdDays : 7;
  const list = opts.list === true;
  // Listing needs no PicoClaw; with --home (or $PICOCLAW_HOME) it lists that home's archives only.
  const home = list && typeof opts.home !== 'string' && !process.env.PICOCLAW_HOME ? null : homeFromOpts(opts);
  const r = await restoreArchives(path, {
    home,
    key: typeof opts.key === 'string' ? opts.key : undefined,
    list,
    beside: opts.beside === true,
    stateDir,
    holdDays,
    nowMs: now.getTime(),
  });
  const { entries, otherHomes, holdProblem } = r;
  const restored = entries.filter((e) => e.action === 'restored');
  const count = (a: RestoreAction) => entries.filter((e) => e.action === a).length;
  const failed = count('invalid') + count('skipped');
  const code = failed > 0 || holdProblem ? ExitCode.PARTIAL : ExitCode.OK;
  if (opts.json) {
    printJson({
      home: home?.home ?? null,
      exit_code: code,
      hold_until: r.holdUntil,
      hold_problem: holdProblem,
      other_homes: otherHomes,
      temps_removed: r.tempsRemoved,
      totals: {
        restored: restored.length,
        resumed: restored.filter((e) => e.resumed !== null).length,
        skipped: count('skipped'),
        invalid: count('invalid'),
        other_lives: count('other_life'),
        rows_only: count('rows_only'),
        listed: count('listed'),
      },
      entries,
    });
  } else {
    const width = outputWidth(opts);
    // A command is never wrapped: it is there to be copied.
    const out: (string | { raw: string })[] = [];
    if (entries.length > 0) {
      out.push(
        ...fitTable(
          [
            { header: 'ACTION' },
            { header: 'AGENT', fit: 'end', min: 8 },
            { header: 'KEY', fit: 'middle', min: 24 },
            { header: 'ARCHIVED' },
            { header: 'MESSAGES', align: 'right' },
            { header: 'WHOLE' },
          ],
          entries.map((e) => [
            e.action === 'other_life' ? 'other life' : e.action,
            e.agent ?? '-',
            e.key ?? basename(e.archive),
            e.archived_at?.slice(0, 16).replace('T', ' ') ?? '-',
            e.messages === null ? '-' : String(e.messages),
            e.complete === null ? '-' : e.complete ? 'yes' : 'no',
          ]),
          width,
        ),
      );
      for (const e of entries) {
        if (e.reason && (e.action !== 'listed' || list))
          out.push(
            `  ${e.action === 'other_life' ? 'other life' : e.action} ` +
              `${e.key === null ? basename(e.archive) : width === Infinity ? e.key : shortKey(e.key, 24)}` +
              `: ${e.reason}`,
          );
        if (e.command) out.push({ raw: `    to restore it: ${e.command}` });
      }
    } else out.push('No archives.');
    if (restored.length > 0) {
      const resumed = restored.filter((e) => e.resumed !== null).length;
      out.push(
        `Restored ${restored.length} session(s)` +
          (resumed > 0 ? ` (${resumed} of them finished from an interrupted restore, or already in place)` : '') +
          `; PicoClaw re-indexes them into seahorse.db at its next start.`,
      );
      // The pass sees the hold only in its own state folder: say which one this is.
      if (r.holdUntil)
        out.push(
          `Held from pruning until ${r.holdUntil.slice(0, 16).replace('T', ' ')}Z, recorded in ` +
            `${holdsPath(stateDir)} (restore --release KEY ends a hold).`,
        );
    }
    if (count('skipped') > 0) out.push(`Skipped ${count('skipped')} session(s) (see above); nothing was overwritten.`);
    if (count('other_life') > 0)
      out.push(
        `${count('other_life')} other life/lives of the same keys ${list ? 'would be' : 'were'} left in the archive ` +
          `folder (a folder restores the latest complete life of each key); each is listed above with the ` +
          `command that restores it.`,
      );
    if (count('invalid') > 0)
      out.push(`${count('invalid')} archive(s) could not be used (see above); nothing of them was restored.`);
    if (r.tempsRemoved > 0) out.push(`Removed ${r.tempsRemoved} temp file(s) an interrupted restore had left.`);
    if (otherHomes > 0) out.push(`${otherHomes} archive(s) taken from other PicoClaw homes were left alone.`);
    if (holdProblem) out.push(`warning: ${holdProblem}`);
    process.stdout.write(
      out.map((l) => (typeof l === 'string' ? layout([l], width) : layout([l.raw], Infinity))).join('\n') + '\n',
    );
  }
  return code;
}
