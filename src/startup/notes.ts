import type { ReadState } from './source.js';
import type { Advice, LineCounts, StartupReport } from './types.js';

/** What was odd about the input, in words, and the settings that would make the report possible. */

/** The exact settings that make the report possible (docs/picoclaw.md#the-startup-bootstrap). */
export const SETTINGS = {
  logLevelConfig: '"gateway": { "log_level": "info" }   (in config.json)',
  logLevelEnv: "PICOCLAW_LOG_LEVEL=info   (in the gateway's environment, e.g. Environment= in its systemd unit)",
  events: '"events": { "logging": { "include": ["agent.*", "gateway.*"] } }   (in config.json)',
};

export interface InputFacts {
  rs: ReadState;
  lines: LineCounts;
  everStarted: boolean;
  stopsWithoutStart: number;
  dropped: number;
  kept: number;
  found: number;
}

/** Notes on the input: rotation under the reader, skipped lines, a log that begins mid-run. */
export function inputNotes(f: InputFacts): string[] {
  const { rs, lines } = f;
  const notes: string[] = [];
  if (rs.truncated) {
    notes.push(
      `gateway.log shrank to ${rs.truncated.size_after} bytes while it was read (copy-and-truncate rotation at about ` +
        `byte ${rs.truncated.at_byte}): this report covers the part read before; the older lines are in the rotated ` +
        'copy (e.g. gateway.log.1)',
    );
  }
  if (rs.replaced) {
    notes.push(
      'the start of gateway.log changed while it was read (rotated and written again): figures near the end may mix ' +
        'old and new lines',
    );
  }
  if (lines.binary > 0) notes.push(`${lines.binary} line(s) of binary data (NUL or control bytes) were skipped`);
  if (lines.torn > 0) {
    notes.push(
      `${lines.torn} JSON line(s) were cut short (no closing brace): a crash mid-write or a truncation; ` +
        'they were skipped',
    );
  }
  if (lines.unparsable > 0) {
    notes.push(`${lines.unparsable} line(s) looked like markers but did not parse; they were skipped`);
  }
  if (lines.overlong > 0) notes.push(`${lines.overlong} line(s) over 1 MiB were skipped`);
  if (lines.text > 0) {
    notes.push(
      `${lines.text} line(s) are not log lines (stdout banners, continuation lines or foreign text); they were ignored`,
    );
  }
  if (lines.duplicates_skipped > 0) {
    notes.push(
      'console lines repeat the JSON lines beside them (stdout redirected into gateway.log): each event was counted ' +
        `once (${lines.duplicates_skipped} repeated marker lines dropped)`,
    );
  }
  if (lines.json > 0 && lines.console + lines.journald > 0 && lines.duplicates_skipped === 0) {
    notes.push('the log mixes JSON and console lines; both were read');
  }
  if (lines.before_first_restart > 0 && f.everStarted) {
    notes.push(`${lines.before_first_restart} line(s) precede the first restart marker (the log begins mid-run)`);
  }
  if (f.stopsWithoutStart > 0) notes.push(`${f.stopsWithoutStart} clean stop(s) whose start is not in this log`);
  if (f.dropped > 0) notes.push(`only the latest ${f.kept} of ${f.found} restarts are listed`);
  return notes;
}

/** What to change so the next restarts can be measured (or are no longer hidden). */
export function adviceFor(r: StartupReport, configLevel: string | null): Advice[] {
  const out: Advice[] = [];
  const quiet = configLevel !== null && ['warn', 'warning', 'error', 'fatal'].includes(configLevel);
  if (r.source.state !== 'ok' && r.source.state !== 'empty') return out;
  if (r.content_level === 'warn' || r.content_level === 'none') {
    out.push({
      kind: 'enable_info',
      message:
        (r.content_level === 'none' ? 'gateway.log has no log lines.' : 'gateway.log holds only warnings and errors.') +
        ' PicoClaw logs at "warn" by default, and every startup, bootstrap, readiness and shutdown message is ' +
        "INFO or DEBUG: only crashes and failed starts show. Set the gateway's log level to info and restart it; " +
        'the next restarts will be measured.',
      settings: [SETTINGS.logLevelConfig, SETTINGS.logLevelEnv, SETTINGS.events],
    });
    return out;
  }
  if (!r.restarts.some((e) => e.spans.gateway_ready_event) && r.restarts.some((e) => e.end !== 'failed')) {
    out.push({
      kind: 'enable_events',
      message:
        'no `Runtime event: gateway.ready` lines: figures come from whole-second timestamps (±1 s). Log the gateway ' +
        'events for millisecond figures.',
      settings: [SETTINGS.events],
    });
  }
  if (quiet) {
    out.push({
      kind: 'config_level_hides_restarts',
      message: `the gateway is now configured to log at "${configLevel}": restarts from now on will not be logged`,
      settings: [SETTINGS.logLevelConfig, SETTINGS.logLevelEnv],
    });
  }
  return out;
}
