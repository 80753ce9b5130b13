#!/usr/bin/env node
/**
 * Command-line wiring only. Each command lives in src/commands/<name>.ts and is
 * imported when it runs, so `--help` loads nothing but commander. This is the one
 * place that turns errors into exit codes and calls process.exit.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { blockingStdout, escapeControl, layout, outputWidth, type Line } from './commands/format.js';
import { ExitCode, GuardError } from './errors.js';
import { guardVersion } from './version.js';
import { addOneSessionCommands } from './commands/cli-one-session.js';

// A reader that closed the pipe (`| head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

/**
 * Commander's own messages in the tool's voice: one line, `picoclaw-guard: ...`, its
 * "Did you mean" hint kept on the same line. Every parse error then ends in the catch
 * below with exit code 2.
 */
function oneLineError(text: string): string {
  const lines = text
    .replace(/^error: /, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return (
    `picoclaw-guard: ${escapeControl(lines.map((l) => l.replace(/^\(Did you mean/, '(did you mean')).join(' '))}` + `\n`
  );
}

/** An option value that must be a whole number of at least `min`, checked while parsing. */
function wholeNumber(min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min)
      throw new InvalidArgumentError(`Expected a whole number of ${min} or more.`);
    return Number(value);
  };
}

const program = new Command();
// Before any subcommand is added: subcommands copy these settings when they are created.
program.exitOverride();
program.configureOutput({
  outputError: (text, write) => write(oneLineError(text)),
  // Commander wraps its own columns; the texts added below are fitted to the same width here.
  writeOut: (text) => process.stdout.write(layout(paragraphs(text.replace(/\n$/, '')), outputWidth({})) + '\n'),
});

/** Help text lines, with prose (unindented lines that run on) joined into paragraphs to re-wrap. */
function paragraphs(text: string): Line[] {
  const out: Line[] = [];
  for (const line of text.split('\n')) {
    const prev = out[out.length - 1];
    if (prev && prev.indent === 0 && prev.text !== '' && line !== '' && !/^\s/.test(line) && !/[.:]$/.test(prev.text))
      prev.text += ' ' + line;
    else out.push({ text: line, indent: /^\s/.test(line) ? /^ */.exec(line)![0].length + 2 : 0 });
  }
  return out;
}
program
  .name('picoclaw-guard')
  .description(
    'Keeps a PicoClaw board healthy: prunes old sessions (JSONL stores and seahorse.db) by a ' +
      'retention policy, reports board health, and shows how long each gateway restart took. ' +
      'It finds PicoClaw by itself (--home, $PICOCLAW_HOME, or ~/.picoclaw).',
  )
  .version(guardVersion(), '-V, --version')
  .addHelpText(
    'after',
    `
Exit codes:
  0   success (health: OK)
  1   unexpected failure
  2   bad command line or configuration
  3   PicoClaw data cannot be handled safely
  4   another prune pass is running
  5   gateway is starting or hung: prune skipped
  6   a store cannot delete: prune skipped, nothing deleted
  7   prune kept sessions it planned to delete; restore: some skipped or unusable
  8   prune --apply interrupted (SIGINT/SIGTERM) between two sessions: run again to finish
  9   prune: the disk filled during the pass; it stopped there (see its report)
  10  health: WARN
  11  health: CRITICAL

Examples:
  picoclaw-guard sessions                 what is on this board
  picoclaw-guard prune                    the plan (a dry-run: changes nothing)
  picoclaw-guard prune --apply            delete what the plan says
  picoclaw-guard health --json            one JSON object for a dashboard
  picoclaw-guard startup --last 5         the last five gateway restarts`,
  );

/** One wording of the state folder's default (src/io/statedir.ts), for every command that has one. */
const STATE_DIR_DEFAULT =
  'default: $STATE_DIRECTORY, else /var/lib/picoclaw-guard for root or a user who can write it, else ' +
  '$XDG_STATE_HOME/picoclaw-guard, else ~/.local/state/picoclaw-guard';
