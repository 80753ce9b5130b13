import { goNano } from './log-time.js';
import { Rng } from './random.js';

/**
 * Sample gateway.log content, faithful to what PicoClaw writes (docs/picoclaw.md#gatewaylog,
 * docs/picoclaw.md#the-startup-bootstrap):
 *
 * - the file format: zerolog JSON lines, keys in the order level, component, the event's
 *   own fields, time (RFC3339, whole seconds, local offset), caller, message (docs/picoclaw.md#line-format);
 * - the console format that goes to stdout / journald:
 *   `15:04:05 INF <component> <caller relative to cwd> > <message> key=value …`
 *   (pkg/logger/logger.go: PartsOrder time, level, component, caller, message; fields
 *   sorted with `error` first; string values with a space are quoted), optionally behind
 *   journald's `-o short-iso` prefix, plus the fmt.Println banners that only stdout has;
 * - the startup sequence in order (docs/picoclaw.md#startup-messages), the seahorse
 *   bootstrap lines, the restart markers (docs/picoclaw.md#recognising-a-restart), clean stops, crashes (no closing
 *   line, the next start
 *   finds the stale PID file), failed starts (a config error, or a second instance
 *   refused by the singleton check while the first keeps running), and config reloads,
 *   which repeat `Registered agent` but are not restarts;
 * - level filtering: warn shows almost nothing, info the startup and bootstrap lines,
 *   debug adds `wrote pid file` and the `Registered core tool` lines (and, with `-d`,
 *   drops `Log level set to`); `events` adds `Runtime event: gateway.start/ready` with
 *   `duration_ms`.
 *
 * Everything is deterministic from the seed. Values are illustrative, formats are not. This file
 * makes the events; gatewaylog.ts renders them as file, console or journald lines.
 */
export interface SampleRestart {
  /** When the process started (epoch ms): its first line. */
  startMs: number;
  /** Sessions bootstrapped at this start (drives the number of ingest lines). */
  sessions: number;
  /** Length of the silent bootstrap (ms): last short_expand registration to the next core tool. */
  gapMs: number;
  /** How it ended: a clean stop, a crash (no closing line), a failed start, or still running. */
  end: 'stopped' | 'crashed' | 'failed' | 'running';
  /** When it stopped (for 'stopped'; default one hour after ready). */
  stopMs?: number;
  /** Config reloads while it ran (hot reload or POST /reload): not restarts. */
  reloads?: number;
  /** For 'crashed': killed during the bootstrap (no `Agent initialized`) or later (default). */
  crashPhase?: 'bootstrap' | 'running';
  /**
   * For 'failed': `config` (config.json rejected before the level is even set) or
   * `singleton` (another instance still runs; it keeps running). Default: singleton when
   * an earlier process is alive at startMs, else config.
   */
  failure?: 'config' | 'singleton';
  /** Runtime messages handled while running (Routed message + ingest each); default 3. */
  traffic?: number;
  /** `bootstrap` WARN lines with `database is locked`; default 1 when sessions > 500. */
  dbLocked?: number;
}

export type SampleLogLevel = 'warn' | 'info' | 'debug';

export interface SampleLogOptions {
  restarts: SampleRestart[];
  level: SampleLogLevel;
  /** events.logging.include has gateway.*: emit `Runtime event: gateway.start/ready` with duration_ms. */
  events: boolean;
  seed: number;
  home: string;
  /** Offset of the board's local time from UTC, in minutes (zerolog writes local time). */
  utcOffsetMin?: number;
  /** Configured agents (`Registered agent` each); default: none, i.e. `Created implicit main agent`. */
  agents?: string[];
  /** context_manager seahorse (short_grep/short_expand and the bootstrap); default true. */
  seahorse?: boolean;
  /** At debug level: started with `-d` (no `Log level set to` line); default true. */
  debugFlag?: boolean;
}

export type Level = 'debug' | 'info' | 'warn' | 'error';

/** One log event before rendering: the fields zerolog would write, in the file's order. */
export interface SampleLogEvent {
  ms: number;
  level: Level;
  component: string;
  /** Repository path and line, e.g. `pkg/gateway/gateway.go:165` (the build prefix is added when rendering). */
  caller: string;
  message: string;
  fields: Record<string, unknown>;
  /** The gateway process that wrote it (journald's `picoclaw[pid]`). */
  pid: number;
  /** A plain fmt.Println line that only stdout (console / journald) has, not the file. */
  stdoutOnly?: boolean;
}

