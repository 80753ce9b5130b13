import { realpathSync } from 'node:fs';
import { ExitCode } from '../errors.js';
import { homePins, pinDetail, pinsPath, removePins } from '../state/pins.js';
import { homeFromOpts } from './common.js';
import { escapeControl, layout, outputWidth } from './format.js';
import { printJson } from './json-stream.js';
import { pinStateDir } from './pin.js';
import { resolveSessionKey } from '../picoclaw/session-key.js';

/**
 * `picoclaw-guard unpin KEY`: end a pin; the next pass decides on the session by the policy again.
 * KEY is resolved among this home's pins, so a pin whose session is gone can be ended too.
 */
export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const typed = typeof args[0] === 'string' ? args[0] : '';
  const home = homeFromOpts(opts);
  const homeReal = realpathSync(home.home);
  const stateDir = pinStateDir(opts);
  const pin = resolveSessionKey(typed, homePins(stateDir, homeReal), {
    agent: typeof opts.agent === 'string' ? opts.agent : undefined,
    where: `the pins of ${home.home} (${pinsPath(stateDir)})`,
    listHint: 'picoclaw-guard sessions lists the pins',
  });
  const gone = removePins(stateDir, pin);
  if (opts.json) {
    printJson({ home: home.home, pins_file: pinsPath(stateDir), unpinned: gone });
    return ExitCode.OK;
  }
  process.stdout.write(
    layout(
      gone.map(
        (p) =>
          `unpinned ${p.agent} ${escapeControl(p.key)} (was ${pinDetail(p)}): the next pass applies the policy to it again`,
      ),
      outputWidth(opts),
    ) + '\n',
  );
  return ExitCode.OK;
}