const homeOpt = () => new Option('--home <dir>', 'PicoClaw home (default: $PICOCLAW_HOME, else ~/.picoclaw)');
const jsonOpt = () => new Option('--json', 'print one JSON object instead of the table');
const wideOpt = () =>
  new Option('--wide', 'do not fit the text to the terminal (or to 80 columns): full keys, paths and every column');

/** The commands that read the guard config: each checks every section of it first (src/commands/config-sections.ts). */
const READS_GUARD_CONFIG = new Set(['prune', 'health', 'run', 'install-units', 'show', 'delete']);

/** Lazily import a command module and run it; its return value is the exit code. */
function lazy(name: string) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const mod = (await import(`./commands/${name}.js`)) as {
      run: (opts: Record<string, unknown>, args: unknown[]) => Promise<number> | number;
    };
    const positional = args.slice(0, -2);
    const opts = cmd.optsWithGlobals();
    // Every section of the guard config, not only the command's own: a typo in health.* fails prune too.
    if (READS_GUARD_CONFIG.has(name))
      await (
        await import('./commands/config-sections.js')
      ).assertSectionsValid(typeof opts.config === 'string' ? opts.config : undefined);
    if (name !== 'run') blockingStdout();
    process.exitCode = await mod.run(opts, positional);
  };
}

program
  .command('sessions')
  .description('list every session of every agent: last activity, age, messages, bytes, seahorse rows')
  .addOption(homeOpt())
  .addOption(jsonOpt())
  .addOption(wideOpt())
  .option('--state-dir <dir>', `where the pins and restore holds are read (${STATE_DIR_DEFAULT})`)
  .addHelpText('after', '\nExample:\n  picoclaw-guard sessions --home /srv/picoclaw --json | jq .totals')
  .action(lazy('sessions'));

const prune = program
  .command('prune')
  .description('apply the retention policy; without --apply it is a dry-run that only prints the plan')
  .addOption(homeOpt())
  .option(
    '--config <file>',
    "the guard's config file (default: $PICOCLAW_GUARD_CONFIG, else /etc/picoclaw-guard/config.json if present)",
  )
  .option('--apply', 'delete what the plan says (without it nothing is written anywhere)')
  .option('-y, --yes', 'do not ask before deleting (asked only when standard input and output are terminals)')
  .option(
    '--allow-outside-home',
    'with --home: apply even where config.json puts sessions folders or seahorse.db outside that home',
  )
  .option(
    '--full',
    'print every row of the table (a terminal shows the first 20 after the summary, --pre-start only the deleted)',
  )
  .option('--max-age-days <n>', 'delete sessions idle longer than this (0 disables)', wholeNumber(0))
  .option('--max-sessions <n>', 'keep at most this many sessions, all agents together (0 disables)', wholeNumber(0))
  .option('--max-db-size-mb <n>', 'shrink seahorse.db (+WAL) under this size (0 disables)', wholeNumber(0))
  .option('--no-vacuum', 'never VACUUM seahorse.db')
  .option('--force-vacuum', "VACUUM even while the gateway is running (it blocks the gateway's writes while it runs)")
  .option(
    '--trust-clock',
    'the clock is right: run the age check even when it looks wrong (most sessions would go, or the ' +
      "sessions' times disagree with the disk); without it such a pass deletes nothing by age",
  )
  .option('--archive <dir>', 'archive each session (files + seahorse rows, gzip) before deleting it')
  .option('--cron-keep-runs <n>', 'keep at most the newest N runs of each cron job (0 disables)', wholeNumber(0))
  .option(
    '--cron-max-age-days <n>',
    'delete cron runs idle longer than this, whatever max_age_days says (0 disables)',
    wholeNumber(0),
  )
  .option(
    '--max-sessions-counts-cron <bool>',
    "false: cron runs neither count toward nor are deleted by --max-sessions (default true, PicoClaw's rule)",
  )
  .option(
    '--max-bootstrap-seconds <n>',
    "keep the gateway's predicted startup gap under this: delete the default " +
      "agent's oldest sessions beyond the cap the startup model derives (0 disables)",
    wholeNumber(0),
  )
  .option(
    '--pre-start',
    'run by the pre-start unit before the gateway starts: implies --deadline 120; the text lists only what it deletes',
  )
  .option(
    '--deadline <seconds>',
    'stop deleting after this many seconds (between sessions; the next pass goes on)',
    wholeNumber(0),
  )
  .option('--if-enabled', 'do nothing unless the policy key `enabled` is true (for automatic runs)')
  .option('--state-dir <dir>', `where the prune history is kept (${STATE_DIR_DEFAULT})`)
  .addOption(jsonOpt())
  .addOption(wideOpt())
  .addHelpText(
    'after',
    `
The plan starts with where it works (each sessions folder and seahorse.db by real path, marked
OUTSIDE THE HOME when config.json puts one elsewhere) and a summary (sessions and bytes by
verdict, every warning); then every session with its verdict and reason, and the warnings
again at the end. With --home, an apply that would delete outside that home is refused (exit 2).
On a terminal, --apply shows the summary and asks before deleting (--yes skips the question);
Ctrl-C or SIGTERM stops an apply between two sessions (exit 8; the next run finishes).
Deletion order per session: seahorse rows, then the .jsonl, then the .meta.json. The newest
session is never deleted; sessions without a usable timestamp are never deleted.

Examples:
  picoclaw-guard prune                           show the plan
  picoclaw-guard prune --max-age-days 14 --json  the plan for a stricter policy, as JSON
  picoclaw-guard prune --apply --archive /var/backups/picoclaw`,
  )
  .addHelpText(
    'after',
    `
Beyond PicoClaw's policy (off by default):
Cron runs: every agent-turn run of a cron job is a new session agent:cron-<job>-<uuid>;
--cron-keep-runs keeps the newest N runs of each job, --cron-max-age-days drops old runs,
--max-sessions-counts-cron false makes --max-sessions a cap on chats alone.
Startup budget: --max-bootstrap-seconds uses the model \`picoclaw-guard startup\` shows (learnt
from past restarts); until it has at least 5 measured restarts and a small enough error it
deletes nothing for this key and says how many more restarts it needs.

  picoclaw-guard prune --cron-keep-runs 5 --max-sessions-counts-cron false
  picoclaw-guard prune --max-bootstrap-seconds 30`,
  )
  .action(lazy('prune'));