const VERSION = 'v0.2.9';
const CORE_TOOLS = ['read_file', 'write_file', 'list_dir', 'exec', 'edit_file', 'append_file'];
const SHARED_TOOLS = ['web_search', 'web_fetch', 'message', 'reaction', 'send_file', 'spawn', 'subagent'];

/** The structured events of a sample log, every level, sorted by time (stable). */
export function sampleGatewayEvents(o: SampleLogOptions): SampleLogEvent[] {
  const rng = new Rng(o.seed);
  const events: SampleLogEvent[] = [];
  const pidPath = `${o.home}/.picoclaw.pid`;
  const seahorse = o.seahorse ?? true;
  const agents = o.agents && o.agents.length > 0 ? o.agents : null;
  const agentCount = agents ? agents.length : 1;
  let pid = 4000 + rng.int(0, 1000);
  /** The PID a crashed process left in the PID file (the next start removes it). */
  let stalePid: number | null = null;
  /** Processes still running, by pid, with the time they stop (for the singleton check). */
  const alive: { pid: number; untilMs: number }[] = [];

  const sorted = o.restarts.map((r, i) => ({ r, i })).sort((a, b) => a.r.startMs - b.r.startMs || a.i - b.i);
  // When each process's life ends: its stop, or (crash) just before the next real start.
  const nextStartAfter = (k: number): number => {
    for (let j = k + 1; j < sorted.length; j++) if (sorted[j]!.r.end !== 'failed') return sorted[j]!.r.startMs;
    return Infinity;
  };

  sorted.forEach(({ r }, k) => {
    const p = pid;
    pid += rng.int(7, 400);
    const out = (
      ms: number,
      level: Level,
      component: string,
      caller: string,
      message: string,
      fields: Record<string, unknown> = {},
    ) => events.push({ ms, level, component, caller, message, fields, pid: p });
    const banner = (ms: number, message: string) =>
      events.push({ ms, level: 'info', component: '', caller: '', message, fields: {}, pid: p, stdoutOnly: true });
    let t = r.startMs;
    const runStart = t - 40; // gateway.Run starts a little before its first line (config load)
    for (let a = alive.length - 1; a >= 0; a--) if (alive[a]!.untilMs <= t) alive.splice(a, 1);

    if (r.end === 'failed') {
      const failure = r.failure ?? (alive.length > 0 ? 'singleton' : 'config');
      const base = {
        config_path: `${o.home}/config.json`,
        home_path: o.home,
        allow_empty: false,
        debug: o.level === 'debug' && (o.debugFlag ?? true),
      };
      if (failure === 'config') {
        // config.json rejects unknown keys (docs/picoclaw.md#keys-the-guard-reads-from-configjson), before the log
        // level is even applied.
        out(t, 'error', 'gateway', 'pkg/gateway/gateway.go:140', 'Gateway startup failed', {
          ...base,
          error: 'error loading config: config.json contains unknown field(s): session.prune',
        });
        return;
      }
      const other = alive[alive.length - 1]?.pid ?? p - 1;
      if (!(o.level === 'debug' && (o.debugFlag ?? true)))
        out(t, 'info', 'gateway', 'pkg/gateway/gateway.go:165', `Log level set to "${o.level}"`);
      out(t, 'info', 'pid', 'pkg/pid/pidfile.go:60', `found pid file (PID: ${other}, version: ${VERSION})`);
      out(
        t,
        'warn',
        'pid',
        'pkg/pid/pidfile.go:98',
        `write pid file failed: gateway is already running (PID: ${other}, version: ${VERSION})`,
      );
      out(t, 'error', 'gateway', 'pkg/gateway/gateway.go:140', 'Gateway startup failed', {
        ...base,
        error: `singleton check failed: gateway is already running (PID: ${other}, version: ${VERSION})`,
      });
      return;
    }

    // Startup messages steps 1-3 (docs/picoclaw.md#startup-messages): the restart markers.
    if (!(o.level === 'debug' && (o.debugFlag ?? true)))
      out(t, 'info', 'gateway', 'pkg/gateway/gateway.go:165', `Log level set to "${o.level}"`);
    if (stalePid !== null) {
      out(t, 'info', 'pid', 'pkg/pid/pidfile.go:60', `found pid file (PID: ${stalePid}, version: ${VERSION})`);
      out(
        t,
        'warn',
        'pid',
        'pkg/pid/pidfile.go:76',
        `not running (PID: ${stalePid}) so will remove the pid file: ${pidPath}`,
      );
    }
    out(t, 'debug', 'pid', 'pkg/pid/pidfile.go:112', `wrote pid file: ${pidPath} success`);
    stalePid = p; // until a clean stop removes it
    // Steps 4-6: per-agent core tools, then the agents, then seahorse's tools.
    for (let a = 0; a < agentCount; a++)
      for (const name of CORE_TOOLS)
        out(t, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', { name });
    if (agents) {
      for (const id of agents)
        out(t, 'info', 'agent', 'pkg/agent/registry.go:58', 'Registered agent', {
          agent_id: id,
          name: id,
          workspace: id === 'main' ? `${o.home}/workspace` : `${o.home}/workspace-${id}`,
          model: 'llama3',
        });
    } else {
      out(t, 'info', 'agent', 'pkg/agent/registry.go:41', 'Created implicit main agent (no agents.list configured)');
    }
    const gapStart = t + 200;
    const gapEnd = gapStart + r.gapMs;
    const crashInBootstrap = r.end === 'crashed' && r.crashPhase === 'bootstrap';
    if (seahorse) {
      for (let a = 0; a < agentCount; a++)
        out(t + 150, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'short_grep' });
      for (let a = 0; a < agentCount; a++)
        out(gapStart, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'short_expand' });
      // The bootstrap loop (docs/picoclaw.md#the-startup-bootstrap). No start/end line; ingest per Ingest call,
      // bootstrap: … INFO, WARN bootstrap on failure.
      const ingests = Math.min(r.sessions, 50);
      const locked = r.dbLocked ?? (r.sessions > 500 ? 1 : 0);
      const inGap: { at: number; emit: () => void }[] = [];
      for (let i = 0; i < ingests; i++) {
        const at = gapStart + Math.floor(((i + 1) * r.gapMs) / (ingests + 2));
        const conv = i + 1;
        if (i % 7 === 3) {
          inGap.push({
            at,
            emit: () =>
              out(at, 'info', 'seahorse', 'pkg/seahorse/short_engine.go:412', 'bootstrap: history edit detected', {
                conv_id: conv,
                db_count: 12,
                anchor: 9,
                anchor_id: 301 + i,
                msg_count: 14,
                delta_start: 10,
              }),
          });
        }
        inGap.push({
          at,
          emit: () =>
            out(at, 'info', 'seahorse', 'pkg/seahorse/short_engine.go:291', 'ingest', {
              conv_id: conv,
              messages: rng.int(1, 9),
              tokens: rng.int(100, 3000),
            }),
        });
      }
      for (let i = 0; i < locked; i++) {
        const at = gapStart + Math.floor(((i + 1) * r.gapMs) / (locked + 1));
        inGap.push({
          at,
          emit: () =>
            out(at, 'warn', 'seahorse', 'pkg/agent/context_seahorse.go:189', 'bootstrap', {
              session: `agent:cron-${rng.hex(16)}-${rng.uuid()}`,
              error: 'bootstrap: get messages: database is locked',
            }),
        });
      }
      inGap.sort((a, b) => a.at - b.at);
      // Killed during the bootstrap (a SIGTERM there kills it without the shutdown sequence): stop mid-gap.
      const cut = crashInBootstrap ? gapStart + Math.floor(r.gapMs * 0.6) : Infinity;
      for (const g of inGap) if (g.at <= cut) g.emit();
    } else {
      out(
        t + 150,
        'warn',
        'agent',
        'pkg/agent/turn_coord.go:77',
        'Failed to create context manager, falling back to legacy',
        { name: 'seahorse', error: 'seahorse is not supported on this platform' },
      );
    }
    if (crashInBootstrap) {
      stalePid = p;
      return;
    }
    // Steps 6-7: shared tools (web_search first when a search provider resolves), then Agent initialized.
    for (let a = 0; a < agentCount; a++)
      for (const name of SHARED_TOOLS)
        out(seahorse ? gapEnd : t + 150, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', {
          name,
        });
    t = (seahorse ? gapEnd : t + 150) + 300;
    const agentLoopMs = t - 20;
    if (o.events) {
      out(agentLoopMs, 'info', 'events', 'pkg/agent/runtime_event_logger.go:186', 'Runtime event: gateway.start', {
        event_id: `evt-${rng.int(1, 3)}`,
        event_kind: 'gateway.start',
        severity: 'info',
        event_time: goNano(agentLoopMs, rng.int(0, 999_999), o.utcOffsetMin ?? 0),
        source_component: 'gateway',
        duration_ms: agentLoopMs - runStart,
      });
    }
    banner(t, '\n📦 Agent Status:');
    banner(t, `  • Tools: ${19 * agentCount} loaded`);
    banner(t, '  • Skills: 6/6 available');
    out(t, 'info', 'agent', 'pkg/gateway/gateway.go:214', 'Agent initialized', {
      tools_count: 19 * agentCount,
      skills_total: 6,
      skills_available: 6,
    });
    // Step 8: the services and channels.
    out(t + 10, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', { name: 'cron' });
    banner(t + 20, '✓ Cron service started');
    out(t + 30, 'info', 'heartbeat', 'pkg/heartbeat/service.go:100', 'Heartbeat service started', {
      interval_minutes: 30,
    });
    banner(t + 30, '✓ Heartbeat service started');
    out(t + 40, 'info', 'media', 'pkg/media/store.go:322', 'cleanup enabled', { interval: '5m0s', max_age: '30m0s' });
    out(t + 50, 'info', 'channels', 'pkg/channels/manager.go:1070', 'Initializing channel manager');
    out(t + 60, 'info', 'channels', 'pkg/channels/manager.go:988', 'Channel enabled successfully', {
      channel: 'telegram',
      type: 'telegram',
    });
    out(t + 70, 'info', 'channels', 'pkg/channels/manager.go:1087', 'Channel initialization completed', {
      enabled_channels: 1,
    });
    banner(t + 70, '✓ Channels enabled: [telegram]');
    out(t + 80, 'info', 'channels', 'pkg/channels/manager.go:1192', 'Starting all channels');
    out(t + 90, 'info', 'channels', 'pkg/channels/manager.go:1200', 'Starting channel', { channel: 'telegram' });
    out(t + 400, 'info', 'channels', 'pkg/channels/manager.go:1282', 'Shared HTTP server listening', {
      addr: '127.0.0.1:18790',
    });
    out(t + 500, 'info', 'channels', 'pkg/channels/manager.go:1307', 'Channel startup completed', {
      started: 1,
      failed: 0,
      total: 1,
    });
    out(t + 510, 'info', 'voice', 'pkg/gateway/gateway.go:96', 'Channel voice capabilities', {
      channel: 'telegram',
      asr: false,
      tts: false,
    });
    banner(t + 515, '✓ Health endpoints available at http://127.0.0.1:18790/health, /ready and /reload (POST)');
    const readyMs = t + 520;
    // Step 9: SetReady has no line of its own; the runtime event marks it.
    if (o.events) {
      out(readyMs, 'info', 'events', 'pkg/agent/runtime_event_logger.go:186', 'Runtime event: gateway.ready', {
        event_id: `evt-${rng.int(3, 12)}`,
        event_kind: 'gateway.ready',
        severity: 'info',
        event_time: goNano(readyMs, rng.int(0, 999_999), o.utcOffsetMin ?? 0),
        source_component: 'gateway',
        duration_ms: readyMs - runStart,
      });
    }
    banner(readyMs, '✓ Gateway started on 127.0.0.1:18790');
    banner(readyMs, 'Press Ctrl+C to stop');

    const lifeEnd =
      r.end === 'stopped'
        ? (r.stopMs ?? readyMs + 3_600_000)
        : r.end === 'crashed'
          ? Math.min(nextStartAfter(k) - 5_000, readyMs + 30 * 86_400_000)
          : readyMs + 86_400_000;
    const span = Math.max(10_000, lifeEnd - readyMs - 10_000);
    // Runtime traffic: `ingest` lines outside the bootstrap gap must not be counted in it.
    const traffic = r.traffic ?? 3;
    for (let i = 0; i < traffic; i++) {
      const at = readyMs + 5_000 + Math.floor(((i + 1) * span) / (traffic + 2));
      const peer = rng.int(100000, 999999);
      out(at, 'info', 'agent', 'pkg/agent/agent.go:612', 'Routed message', {
        agent_id: 'main',
        scope_key: `chat=direct:${peer}`,
        session_key: `sk_v1_${rng.hex(20)}`,
        matched_by: 'default',
        route_agent: 'main',
        route_channel: 'telegram',
        route_main_session: false,
      });
      out(at + 800, 'info', 'seahorse', 'pkg/seahorse/short_engine.go:291', 'ingest', {
        conv_id: rng.int(1, 400),
        messages: 2,
        tokens: rng.int(80, 900),
      });
    }
    // Reloads: agents are re-created, so `Registered agent` repeats; no `Log level set to`, no bootstrap.
    const reloads = r.reloads ?? 0;
    for (let i = 0; i < reloads; i++) {
      const at = readyMs + 2_000 + Math.floor(((i + 1) * span) / (reloads + 1)) + 1_500;
      const manual = i % 2 === 1;
      if (manual)
        out(at, 'info', 'gateway', 'pkg/gateway/gateway.go:262', 'Manual reload triggered via /reload endpoint');
      else out(at, 'info', 'gateway', 'pkg/gateway/reload.go:88', '✓ Config file validated and loaded');
      out(at + 5, 'info', 'gateway', 'pkg/gateway/gateway.go:330', '🔄 Config file changed, reloading...');
      out(at + 6, 'info', 'gateway', 'pkg/gateway/gateway.go:334', " New model is 'llama3', recreating provider...");
      out(at + 7, 'info', 'gateway', 'pkg/gateway/gateway.go:336', '  Stopping all services...');
      for (let a = 0; a < agentCount; a++)
        for (const name of CORE_TOOLS)
          out(at + 300, 'debug', 'tools', 'pkg/tools/registry.go:88', 'Registered core tool', { name });
      if (agents)
        for (const id of agents)
          out(at + 300, 'info', 'agent', 'pkg/agent/registry.go:58', 'Registered agent', {
            agent_id: id,
            name: id,
            workspace: `${o.home}/workspace`,
            model: 'llama3',
          });
      else
        out(
          at + 300,
          'info',
          'agent',
          'pkg/agent/registry.go:41',
          'Created implicit main agent (no agents.list configured)',
        );
      out(at + 310, 'info', 'gateway', 'pkg/gateway/gateway.go:370', `Log level changing from current to "${o.level}"`);
      out(
        at + 320,
        'info',
        'gateway',
        'pkg/gateway/gateway.go:362',
        '  Restarting all services with new configuration...',
      );
      out(at + 330, 'info', 'heartbeat', 'pkg/heartbeat/service.go:100', 'Heartbeat service started', {
        interval_minutes: 30,
      });
      out(
        at + 340,
        'info',
        'gateway',
        'pkg/gateway/gateway.go:368',
        '  ✓ Provider, configuration, and services reloaded successfully (thread-safe)',
      );
      if (manual)
        out(at + 341, 'info', 'gateway', 'pkg/gateway/gateway.go:275', 'Manual reload completed successfully');
    }
    if (r.end === 'stopped') {
      const s = lifeEnd;
      out(s, 'info', 'gateway', 'pkg/gateway/gateway.go:276', 'Shutting down...');
      out(s + 5, 'info', 'channels', 'pkg/channels/manager.go:1319', 'Stopping all channels');
      out(s + 6, 'info', 'channels', 'pkg/channels/manager.go:1330', 'Stopping channel', { channel: 'telegram' });
      out(s + 200, 'info', 'channels', 'pkg/channels/manager.go:1384', 'All channels stopped');
      out(s + 210, 'info', 'heartbeat', 'pkg/heartbeat/service.go:116', 'Stopping heartbeat service');
      out(s + 300, 'info', 'gateway', 'pkg/gateway/gateway.go:542', '✓ Gateway stopped');
      out(s + 310, 'info', 'pid', 'pkg/pid/pidfile.go:170', `remove pid file: ${pidPath}`);
      stalePid = null;
    } else {
      stalePid = p;
    }
    alive.push({ pid: p, untilMs: lifeEnd });
  });

  return events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.ms - b.e.ms || a.i - b.i)
    .map((x) => x.e);
}
