import { existsSync, realpathSync } from 'node:fs';
import { ExitCode, GuardError } from '../errors.js';
import { systemClock } from '../io/clock.js';
import { resolveStateDir, SYSTEM_STATE_DIR } from '../io/statedir.js';
import type { PicoClawHome } from '../picoclaw/home.js';
import { buildInventory, type SessionRecord } from '../picoclaw/inventory/inventory.js';
import { groupSessions, memberList } from '../prune/plan/groups.js';
import { addPin, MAX_NOTE_CHARS, pinDetail, pinsPath } from '../state/pins.js';
import { homeFromOpts } from './common.js';
import { escapeControl, layout, outputWidth } from './format.js';
import { printJson } from './json-stream.js';
import { resolveSessionKey, sessionCandidates } from '../picoclaw/session-key.js';

/**
 * `picoclaw-guard pin KEY [--note TEXT]`: every prune pass (the CLI's, the daemon's, the pre-start
 * unit's) keeps the session and its whole alias group until `unpin KEY`. The pin is written to the
 * guard's state folder, which the units read with no flag (src/io/statedir.ts).
 */

/**
 * The state folder a pin or unpin goes to, refused when it is not the one the units read: a pin the
 * daemon never sees would look safe and not be. The units' folder exists but this user cannot
 * write it (and no --state-dir or $STATE_DIRECTORY says where else): exit 2, saying who can.
 */
export function pinStateDir(opts: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): string {
  const flag = typeof opts.stateDir === 'string' ? opts.stateDir : undefined;
  const dir = resolveStateDir(flag, env);
  if (!flag && !env.STATE_DIRECTORY && !env.PICOGUARD_NO_SYSTEM_STATE && dir !== SYSTEM_STATE_DIR)
    if (existsSync(SYSTEM_STATE_DIR))
      throw new GuardError(
        `the units keep their state in ${SYSTEM_STATE_DIR}, which this user cannot write: ` +
          `a pin kept in ${dir} would not be seen by the daemon or the pre-start unit`,
        {
          exitCode: ExitCode.USAGE,
          path: SYSTEM_STATE_DIR,
          hint: "run it as root or as the units' user (sudo -u picoclaw picoclaw-guard ...), or pass --state-dir",
        },
      );
  return dir;
}

/** The alias group session s is in (itself alone when it is in none). */
export function aliasGroupOf(home: PicoClawHome, sessions: SessionRecord[], s: SessionRecord): SessionRecord[] {
  for (const g of groupSessions(
    sessions,
    home.agents.map((a) => a.id),
  )) {
    const members = memberList(g);
    if (members.includes(s)) return members;
  }
  return [s];
}

function checkNote(note: unknown): string | null {
  if (note === undefined) return null;
  const text = typeof note === 'string' ? note : '';
  if (text.length > MAX_NOTE_CHARS || [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
    throw new GuardError(`--note: at most ${MAX_NOTE_CHARS} characters on one line, without control characters`, {
      exitCode: ExitCode.USAGE,
    });
  return text === '' ? null : text;
}

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const typed = typeof args[0] === 'string' ? args[0] : '';
  const note = checkNote(opts.note);
  const home = homeFromOpts(opts);
  const stateDir = pinStateDir(opts);
  const inv = buildInventory(home, { skipSeahorse: true });
  const target = resolveSessionKey(typed, sessionCandidates(inv.sessions), {
    agent: typeof opts.agent === 'string' ? opts.agent : undefined,
    where: home.home,
    listHint: 'picoclaw-guard sessions lists the keys',
  }).session;
  const group = aliasGroupOf(home, inv.sessions, target).filter((m) => m !== target);
  const pin = addPin(stateDir, {
    home: realpathSync(home.home),
    agent: target.agent,
    key: target.key!,
    pinned_at: systemClock().toISOString(),
    note,
  });
  if (opts.json) {
    printJson({
      home: home.home,
      pins_file: pinsPath(stateDir),
      pin,
      alias_group: group.map((m) => ({ agent: m.agent, key: m.key })),
    });
    return ExitCode.OK;
  }
  const lines = [
    `pinned ${target.agent} ${escapeControl(pin.key)} (${pinDetail(pin)}): every prune pass keeps it` +
      (group.length > 0
        ? `, with its alias group (${group.map((m) => escapeControl(m.key ?? m.base)).join(', ')})`
        : '') +
      `, until picoclaw-guard unpin ${escapeControl(pin.key)}`,
    `it still counts toward max_sessions; pins are kept in ${pinsPath(stateDir)}`,
  ];
  process.stdout.write(layout(lines, outputWidth(opts)) + '\n');
  return ExitCode.OK;
}
