import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESTORE_TMP_PREFIX } from '../../src/archive/restore-write.js';
import { runCli } from '../support/cli.js';
import { live, prune, sessionFiles, world } from '../support/restore-world.js';
import { requireRoot, skipWithReason } from '../support/skip.js';

/**
 * A real full disk: the sessions folder is a tmpfs just too small, at each size from "not even the
 * .jsonl" to "the .jsonl but not the meta". Each restore fails with ENOSPC and leaves nothing (no
 * .jsonl, no meta, no temp file); once the tmpfs is grown, the rerun restores the session whole.
 */
const PAGE = 4096;

describe('restore on a full disk', () => {
  it('at every size short of room: nothing left behind; with room, the rerun restores it whole', async (ctx) => {
    requireRoot(ctx, 'mount a tmpfs as the sessions folder');
    const w = world();
    live(w, 'sk_v1_full', 3, '2026-07-01');
    // A .jsonl of about 96 KiB: 24 pages.
    const fd = openSync(join(w.sessionsDir, 'sk_v1_full.jsonl'), 'a');
    for (let i = 0; i < 96; i++) writeSync(fd, JSON.stringify({ role: 'tool', content: 'z'.repeat(1000) }) + '\n');
    closeSync(fd);
    const jsonlPages = Math.ceil(statSync(join(w.sessionsDir, 'sk_v1_full.jsonl')).size / PAGE);
    const [a] = await prune(w, '2026-11-01T00:00:00Z');
    // The reference: an uninterrupted restore in a second world, the same session.
    const mount = (size: number, remount = false) =>
      spawnSync('mount', ['-t', 'tmpfs', '-o', `${remount ? 'remount,' : ''}size=${size}`, 'tmpfs', w.sessionsDir], {
        encoding: 'utf8',
      });
    const first = mount(PAGE);
    if (first.status !== 0) return skipWithReason(ctx, `cannot mount a tmpfs here: ${first.stderr.trim()}`);
    try {
      const seen = new Set<string>();
      let failed = 0;
      for (let pages = 1; pages <= jsonlPages + 2; pages++) {
        expect(mount(pages * PAGE, true).status).toBe(0);
        const r = runCli(['restore', a!, '--home', w.home, '--state-dir', w.state, '--json']);
        const e = JSON.parse(r.stdout).entries[0] as { action: string; reason: string };
        if (e.action === 'restored') break;
        expect(r.code, `${pages} pages`).toBe(7);
        expect(e.reason, `${pages} pages`).toMatch(/^ENOSPC: nothing of it was restored/);
        seen.add(e.action);
        failed++;
        // Nothing of it: no session file, no temp file.
        expect(readdirSync(w.sessionsDir), `${pages} pages`).toEqual([]);
      }
      expect(seen).toEqual(new Set(['skipped']));
      // Every size up to the .jsonl's own failed: the last of them had room for the .jsonl, not the meta.
      console.info(`restore on a full disk: ${failed} sizes failed, the .jsonl takes ${jsonlPages} pages`);
      expect(failed).toBeGreaterThanOrEqual(jsonlPages);
      expect(mount(64 * PAGE * 16, true).status).toBe(0);
      const ok = runCli(['restore', a!, '--home', w.home, '--state-dir', w.state, '--json']);
      expect(ok.code, ok.stderr + ok.stdout).toBe(0);
      const files = sessionFiles(w.sessionsDir);
      expect([...files.keys()]).toEqual(['sk_v1_full.jsonl', 'sk_v1_full.meta.json']);
      expect(readdirSync(w.sessionsDir).filter((n) => n.startsWith(RESTORE_TMP_PREFIX))).toEqual([]);
    } finally {
      spawnSync('umount', [w.sessionsDir]);
    }
  }, 120_000);
});
