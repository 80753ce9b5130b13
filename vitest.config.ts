import { defineConfig } from 'vitest/config';

/**
 * Three projects; `npm test` (`vitest run`) runs them all, `vitest run --project unit` one.
 * - unit: imports the sources; builds nothing.
 * - e2e: spawns the built CLI and daemon (dist/, compiled once by the global setup).
 * - safety: the crash harness and the live gateway, also on dist/.
 * A test file that starts spawning the built CLI belongs in E2E below: test/support/cli.ts
 * makes it fail in the unit project, where dist/ is not built.
 */
const E2E = [
  'test/commands/cli.test.ts',
  'test/commands/config-check-cli.test.ts',
  'test/commands/json-stream.test.ts',
  'test/commands/output.test.ts',
  'test/commands/session-cli.test.ts',
  'test/commands/prune-surface.test.ts',
  'test/daemon/daemon.test.ts',
  'test/daemon/startup-model.test.ts',
  'test/daemon/status-daemon.test.ts',
  'test/daemon/stuck.test.ts',
  'test/daemon/surface-daemon.test.ts',
  'test/health/cli.test.ts',
  'test/io/io.test.ts',
  'test/logs/cli.test.ts',
  'test/metrics/prometheus-live.test.ts',
  'test/notify/cli.test.ts',
  'test/notify/daemon.test.ts',
  'test/picoclaw/inventory.test.ts',
  'test/prune/apply.test.ts',
  'test/prune/archive-rss.test.ts',
  'test/prune/archive.test.ts',
  'test/prune/bad-input.test.ts',
  'test/prune/guard-keys-cli.test.ts',
  'test/prune/memory-budget.test.ts',
  'test/prune/memory-limit.test.ts',
  'test/prune/restore.test.ts',
  'test/prune/restore-lives.test.ts',
  'test/prune/size.test.ts',
  'test/repo/demo.test.ts',
  'test/repo/launcher.test.ts',
  'test/repo/pack.test.ts',
  'test/startup-model/budget.test.ts',
  'test/startup/cli.test.ts',
  'test/startup/memory.test.ts',
  'test/units/units.test.ts',
];
const BUILD = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // As the launcher and the units run the CLI: src/io/heap.ts collects through the exposed gc.
    execArgv: ['--expose-gc'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...E2E, 'test/safety/**'] } },
      { extends: true, test: { name: 'e2e', include: E2E, globalSetup: BUILD } },
      { extends: true, test: { name: 'safety', include: ['test/safety/**/*.test.ts'], globalSetup: BUILD } },
    ],
  },
});
