import { existsSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';
import { ExitCode, GuardError, errnoCode, errorMessage } from '../errors.js';
import { resolveStateDir } from '../io/statedir.js';
import { activeHolds, addHolds, holdDetail, holdsPath, releaseHolds } from '../state/holds.js';
import { resolveKey, restoreArchives } from '../prune/restore.js';
import { homeFromOpts } from './common.js';
import { fitTable, layout, outputWidth, printJson, shortKey } from './format.js';

const DAY_MS = 86_400_000;

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
  const { entries, otherHomes } = await restoreArchives(path, {
    home,
    key: typeof opts.key === 'string' ? opts.key : undefined,
    list,
  });

  const restored = entries.filter((e) => e.action === 'restored');
  const until = new Date(now.getTime() + holdDays * DAY_MS).toISOString();
  let holdProblem: string | null = null;
  if (home && restored.length > 0 && holdDays > 0) {
    const homeReal = realpathSync(home.home);
    try {
      addHolds(
        stateDir,
        restored.map((e) => ({ home: homeReal, agent: e.agent!, key: e.key!, restored_at: now.toISOString(), until })),
        now.getTime(),
      );
    } catch (err) {
      holdProblem =
        `could not record the holds in ${stateDir} (${errnoCode(err) ?? errorMessage(err)}` +
        `): the next prune pass may delete the restored sessions again; pass --state-dir ` +
        `as prune does`;
    }
  }
  const count = (a: string) => entries.filter((e) => e.action === a).length;
  const failed = count('invalid') + count('skipped');
  if (opts.json) {
    printJson({
      home: home?.home ?? null,
      hold_until: restored.length > 0 && holdDays > 0 && !holdProblem ? until : null,
      hold_problem: holdProblem,
      other_homes: otherHomes,
      entries,
    });
  } else {
    const width = outputWidth(opts);
    const out: string[] = [];
    if (entries.length > 0) {
      out.push(
        ...fitTable(
          [
            { header: 'ACTION' },
            { header: 'AGENT', fit: 'end', min: 8 },
            { header: 'KEY', fit: 'middle', min: 24 },
            { header: 'ARCHIVED' },
          ],
          entries.map((e) => [
            e.action,
            e.agent ?? '-',
            e.key ?? basename(e.archive),
            e.archived_at?.slice(0, 16).replace('T', ' ') ?? '-',
          ]),
          width,
        ),
      );
      for (const e of entries)
        if (e.reason && e.action !== 'listed')
          out.push(
            `  ${e.action} ${e.key === null ? basename(e.archive) : width === Infinity ? e.key : shortKey(e.key, 24)}` +
              `: ${e.reason}`,
          );
    } else out.push('No archives.');
    if (restored.length > 0) {
      out.push(`Restored ${restored.length} session(s); PicoClaw re-indexes them into seahorse.db at its next start.`);
      // The pass sees the hold only in its own state folder: say which one this is.
      if (holdDays > 0 && !holdProblem)
        out.push(
          `Held from pruning until ${until.slice(0, 16).replace('T', ' ')}Z, recorded in ` +
            `${holdsPath(stateDir)} (restore --release KEY ends a hold).`,
        );
    }
    if (count('skipped') > 0) out.push(`Skipped ${count('skipped')} session(s) (see above); nothing was overwritten.`);
    if (count('superseded') > 0)
      out.push(
        `${count('superseded')} older archive(s) of the same sessions ${list ? 'would be' : 'were'}` +
          ` left aside: the newest of each is ${list ? 'the one restored' : 'used'}` +
          `.`,
      );
    if (count('invalid') > 0)
      out.push(`${count('invalid')} archive(s) could not be used (see above); nothing of them was restored.`);
    if (otherHomes > 0) out.push(`${otherHomes} archive(s) taken from other PicoClaw homes were left alone.`);
    if (holdProblem) out.push(`warning: ${holdProblem}`);
    process.stdout.write(layout(out, width) + '\n');
  }
  return failed > 0 || holdProblem ? ExitCode.PARTIAL : ExitCode.OK;
}
