/**
 * `npm run demo`: builds a sample PicoClaw home in a temporary folder and runs every
 * command against it, so a newcomer sees the whole tool at work with no PicoClaw
 * installed. Everything it writes stays inside that one folder: the sample home, the
 * guard's state (prune history, latches) and the guard config it uses.
 *
 * A health view of a home whose gateway is not running is an alarm (gateway down), which
 * is the wrong first impression of a healthy board. So for the tour the demo stands in
 * for PicoClaw's gateway: it serves /health and /ready on a free loopback port, the way
 * the real gateway does (docs/picoclaw.md#health-endpoints-and-ports), and writes the PID file
 * with its own PID. It removes that PID file when the tour ends, as a clean gateway stop
 * does, so the folder left behind is a home whose gateway stopped cleanly.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSampleHome } from './sample/builder.js';
import { renderJsonLine } from './sample/gatewaylog.js';

/**
 * The lines PicoClaw's gateway writes to gateway.log on a clean stop (pkg/gateway/gateway.go, pkg/pid/pidfile.go;
 * docs/picoclaw.md#recognising-a-restart), in the sample log's format (its UTC offset is 120 minutes). Without
 * them `startup` reads the stand-in's stop as the gateway dying after its last line: `crashed`.
 */
function cleanStopLines(ms: number, pidPath: string): string {
  const line = (dt: number, component: string, caller: string, message: string) =>
    renderJsonLine({ ms: ms + dt, level: 'info', component, caller, message, fields: {}, pid: process.pid }, 120);
  return (
    [
      line(0, 'gateway', 'pkg/gateway/gateway.go:276', 'Shutting down...'),
      line(300, 'gateway', 'pkg/gateway/gateway.go:542', '✓ Gateway stopped'),
      line(310, 'pid', 'pkg/pid/pidfile.go:170', `remove pid file: ${pidPath}`),
    ].join('\n') + '\n'
  );
}

const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));

/** The real gateway's answers: `/health` always 200 with its pid, `/ready` 200 once started. */
function standInGateway(startedAt: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const uptime = `${((Date.now() - startedAt) / 1000).toFixed(3)}s`;
    const path = (req.url ?? '').split('?')[0];
    const body =
      path === '/health'
        ? { status: 'ok', uptime, pid: process.pid }
        : path === '/ready'
          ? { status: 'ready', uptime }
          : null;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(body ? `${JSON.stringify(body)}\n` : '{"error":"not found"}\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}

/** Runs the CLI without blocking this process, so the stand-in gateway keeps answering. */
function run(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/**
 * Words wrapped at 80 columns: `first` before the first line, `next` before the others, `end` after every line but the
 * last.
 */
function wrap(text: string, first: string, end: string, next: string): string {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(' ')) {
    const prefix = lines.length === 0 ? first : next;
    if (line.length > prefix.length && line.length + 1 + word.length + end.length > 80) {
      lines.push(line + end);
      line = next + word;
    } else line = line.length > prefix.length ? `${line} ${word}` : line + word;
  }
  lines.push(line);
  return lines.join('\n');
}

const EXIT_MEANING: Record<number, string> = { 10: 'WARN', 11: 'CRITICAL' };

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'picoclaw-demo-'));
  const home = join(dir, '.picoclaw');
  const stateDir = join(dir, 'guard-state');
  const guardConfig = join(dir, 'picoclaw-guard.json');
  mkdirSync(stateDir);
  // An empty guard config: the defaults, and never the board's /etc/picoclaw-guard/config.json.
  writeFileSync(guardConfig, '{}\n');

  const startedAt = Date.now();
  const gateway = await standInGateway(startedAt);
  const sample = buildSampleHome({
    dir: home,
    seed: 7,
    sessions: 80,
    agents: 3,
    now: Date.now(),
    pidFile: { pid: process.pid, port: gateway.port },
  });
  process.stdout.write(
    `Built a sample PicoClaw home in ${home}\n` +
      [
        `${sample.sessions.length} sessions over ${sample.agents.length} agents, seahorse.db, gateway.log with restarts (${Date.now() - startedAt}` +
          ` ms).`,
        `The guard keeps its state in ${stateDir} and reads its config from ${guardConfig}` +
          `: nothing outside ${dir} is written.`,
        `For the tour this demo plays PicoClaw's gateway: it answers /health and ` +
          `/ready on 127.0.0.1:${gateway.port} and wrote ${join(home, '.picoclaw.pid')}` +
          ` with its own PID ${process.pid}.`,
      ]
        .map((p) => wrap(p, '  ', '', '  ') + '\n')
        .join(''),
  );

  const env: NodeJS.ProcessEnv = { ...process.env, PICOCLAW_GUARD_CONFIG: guardConfig, STATE_DIRECTORY: stateDir };
  const common = ['--home', home];
  const state = ['--state-dir', stateDir];
  const steps: { title: string; args: string[]; note?: string }[] = [
    { title: 'What is on this board', args: ['sessions', ...common] },
    {
      title: 'What the retention policy would delete (dry-run: nothing is changed)',
      args: ['prune', '--max-age-days', '30', '--max-sessions', '100', ...common],
    },
    {
      title: 'Apply it',
      args: ['prune', '--apply', '--max-age-days', '30', '--max-sessions', '100', ...common, ...state],
      note:
        'The gateway is running, so seahorse.db is not VACUUMed (that would block ' +
        'its writes); the pre-start unit does it before the gateway starts.',
    },
    {
      title: 'Board health',
      args: ['health', ...common, ...state],
      note:
        "Temperature, throttling, CPU frequency, memory and disk are this machine's " +
        'real readings (a PC or VM has no Pi firmware, so those lines say unavailable);' +
        " the gateway is the demo's stand-in.",
    },
    {
      title: 'Gateway restarts and their bootstrap gaps',
      args: ['startup', ...common, ...state],
      note:
        "Read from the sample gateway.log: each restart's time to ready and the " +
        'silent seahorse bootstrap gap, which grows with the number of sessions.',
    },
  ];
  for (const step of steps) {
    process.stdout.write(
      `\n=== ${step.title}\n${wrap(`$ picoclaw-guard ${step.args.join(' ')}`, '', ' \\', '    ')}\n`,
    );
    if (step.note) process.stdout.write(`${wrap(step.note, '# ', '', '# ')}\n`);
    process.stdout.write('\n');
    const code = await run(step.args, env);
    if (code !== 0) process.stdout.write(`(exit code ${code}${EXIT_MEANING[code] ? `: ${EXIT_MEANING[code]}` : ''})\n`);
  }

  await new Promise<void>((resolve) => gateway.server.close(() => resolve()));
  appendFileSync(join(home, 'logs', 'gateway.log'), cleanStopLines(Date.now(), join(home, '.picoclaw.pid')));
  rmSync(join(home, '.picoclaw.pid'), { force: true });
  process.stdout.write(
    '\n' +
      wrap(
        `The stand-in gateway has stopped, logged its clean stop and removed its PID file, as PicoClaw's gateway does. ` +
          (`The sample home stays in ${dir} for you to explore: pass --home ${home}` +
            ` to any command, and --state-dir ${stateDir} to prune, health and startup. `) +
          `Delete the folder when done.`,
        '',
        '',
        '',
      ) +
      '\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
