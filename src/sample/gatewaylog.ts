import { Rng } from './random.js';

/**
 * Sample gateway.log content in PicoClaw's file format (zerolog JSON lines,
 * picoclaw-facts.md §5): one restart per entry in `restarts`, with a silent
 * bootstrap gap of `gapMs` between agent registration and `Agent initialized`.
 */
export interface SampleRestart {
  /** When the process started (epoch ms). */
  startMs: number;
  /** Sessions bootstrapped at this start (drives the number of ingest lines). */
  sessions: number;
  /** Length of the silent bootstrap (ms). */
  gapMs: number;
  /** How it ended: a clean stop, a crash (no closing line), or a failed start. */
  end: 'stopped' | 'crashed' | 'failed' | 'running';
  /** When it stopped (for 'stopped'). */
  stopMs?: number;
}

export type SampleLogLevel = 'warn' | 'info' | 'debug';

export interface SampleLogOptions {
  restarts: SampleRestart[];
  level: SampleLogLevel;
  /** events.logging.include has gateway.*: emit `Runtime event: gateway.ready` with duration_ms. */
  events: boolean;
  seed: number;
  home: string;
  /** Offset of the board's local time from UTC, in minutes (zerolog writes local time). */
  utcOffsetMin?: number;
}

function zTime(ms: number, offsetMin: number): string {
  const d = new Date(Math.floor(ms / 1000) * 1000 + offsetMin * 60_000);
  const base = d.toISOString().slice(0, 19);
  if (offsetMin === 0) return base + 'Z';
  const sign = offsetMin < 0 ? '-' : '+';
  const a = Math.abs(offsetMin);
  return `${base}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

export function renderGatewayLog(o: SampleLogOptions): string {
  const rng = new Rng(o.seed);
  const off = o.utcOffsetMin ?? 0;
  const lines: string[] = [];
  const rank = { debug: 0, info: 1, warn: 2 } as const;
  const emit = (level: 'debug' | 'info' | 'warn' | 'error', component: string, ms: number, caller: string, message: string, fields: Record<string, unknown> = {}) => {
    if (level !== 'error' && level !== 'warn' && rank[level] < rank[o.level]) return;
    const obj: Record<string, unknown> = { level, component, ...fields, time: zTime(ms, off), caller: `/src/${caller}`, message };
    lines.push(JSON.stringify(obj));
  };
  let pid = 4000 + rng.int(0, 1000);
  let prevPid: number | null = null;
  let prevEnd: SampleRestart['end'] | null = null;
  for (const r of o.restarts) {
    let t = r.startMs;
    if (o.level !== 'debug') emit('info', 'gateway', t, 'pkg/gateway/gateway.go:165', `Log level set to "${o.level}"`);
    if (prevPid !== null && prevEnd !== 'stopped') {
      emit('info', 'pid', t, 'pkg/pid/pidfile.go:60', `found pid file (PID: ${prevPid}, version: v0.2.9)`);
      emit('warn', 'pid', t, 'pkg/pid/pidfile.go:76', `not running (PID: ${prevPid}) so will remove the pid file: ${o.home}/.picoclaw.pid`);
    }
    if (r.end === 'failed') {
      emit('warn', 'pid', t, 'pkg/pid/pidfile.go:98', 'write pid file failed: gateway is already running');
      emit('error', 'gateway', t, 'pkg/gateway/gateway.go:140', 'Gateway startup failed', {
        config_path: `${o.home}/config.json`, error: `singleton check failed: gateway is already running (PID: ${pid - 1}, version: v0.2.9)`, home_path: o.home, allow_empty: false, debug: false,
      });
      prevEnd = 'failed';
      continue;
    }
    emit('debug', 'pid', t, 'pkg/pid/pidfile.go:112', `wrote pid file: ${o.home}/.picoclaw.pid success`);
    for (const name of ['read_file', 'write_file', 'list_dir', 'exec', 'edit_file', 'append_file']) emit('debug', 'tools', t, 'pkg/tools/registry.go:88', 'Registered core tool', { name });
    emit('info', 'agent', t, 'pkg/agent/registry.go:41', 'Registered agent', { agent_id: 'main', name: 'main', workspace: `${o.home}/workspace`, model: 'llama3' });
    emit('debug', 'tools', t, 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'short_grep' });
    emit('debug', 'tools', t + 200, 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'short_expand' });
    const gapStart = t + 200;
    const gapEnd = gapStart + r.gapMs;
    const ingests = Math.min(r.sessions, 50);
    for (let i = 0; i < ingests; i++) {
      const at = gapStart + Math.floor(((i + 1) * r.gapMs) / (ingests + 1));
      emit('info', 'seahorse', at, 'pkg/seahorse/short_engine.go:291', 'ingest', { conv_id: i + 1, messages: rng.int(1, 9), tokens: rng.int(100, 3000) });
    }
    if (r.sessions > 500) {
      emit('warn', 'seahorse', gapStart + Math.floor(r.gapMs / 2), 'pkg/agent/context_seahorse.go:189', 'bootstrap', { session: `agent:cron-${rng.hex(16)}-${rng.uuid()}`, error: 'bootstrap: get messages: database is locked' });
    }
    emit('debug', 'tools', gapEnd, 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'web_search' });
    t = gapEnd + 300;
    emit('info', 'agent', t, 'pkg/gateway/gateway.go:214', 'Agent initialized', { tools_count: 19, skills_total: 6, skills_available: 6 });
    emit('info', 'channels', t + 400, 'pkg/channels/manager.go:1282', 'Shared HTTP server listening', { addr: '127.0.0.1:18790' });
    emit('info', 'channels', t + 500, 'pkg/channels/manager.go:1307', 'Channel startup completed', { started: 1, failed: 0, total: 1 });
    if (o.events) {
      emit('info', 'events', t + 520, 'pkg/agent/runtime_event_logger.go:186', 'Runtime event: gateway.ready', {
        event_id: `evt-${rng.int(3, 12)}`, event_kind: 'gateway.ready', severity: 'info', source_component: 'gateway', duration_ms: t + 520 - r.startMs,
      });
    }
    if (r.end === 'stopped') {
      const s = r.stopMs ?? t + 3_600_000;
      emit('info', 'gateway', s, 'pkg/gateway/gateway.go:276', 'Shutting down...');
      emit('info', 'gateway', s + 300, 'pkg/gateway/gateway.go:542', '✓ Gateway stopped');
      emit('info', 'pid', s + 310, 'pkg/pid/pidfile.go:170', `remove pid file: ${o.home}/.picoclaw.pid`);
    }
    prevPid = pid;
    prevEnd = r.end;
    pid += rng.int(7, 400);
  }
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}
