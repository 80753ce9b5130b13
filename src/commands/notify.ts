import { ExitCode, GuardError } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { NOTIFY_URL_ENV, parseNotifyConfig } from '../notify/config.js';
import { deliver, type Answer } from '../notify/deliver.js';
import { boardName, type NotifyMessage } from '../notify/message.js';
import { targetLabel } from '../notify/redact.js';
import { escapeControl, table } from './format.js';
import { printJson } from './json-stream.js';

/**
 * `picoclaw-guard notify --test [--json]`: one test message to every target of the `notify` section
 * (and PICOCLAW_GUARD_NOTIFY_URL), all at once, each within timeout_seconds, no retry; then what each
 * answered. Targets are shown by their label: never a URL's path, query or credentials, never a token.
 * Exit 0 every target accepted it, 1 at least one did not, 2 bad config, no target, or no --test.
 */
export interface TestResult {
  target: string;
  type: string;
  ok: boolean;
  answer: string;
  status: number | null;
  duration_seconds: number;
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  if (!opts.test)
    throw new GuardError('notify needs --test (it sends one test message to every target)', {
      exitCode: ExitCode.USAGE,
      hint: 'picoclaw-guard notify --test',
    });
  const cfg = loadGuardConfig(typeof opts.config === 'string' ? opts.config : undefined);
  const notify = parseNotifyConfig(cfg.sections.notify, cfg.path, process.env);
  if (notify.targets.length === 0)
    throw new GuardError(`no notify target is configured${cfg.path ? ` in ${cfg.path}` : ''}`, {
      exitCode: ExitCode.USAGE,
      path: cfg.path ?? undefined,
      hint: `add "notify": {"targets": [{"type": "ntfy", "url": "https://ntfy.sh/<topic>"}]}, or set ${NOTIFY_URL_ENV}`,
    });
  const message: NotifyMessage = {
    event: 'test',
    level: 'ok',
    code: 'test',
    message: 'picoclaw-guard test message: this target receives the board’s notifications.',
    time: new Date().toISOString(),
    board: boardName(null),
    health: null,
  };
  const answers = await Promise.all(
    notify.targets.map(async (t) => [t, await deliver(t, message, notify.timeout_seconds * 1000)] as const),
  );
  const results: TestResult[] = answers.map(([t, a]: readonly [(typeof notify.targets)[number], Answer]) => ({
    target: targetLabel(t),
    type: t.type,
    ok: a.ok,
    answer: a.answer,
    status: a.status,
    duration_seconds: a.duration_seconds,
  }));
  const allOk = results.every((r) => r.ok);
  if (opts.json) printJson({ ok: allOk, targets: results });
  else {
    const rows = results.map((r) => [
      escapeControl(r.target),
      r.ok ? 'ok' : 'FAILED',
      escapeControl(r.answer),
      `${r.duration_seconds.toFixed(2)} s`,
    ]);
    process.stdout.write(table(['target', 'result', 'answer', 'took'], rows) + '\n');
    const failed = results.filter((r) => !r.ok).length;
    process.stdout.write(
      failed === 0
        ? `${results.length} target(s) accepted the test message.\n`
        : `${failed} of ${results.length} target(s) did not accept it.\n`,
    );
  }
  return allOk ? ExitCode.OK : ExitCode.FAILURE;
}
