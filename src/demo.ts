/**
 * `npm run demo`: builds a sample PicoClaw home in a temporary folder and runs every
 * command against it, so a newcomer sees the whole tool at work with no PicoClaw
 * installed. Nothing outside the temporary folder is touched.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSampleHome } from './sample/builder.js';

const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'picoclaw-demo-'));
const home = join(dir, '.picoclaw');
const t0 = Date.now();
const sample = buildSampleHome({ dir: home, seed: 7, sessions: 80, agents: 3, now: Date.now() });
process.stdout.write(
  `Built a sample PicoClaw home in ${home}\n` +
    `  ${sample.sessions.length} sessions over ${sample.agents.length} agents, seahorse.db, gateway.log with restarts (${Date.now() - t0} ms)\n` +
    `  Try any command yourself with --home ${home}\n`,
);

const steps: { title: string; args: string[] }[] = [
  { title: 'What is on this board', args: ['sessions'] },
  { title: 'What the retention policy would delete (dry-run: nothing is changed)', args: ['prune', '--max-age-days', '30', '--max-sessions', '100'] },
  { title: 'Apply it', args: ['prune', '--apply', '--max-age-days', '30', '--max-sessions', '100'] },
  { title: 'Board health', args: ['health'] },
  { title: 'Gateway restarts and their bootstrap gaps', args: ['startup'] },
];
// An empty guard config, so that a /etc/picoclaw-guard/config.json on this machine does not change the tour.
const guardConfig = join(dir, 'guard-config.json');
writeFileSync(guardConfig, '{}\n');
for (const step of steps) {
  process.stdout.write(`\n=== ${step.title}\n$ picoclaw-guard ${step.args.join(' ')} --home ${home}\n\n`);
  const r = spawnSync(process.execPath, [cli, ...step.args, '--home', home], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PICOCLAW_GUARD_CONFIG: guardConfig } });
  if (r.status !== 0) process.stdout.write(`(exit code ${r.status})\n`);
}
process.stdout.write(`\nThe sample home stays in ${dir} for you to explore; delete it when done.\n`);
