import { Option, type Command } from 'commander';

/**
 * The wiring of the one-session commands (pin, unpin, show, delete, export) and `config check`, added to
 * the program by cli.ts. Commander only, as cli.ts: each command's code is imported when it runs.
 */
export interface Wiring {
  lazy: (name: string) => (...args: unknown[]) => Promise<void>;
  homeOpt: () => Option;
  jsonOpt: () => Option;
  wideOpt: () => Option;
  /** The state folder's default, as every command words it (src/io/statedir.ts). */
  stateDirDefault: string;
}

export function addOneSessionCommands(program: Command, w: Wiring): void {
  const { lazy, homeOpt, jsonOpt, wideOpt } = w;
  const STATE_DIR_DEFAULT = w.stateDirDefault;
  const keyArg = 'the full session key, a unique prefix, or the shortened form the tables print (head…tail)';
  const agentOpt = () => new Option('--agent <id>', 'the agent whose session it is, when two agents have that key');

  program
    .command('pin')
    .description('keep one session (with its alias group) out of every prune rule until it is unpinned')
    .argument('<KEY>', keyArg)
    .option('--note <text>', `why it is kept, shown by sessions and prune (one line, at most 200 characters)`)
    .addOption(agentOpt())
    .addOption(homeOpt())
    .option('--state-dir <dir>', `where the pins are kept (${STATE_DIR_DEFAULT})`)
    .addOption(jsonOpt())
    .addHelpText(
      'after',
      `
  A pinned session is never deleted by any rule (age, max_sessions, size, cron rules, the startup budget),
  nor is any session of its alias group; it still counts toward max_sessions, so it may push an
  unpinned one out (prune says how many). The daemon's passes and the pre-start unit read the same
  state folder when this is run as root or as the units' user; any other user is refused (exit 2).

  Example:
    picoclaw-guard pin sk_v1_3f9a --note "the recipe thread"`,
    )
    .action(lazy('pin'));

  program
    .command('unpin')
    .description('end a pin: the next prune pass decides on the session by the policy again')
    .argument('<KEY>', 'a pinned key: full, a unique prefix or the shortened form')
    .addOption(agentOpt())
    .addOption(homeOpt())
    .option('--state-dir <dir>', `where the pins are kept (as for pin)`)
    .addOption(jsonOpt())
    .action(lazy('unpin'));

  program
    .command('show')
    .description(
      "one session's metadata: files, sizes, meta fields, seahorse rows, alias group, pins, holds and verdict",
    )
    .argument('<KEY>', keyArg)
    .addOption(agentOpt())
    .addOption(homeOpt())
    .option('--config <file>', "the guard's config file (for the verdict; as for prune)")
    .option('--state-dir <dir>', `where pins and holds are read (${STATE_DIR_DEFAULT})`)
    .addOption(jsonOpt())
    .addOption(wideOpt())
    .addHelpText(
      'after',
      `
  Metadata only: never a message's text (export prints that). The verdict is what prune (a dry-run
  with the same config) would do with the session now, and why.

  Example:
    picoclaw-guard show sk_v1_3f9a --json | jq .verdict`,
    )
    .action(lazy('show'));

  program
    .command('delete')
    .description('delete one session and its whole alias group; without --apply it only says what would go')
    .argument('<KEY>', keyArg)
    .addOption(agentOpt())
    .option('--apply', 'delete (without it nothing is written anywhere)')
    .option('-y, --yes', 'do not ask (on a terminal --apply asks first; scripts and units are never asked)')
    .addOption(homeOpt())
    .option('--config <file>', "the guard's config file (archive_dir, vacuum; as for prune)")
    .option('--archive <dir>', 'archive the sessions (files + seahorse rows, gzip) before deleting them')
    .option('--no-vacuum', 'never VACUUM seahorse.db')
    .option('--state-dir <dir>', `where the prune history is kept and pins are read (${STATE_DIR_DEFAULT})`)
    .addOption(jsonOpt())
    .addOption(wideOpt())
    .addHelpText(
      'after',
      `
  The same pass as prune --apply, narrowed to one group: the pass lock, the gateway check, each
  file and seahorse row re-checked just before it goes (a session that changed is kept, exit 7),
  the archive, the history line. A pinned session is refused (exit 2: unpin it first), and so is
  one the guard cannot read safely (exit 3). The group goes whole or not at all.

  Examples:
    picoclaw-guard delete sk_v1_3f9a                     what would go
    picoclaw-guard delete sk_v1_3f9a --apply --archive /var/backups/picoclaw`,
    )
    .action(lazy('delete'));

  program
    .command('export')
    .description(
      "print one session's conversation (roles, times, text, tool calls): the only command that prints content",
    )
    .argument('<KEY>', keyArg)
    .addOption(agentOpt())
    .addOption(
      new Option('--format <fmt>', 'md (readable) or json (one JSON document, its messages written one by one)')
        .choices(['md', 'json'])
        .default('md'),
    )
    .option('-o, --output <file>', 'write to this file (created with mode 0600; never overwritten) instead of stdout')
    .addOption(homeOpt())
    .addHelpText(
      'after',
      `
  This prints what was said in the session (and what tools were called with): it may hold secrets.
  Every other command prints metadata only. The .jsonl is read line by line, never whole.

  Examples:
    picoclaw-guard export sk_v1_3f9a | less
    picoclaw-guard export sk_v1_3f9a --format json -o /tmp/session.jsonl`,
    )
    .action(lazy('export'));

  const config = program
    .command('config')
    .description("the guard's config file: check every section and show the effective settings");
  config
    .command('check')
    .description('validate every section of the guard config and print each effective value with its source')
    .option(
      '--config <file>',
      "the guard's config file (default: $PICOCLAW_GUARD_CONFIG, else /etc/picoclaw-guard/config.json if present)",
    )
    .addOption(homeOpt())
    .addOption(jsonOpt())
    .addOption(wideOpt())
    .addHelpText(
      'after',
      `
  Sources, highest first: flag, env (PICOCLAW_SESSION_PRUNE_*, PICOCLAW_GUARD_TOKEN), guard config,
  PicoClaw config.json (session.prune, from --home), default. Secrets show as (set).
  Every command that reads the guard config checks every section the same way.
  Exit code: 0 valid, 2 any error (each refused section is listed).

  Example:
    picoclaw-guard config check --config /etc/picoclaw-guard/config.json`,
    )
    .action(lazy('config'));
}