void prune;

program
  .command('restore')
  .description(
    "put archived sessions back into their agent's sessions folder (PicoClaw re-indexes them at its next start)",
  )
  .argument(
    '[DIR|FILE]',
    'a folder of archives written by prune --archive, or one archive file (not needed with --release)',
  )
  .addOption(homeOpt())
  .option('--key <key>', 'restore only this session key (a unique prefix, or the shortened form --list prints)')
  .option('--list', 'list every life of each key (the archives) and restore nothing (no PicoClaw home needed)')
  .option(
    '--beside',
    'restore under a new key, <key>.restored-<archive time>, that PicoClaw lists beside the session of the key',
  )
  .option(
    '--hold-days <n>',
    'keep restored sessions out of every prune pass for this many days (0: no hold)',
    wholeNumber(0),
    7,
  )
  .option('--release <key>', 'end the hold on a restored session (prune decides on it again)')
  .option('--state-dir <dir>', 'where the holds are kept (as for prune)')
  .addOption(jsonOpt())
  .addOption(wideOpt())
  .action(lazy('restore'));

addOneSessionCommands(program, { lazy, homeOpt, jsonOpt, wideOpt, stateDirDefault: STATE_DIR_DEFAULT });

program
  .command('health')
  .description(
    'board temperature, throttling, under-voltage, CPU frequency, memory, disk and the gateway, with a status',
  )
  .addOption(homeOpt())
  .addOption(jsonOpt())
  .addOption(wideOpt())
  .option('--config <file>', "the guard's config file (thresholds)")
  .option('--sys-root <dir>', 'root of sysfs (for tests and containers)', '/sys')
  .option('--proc-root <dir>', 'root of procfs', '/proc')
  .option('--vcgencmd <path>', 'path to vcgencmd (default: found on PATH; not looked for when --sys-root is not /sys)')
  .option(
    '--state-dir <dir>',
    `where the under-voltage latch is kept and the prune history is read (${STATE_DIR_DEFAULT})`,
  )
  .addHelpText(
    'after',
    '\nThresholds: the "health" section of the guard config (--config).\n' +
      'Exit code: 0 OK, 10 WARN, 11 CRITICAL (a missing $PICOCLAW_HOME or ~/.picoclaw is one: picoclaw_missing),\n' +
      '2 bad config, or a --home that is missing or no PicoClaw home.\n\n' +
      'Examples:\n  picoclaw-guard health\n  picoclaw-guard health --json | jq .status',
  )
  .action(lazy('health'));

