import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A memory cgroup of our own (root only), for the benchmark and the test that run a pass
 * under a hard limit as the unit's MemoryMax sets it. cgroup v2 (`memory.max`,
 * `memory.peak`) where the unified hierarchy has the memory controller, else cgroup v1
 * (`memory.limit_in_bytes`, `memory.max_usage_in_bytes`). Null when neither can be made.
 */
export interface Cgroup {
  path: string;
  version: 1 | 2;
  add(pid: number): void;
  /** Highest memory use of the group so far (bytes; page cache included, as the kernel counts it). */
  peakBytes(): number | null;
  /** Times the limit was hit (v1 failcnt / v2 events max + oom). */
  oomKills(): number;
  remove(): void;
}

function v2Root(): string | null {
  for (const root of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    try {
      const ctrl = readFileSync(join(root, 'cgroup.subtree_control'), 'utf8');
      if (/\bmemory\b/.test(ctrl)) return root;
    } catch {
      // not v2 here
    }
  }
  return null;
}

export function makeCgroup(name: string, limitBytes: number | null): Cgroup | null {
  const v2 = v2Root();
  const base = v2 ?? (existsSync('/sys/fs/cgroup/memory/cgroup.procs') ? '/sys/fs/cgroup/memory' : null);
  if (!base) return null;
  const path = join(base, name);
  try {
    mkdirSync(path);
    if (limitBytes !== null) {
      if (v2) writeFileSync(join(path, 'memory.max'), String(limitBytes));
      else writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
      // No swap to hide behind: the limit is the limit (v2 memory.swap.max; v1 memsw where the kernel has it).
      try {
        if (v2) writeFileSync(join(path, 'memory.swap.max'), '0');
        else if (existsSync(join(path, 'memory.memsw.limit_in_bytes')))
          writeFileSync(join(path, 'memory.memsw.limit_in_bytes'), String(limitBytes));
      } catch {
        // no swap accounting: the machine has no swap to use anyway, or it is counted elsewhere
      }
    }
  } catch {
    try {
      rmdirSync(path);
    } catch {
      // never made
    }
    return null;
  }
  const read = (f: string) => {
    try {
      return readFileSync(join(path, f), 'utf8');
    } catch {
      return null;
    }
  };
  return {
    path,
    version: v2 ? 2 : 1,
    add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
    peakBytes: () => {
      const t = read(v2 ? 'memory.peak' : 'memory.max_usage_in_bytes');
      return t === null ? null : Number(t.trim());
    },
    oomKills: () => {
      if (v2) {
        const m = /oom_kill (\d+)/.exec(read('memory.events') ?? '');
        return m ? Number(m[1]) : 0;
      }
      const m = /oom_kill (\d+)/.exec(read('memory.oom_control') ?? '');
      return m ? Number(m[1]) : 0;
    },
    remove: () => {
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(path);
          return;
        } catch {
          // processes still leaving
        }
      }
    },
  };
}