program
  .command('startup')
  .description(
    'each gateway restart from gateway.log: time to ready, the silent bootstrap gap, and the sessions behind it',
  )
  .addOption(homeOpt())
  .addOption(jsonOpt())
  .option(
    '--log <file>',
    'gateway.log to read, or - for standard input (default: <home>/logs/gateway.log)',
    (v: string) => {
      if (v === '') throw new InvalidArgumentError('Expected a file name, or - for standard input.');
      return v;
    },
  )
  .option('--last <n>', 'show only the last N restarts', wholeNumber(1))
  .addOption(wideOpt())
  .option('--state-dir <dir>', `where the prune history is kept, to mark restarts after a prune (${STATE_DIR_DEFAULT})`)
  .addHelpText(
    'after',
    `
Reads the JSON file and the console format (a redirect, or journalctl -o short-iso), detected per line.
With PicoClaw's default log level (warn) there is almost nothing to read: set "gateway": {"log_level": "info"}
in config.json or PICOCLAW_LOG_LEVEL=info, and add "gateway.*" to events.logging.include for millisecond figures.
Exit code: 0 report printed, 2 bad flag, 3 the log file is missing or unreadable.

Examples:
  picoclaw-guard startup --last 5
  journalctl -u picoclaw -o short-iso | picoclaw-guard startup --log -`,
  )
  .action(lazy('startup'));

program
  .command('logs')
  .description(
    'keep gateway.log and gateway_panic.log under logs.max_size_mb: cut the oldest lines off in place ' +
      '(no line lost) into compressed parts beside them',
  )
  .addOption(homeOpt())
  .option('--config <file>', "the guard's config file (the logs section)")
  .option(
    '--max-size-mb <n>',
    'cut a log larger than this many MiB (default: logs.max_size_mb, 10; 0: never)',
    wholeNumber(0),
  )
  .option('--keep-parts <n>', 'compressed parts kept per log (default: logs.keep_parts, 5)', wholeNumber(1))
  .option('--dry-run', 'say what would be cut and deleted; write nothing')
  .option('--state-dir <dir>', `where the journal of a cut in progress is kept (${STATE_DIR_DEFAULT})`)
  .addOption(jsonOpt())
  .addHelpText(
    'after',
    `
The daemon (run) does this at each refresh; this command is for boards without it.
A cut needs a file system that can collapse a range (ext4, xfs, f2fs); elsewhere nothing
is changed and the reason is printed. Parts: gateway.log.<n>.gz, the highest is the newest;
startup reads them before the log. Reference: docs/logs.md.
Exit codes: 0 done or nothing to do, 2 bad option or config, 3 the journal of a cut
cannot be used, 4 another cut is running, 6 a log over its limit could not be cut
(nothing of it changed).

Examples:
  picoclaw-guard logs --dry-run
  picoclaw-guard logs --max-size-mb 5 --json`,
  )
  .action(lazy('logs'));

program
  .command('run')
  .description(
    'the sidecar daemon: scheduled prune passes, a status page at /, and /health, /metrics, /startup, /prune over HTTP',
  )
  .addOption(homeOpt())
  .option('--config <file>', "the guard's config file")
  .option('--host <addr>', 'address to serve on (default 127.0.0.1; anything else needs a token)')
  .option('--port <n>', 'port to serve on (default 9109)')
  .option('--textfile-dir <dir>', 'also write metrics to this node_exporter textfile collector folder')
  .option('--state-dir <dir>', `where the last-run marker and latches are kept (${STATE_DIR_DEFAULT})`)
  .option('--sys-root <dir>', 'root of sysfs', '/sys')
  .option('--proc-root <dir>', 'root of procfs', '/proc')
  .option('--vcgencmd <path>', 'path to vcgencmd')
  .option(
    '--schedule <cron>',
    'prune on this cron schedule (prune.schedule, e.g. "30 3 * * *") instead of the interval',
  )
  .addHelpText(
    'after',
    `
Endpoints (from a cache refreshed in the background): GET /health (JSON; 503 when CRITICAL),
/metrics (Prometheus text), /startup (gateway restarts, JSON), /prune (the last pass, JSON).
Passes run when prune.enabled is true: at start (unless one finished within the interval)
and every prune.check_interval_minutes, or at the slots of prune.schedule (cron, in
prune.schedule_timezone): a slot missed while down is caught up once. Logs are JSON lines on stdout (journald).
A non-loopback --host needs a bearer token: $PICOCLAW_GUARD_TOKEN or server.token.
Signals: SIGTERM/SIGINT stop cleanly (exit 0); SIGHUP re-reads the config file.
Exit codes: 0 stopped cleanly, 2 bad option or config (or no token for a non-loopback host).

Examples:
  picoclaw-guard run --home /home/pi/.picoclaw
  curl -s 127.0.0.1:9109/health | jq .status`,
  )
  .action(lazy('run'));

program
  .command('install-units')
  .description(
    'write the systemd units for this board (paths of this Node and this install) and print the systemctl commands',
  )
  .option('--dest <dir>', 'where to write the units', '/etc/systemd/system')
  .option(
    '--user <name>',
    'the user the guard runs as (default: the owner of the PicoClaw home; it must write the sessions folders)',
  )
  .option('--gateway-unit <name>', "the gateway's unit name", 'picoclaw.service')
  .option('--config <file>', "the guard's config file (for server.host, archive and textfile folders)")
  .addOption(homeOpt())
  .option('--dry-run', 'print the units instead of writing them')
  .addOption(wideOpt())
  .addHelpText(
    'after',
    `
Writes picoclaw-guard.service (the daemon), picoclaw-guard-prestart.service (a prune pass
before each gateway start) and <gateway-unit>.d/picoclaw-guard.conf (pulls the pre-start
pass in with Wants= + After=, never Requires=). Starts nothing: it prints the commands.

Examples:
  sudo picoclaw-guard install-units --home /home/pi/.picoclaw --dry-run
  sudo picoclaw-guard install-units --home /home/pi/.picoclaw`,
  )
  .action(lazy('install-units'));

// notify (push notifications, docs/notify.md)
program
  .command('notify')
  .description('push notifications: --test sends one test message to every notify target and shows what each answered')
  .option('--test', 'send the test message')
  .option('--config <file>', "the guard's config file (its notify section)")
  .addOption(jsonOpt())
  .addHelpText(
    'after',
    `
Targets: the "notify" section of the guard config, plus $PICOCLAW_GUARD_NOTIFY_URL (one ntfy topic URL).
Targets are shown by name, or by scheme and host only: a topic, path, query or token is never printed.
Exit code: 0 every target accepted it, 1 a target did not, 2 bad config or no target.

Examples:
  picoclaw-guard notify --test
  picoclaw-guard notify --test --json | jq '.targets[] | {target, answer}'`,
  )
  .action(lazy('notify'));

/** Messages name files and keys, which may hold control characters: shown escaped, as in the reports. */
function printError(err: GuardError): void {
  process.stderr.write(`picoclaw-guard: ${escapeControl(err.message)}\n`);
  if (err.hint) process.stderr.write(`  what to do: ${escapeControl(err.hint)}\n`);
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end here with code 0; usage errors were already printed, on one line.
    process.exitCode = err.exitCode === 0 ? 0 : ExitCode.USAGE;
  } else if (err instanceof GuardError) {
    printError(err);
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(
      `picoclaw-guard: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = ExitCode.FAILURE;
  }
}
