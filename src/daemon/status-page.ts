import { createHash } from 'node:crypto';
import { downsample, FLAG_FREQ_CAPPED, FLAG_SOFT_TEMP_LIMIT, FLAG_THROTTLED, FLAG_UNDER_VOLTAGE } from './history.js';
import { pruneSection, restartsSection, sessionsSection } from './status-sections.js';
import { chart, esc } from './svg.js';
import { ago, bar, bytes, clock, dayClock, pad, when } from './status-format.js';
import { instantMs } from '../picoclaw/time.js';
import type { PageInput } from './status-input.js';

export type * from './status-input.js';

/**
 * The status page `GET /` answers with: one self-contained HTML document (inline CSS and
 * SVG, no script, no external asset) rendered from the daemon's cache after each refresh
 * and each prune pass. It refreshes itself with a meta refresh, reads on a 360 px phone,
 * and follows the reader's light or dark scheme. Every string that comes from the board,
 * PicoClaw's files or the logs goes through esc().
 */

/** Most points one chart draws. */
export const MAX_CHART_POINTS = 360;
export const REFRESH_PAGE_SECONDS = 30;

function yesNo(v: boolean | null | undefined): string {
  return v === null || v === undefined
    ? '<span class="muted">cannot tell</span>'
    : v
      ? '<b class="t-warn">yes</b>'
      : 'no';
}

function statusSection(p: PageInput): string {
  const h = p.health;
  if (!h) return `<section id="status"><h2>Status</h2><p class="status s-unknown">NO READING YET</p></section>`;
  const cls = h.status === 'OK' ? 'ok' : h.status === 'WARN' ? 'warn' : 'crit';
  const problems = h.problems.length
    ? `<ul class="problems">${h.problems.map((x) => `<li class="t-${x.level === 'critical' ? 'crit' : 'warn'}"><b>${x.level === 'critical' ? 'CRITICAL' : 'WARN'}` + `</b> ${esc(x.message)}</li>`).join('')}` +
      `</ul>`
    : '<p>No problem found.</p>';
  return (
    `<section id="status"><h2>Status</h2><p class="status s-${cls}">${h.status}` +
    `</p>${problems}<p class="small muted">Checked ${esc(when(instantMs(h.collected_at)))}` +
    `, every ${p.refreshSeconds} s.</p></section>`
  );
}

function flagText(f: number): string {
  if (f === 255) return 'no throttle reading';
  const on = [
    f & FLAG_UNDER_VOLTAGE ? 'under-voltage' : '',
    f & FLAG_FREQ_CAPPED ? 'frequency capped' : '',
    f & FLAG_THROTTLED ? 'throttled' : '',
    f & FLAG_SOFT_TEMP_LIMIT ? 'soft temperature limit' : '',
  ].filter(Boolean);
  return on.length ? on.join(', ') : 'not throttled';
}

function boardCharts(p: PageInput): string {
  const s = downsample(p.samples, MAX_CHART_POINTS);
  if (s.length === 0) return '<p class="muted">No readings kept yet.</p>';
  const xMin = s[0]!.at_ms;
  const xMax = s[s.length - 1]!.at_ms;
  const xFormat = xMax - xMin > 86400e3 ? dayClock : clock;
  // Throttled stretches are shaded: a sample stands for the time up to the next one.
  const bands: { x0: number; x1: number; label: string }[] = [];
  for (let i = 0; i < s.length; i++) {
    const f = s[i]!.flags;
    if (f === 255 || f === 0) continue;
    const x1 = s[i + 1]?.at_ms ?? s[i]!.at_ms + p.refreshSeconds * 1000;
    const last = bands[bands.length - 1];
    if (last && last.x1 >= s[i]!.at_ms && last.label === flagText(f)) last.x1 = x1;
    else bands.push({ x0: s[i]!.at_ms, x1, label: flagText(f) });
  }
  const span = `${Math.round((xMax - xMin) / 360e3) / 10} h`;
  // A board with no temperature sensor (a VM, some SoCs) has only NaN here: a chart of it would be an empty
  // 0-1 °C axis, so the page says there is no sensor instead.
  const anyTemp = s.some((x) => Number.isFinite(x.temp_celsius));
  const temp = chart({
    id: 'chart-temperature',
    title: `CPU temperature over the last ${span}`,
    xMin,
    xMax,
    xFormat,
    left: { unit: '°C', include: [] },
    series: [
      {
        name: 'temp',
        label: 'CPU °C',
        kind: 'line',
        axis: 'left',
        points: s.map((x) => ({ x: x.at_ms, y: x.temp_celsius })),
      },
    ],
    bands,
  });
  const freqMem = chart({
    id: 'chart-freq-mem',
    title: `CPU frequency and available memory over the last ${span}`,
    xMin,
    xMax,
    xFormat,
    left: { unit: 'MHz', include: [0] },
    right: { unit: 'MiB', include: [0] },
    series: [
      {
        name: 'freq',
        label: 'CPU MHz',
        kind: 'line',
        axis: 'left',
        points: s.map((x) => ({ x: x.at_ms, y: x.freq_mhz })),
      },
      {
        name: 'mem',
        label: 'available MiB',
        kind: 'line',
        axis: 'right',
        points: s.map((x) => ({ x: x.at_ms, y: x.mem_available_mib })),
      },
    ],
  });
  const thinned = s.length < p.historyLength ? `, averaged into ${s.length} points` : '';
  const tempFigure = anyTemp
    ? `<figure>${temp}<figcaption>CPU temperature, ${p.historyLength} readings over ` +
      `${span}${thinned}; shaded: throttled or capped.</figcaption></figure>`
    : `<figure id="chart-temperature-none"><figcaption>CPU temperature: no sensor (no thermal zone and no hwmon ` +
      `temperature on this board), so no chart.</figcaption></figure>`;
  return (
    `${tempFigure}<figure>` + `${freqMem}<figcaption>Highest core frequency and MemAvailable.</figcaption></figure>`
  );
}

function boardSection(p: PageInput): string {
  const h = p.health;
  const rows: [string, string][] = [];
  if (h) {
    const b = h.board;
    rows.push([
      'Model',
      b.available ? esc(b.model ?? b.cpu_model ?? 'unknown') : `<span class="muted">${esc(b.reason)}</span>`,
    ]);
    const t = h.temperature;
    rows.push([
      'CPU temperature',
      t.available && t.cpu_celsius !== null
        ? `${t.cpu_celsius.toFixed(1)} °C`
        : `<span class="muted">${esc(t.available ? 'no CPU sensor' : t.reason)}</span>`,
    ]);
    if (h.cpufreq.available) {
      const cur = Math.max(...h.cpufreq.cores.map((c) => c.cur_hertz ?? 0));
      const max = Math.max(...h.cpufreq.cores.map((c) => c.cpuinfo_max_hertz ?? 0));
      rows.push(['CPU frequency', `${Math.round(cur / 1e6)} MHz${max ? ` of ${Math.round(max / 1e6)} MHz` : ''}`]);
    }
    const th = h.throttle;
    if (th.available) {
      const uv = th.under_voltage;
      rows.push([
        'Throttled now',
        th.now ? esc(flagText(sampleFlags(th.now))) : '<span class="muted">cannot tell</span>',
      ]);
      rows.push([
        'Throttled since boot',
        th.since_boot ? esc(flagText(sampleFlags(th.since_boot))) : '<span class="muted">cannot tell</span>',
      ]);
      const latch = uv.latch.seen
        ? `seen${uv.latch.first_seen_at ? ` first ${esc(when(instantMs(uv.latch.first_seen_at)))}` : ''}` +
          `${uv.latch.this_boot === false ? ' (an earlier boot)' : ''}`
        : 'never seen';
      rows.push([
        'Under-voltage',
        uv.detectable
          ? `now ${yesNo(uv.now)} · since boot ${yesNo(uv.since_boot)} · latched: ${latch}`
          : `<span class="muted">${esc(uv.not_detectable_reason ?? 'not detectable on this board')}</span>`,
      ]);
    } else rows.push(['Throttle', `<span class="muted">${esc(th.reason)}</span>`]);
    const r = h.resources;
    if (r.available && r.memory_total_bytes !== null && r.memory_available_bytes !== null)
      rows.push(['Memory', `${bytes(r.memory_available_bytes)} available of ${bytes(r.memory_total_bytes)}`]);
    const fs = h.filesystem;
    rows.push([
      'Disk',
      fs.available
        ? `${bytes(fs.free_bytes)} free of ${bytes(fs.size_bytes)} on ${esc(fs.mount_point ?? fs.path)}` +
          `${fs.read_only ? ' <b class="t-crit">read-only</b>' : ''}`
        : `<span class="muted">${esc(fs.reason)}</span>`,
    ]);
    const st = h.storage;
    if (st.available) {
      const w = st.emmc;
      const hot = (level: boolean, text: string) => (level ? `<b class="t-warn">${esc(text)}</b>` : esc(text));
      const used = Math.max(
        w.reported ? (w.life_used_percent_a ?? 0) : 0,
        w.reported ? (w.life_used_percent_b ?? 0) : 0,
      );
      rows.push([
        'Card wear',
        w.reported
          ? hot(
              h.problems.some((x) => x.code.startsWith('emmc_')),
              `${st.device}: life used up to ${used} %${w.life_exceeded ? ' (past rated life)' : ''}, pre-EOL ` +
                `${w.pre_eol ?? 'unknown'}`,
            )
          : `<span class="muted">${esc(`${st.device}${st.card_type ? ` (${st.card_type})` : ''}: ${w.reason}`)}</span>`,
      ]);
      if (st.written_bytes !== null)
        rows.push([
          'Written',
          `${bytes(st.written_bytes)} since boot` +
            `${st.written_bytes_per_day !== null ? ` · ${bytes(st.written_bytes_per_day)} a day` : ''}`,
        ]);
    }
  }
  const table = rows.length
    ? `<table class="kv"><tbody>${rows.map(([k, v]) => `<tr><th scope="row">${k}</th><td>${v}</td></tr>`).join('')}` +
      `</tbody></table>`
    : '<p class="muted">No reading yet.</p>';
  const diskBar = h?.filesystem.available
    ? bar(
        'disk used',
        h.filesystem.size_bytes - h.filesystem.free_bytes,
        h.filesystem.size_bytes,
        `disk: ${bytes(h.filesystem.size_bytes - h.filesystem.free_bytes)} used of ${bytes(h.filesystem.size_bytes)}`,
      )
    : '';
  return `<section id="board"><h2>Board</h2>${table}${diskBar}${boardCharts(p)}</section>`;
}

function sampleFlags(f: {
  under_voltage: boolean | null;
  arm_freq_capped: boolean;
  throttled: boolean;
  soft_temp_limit: boolean;
}): number {
  return (
    (f.under_voltage ? FLAG_UNDER_VOLTAGE : 0) |
    (f.arm_freq_capped ? FLAG_FREQ_CAPPED : 0) |
    (f.throttled ? FLAG_THROTTLED : 0) |
    (f.soft_temp_limit ? FLAG_SOFT_TEMP_LIMIT : 0)
  );
}

function gatewaySection(p: PageInput): string {
  const pc = p.health?.picoclaw;
  if (!pc) return '<section id="gateway"><h2>Gateway</h2><p class="muted">No reading yet.</p></section>';
  if (!pc.available) return `<section id="gateway"><h2>Gateway</h2><p class="muted">${esc(pc.reason)}</p></section>`;
  const g = pc.gateway;
  const cls = g.state === 'ready' ? 'ok' : g.state === 'starting' ? 'warn' : 'crit';
  const since =
    p.gateway && p.gateway.state === g.state
      ? p.gateway.seen_change
        ? `since ${when(p.gateway.since_ms)} (${ago(p.gateway.since_ms, p.nowMs)})`
        : `since at least ${when(p.gateway.since_ms)}, when the guard started watching`
      : '';
  const started = g.pid_file_written_at
    ? `process started ${esc(when(instantMs(g.pid_file_written_at)))}${g.pid ? `, PID ${g.pid}` : ''}`
    : '';
  return (
    `<section id="gateway"><h2>Gateway</h2><p><span class="pill s-${cls}">${esc(g.state)}` +
    `</span> ${esc(since)}</p><p class="small">${esc(g.reason)}${started ? ` · ${started}` : ''}` +
    `${g.version ? ` · version ${esc(g.version)}` : ''}</p></section>`
  );
}

const CSS =
  `:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--mut:#5b6570;--line:#d0d7de;` +
  `--ok:#1a7f37;--warn:#9a6700;--crit:#cf222e;--a:#0969da;--b:#8250df;--c:#bc4c00}` +
  `
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mut:#9aa4ae;` +
  `--line:#30363d;--ok:#3fb950;--warn:#d29922;--crit:#f85149;--a:#58a6ff;` +
  `--b:#bc8cff;--c:#f0883e}}
*{box-sizing:border-box}body{margin:0 auto;max-width:760px;padding:8px ` +
  `12px 24px;background:var(--bg);color:var(--fg);font:15px/1.4 system-ui,` +
  `sans-serif;overflow-wrap:break-word}.any,.kv td,.problems,p{overflow-wrap:anywhere}` +
  `
h1{font-size:1.15em;margin:.3em 0}h2{font-size:1.05em;margin:1.2em 0 .4em;` +
  `border-bottom:1px solid var(--line)}
table{border-collapse:collapse;width:100%;font-size:.9em}th,td{text-align:left;` +
  `padding:2px 6px 2px 0;vertical-align:top;border-bottom:1px solid var(--line)}` +
  `td.n,th.n{text-align:right;white-space:nowrap}
.kv th{font-weight:600;width:38%}.small{font-size:.85em}.muted{color:var(--mut)}` +
  `
.status{font-size:1.6em;font-weight:700;margin:.2em 0}.s-ok{color:var(--ok)}` +
  `.s-warn{color:var(--warn)}.s-crit{color:var(--crit)}.s-unknown{color:var(--mut)}` +
  `
.t-warn{color:var(--warn)}.t-crit{color:var(--crit)}.problems{padding-left:1.2em;` +
  `margin:.3em 0}.pill{font-weight:700;text-transform:uppercase}
.bar{display:block;width:100%;height:12px;margin:.5em 0 0}.bar .bg{fill:var(--line)}` +
  `.bar .fill{fill:var(--ok)}.bar.warn .fill{fill:var(--warn)}.bar.crit .fill{fill:var(--crit)}` +
  `
figure{margin:.6em 0}figcaption{font-size:.8em;color:var(--mut)}svg.chart{display:block;` +
  `width:100%;max-width:640px;height:auto;font-size:10px}
.chart .grid{stroke:var(--line);stroke-width:.5}.chart .axis{stroke:var(--mut);` +
  `stroke-width:1}.chart text{fill:var(--fg)}.chart .unit{fill:var(--mut);` +
  `font-weight:600}
.chart polyline{fill:none;stroke-width:1.5}.chart .band{fill:var(--warn);` +
  `opacity:.18}.chart .mark{stroke:var(--crit);stroke-dasharray:3 2;stroke-width:1}` +
  `
.s-temp polyline,.s-temp rect,.s-gap circle,.s-gap rect{stroke:var(--a)}` +
  `.s-temp circle,.s-temp rect,.s-gap circle,.s-gap rect{fill:var(--a)}
.s-freq polyline{stroke:var(--b)}.s-freq rect,.s-freq circle{fill:var(--b)}` +
  `.s-mem polyline{stroke:var(--c)}.s-mem rect,.s-mem circle{fill:var(--c)}` +
  `
.s-sessions circle,.s-sessions rect{fill:var(--c)}.s-gap_lb circle,.s-gap_lb ` +
  `rect{fill:none;stroke:var(--a)}.s-predicted circle,.s-predicted rect{fill:var(--b)}` +
  `
footer{margin-top:2em;font-size:.8em;color:var(--mut)}`;

/** For the Content-Security-Policy: the page's one style sheet, and nothing else, may apply. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`;

/** Escaped and at most `max` characters as written (a tab's title has little room). */
function shortEsc(s: string, max: number): string {
  let out = esc(s);
  for (let n = s.length; out.length > max && n > 0; n--) out = esc(s.slice(0, n - 1)) + '…';
  return out;
}

export function renderStatusPage(p: PageInput): string {
  const status = p.health?.status ?? 'NO READING';
  const tz = -new Date(p.nowMs).getTimezoneOffset();
  const tzText = `UTC${tz >= 0 ? '+' : '-'}${pad(Math.floor(Math.abs(tz) / 60))}:${pad(Math.abs(tz) % 60)}`;
  const model = p.health?.board.available ? (p.health.board.model ?? p.health.board.cpu_model) : null;
  return (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta http-equiv="refresh" content="${REFRESH_PAGE_SECONDS}">` +
    `<title>${esc(status)} · picoclaw-guard${model ? ` · ${shortEsc(model, 40)}` : ''}</title>` +
    `<style>${CSS}</style></head><body>` +
    `<header><h1>picoclaw-guard${model ? ` on ${esc(model)}` : ''}</h1></header><main>` +
    statusSection(p) +
    boardSection(p) +
    gatewaySection(p) +
    sessionsSection(p) +
    pruneSection(p) +
    restartsSection(p) +
    (`</main><footer>picoclaw-guard ${esc(p.version)} · page rendered ${esc(when(p.nowMs))}` +
      ` (${tzText}) · refreshes every ${REFRESH_PAGE_SECONDS} s · guard up since ` +
      `${esc(when(p.startedAtMs))} · history ${p.historyLength} of ${p.historyCapacity}` +
      ` readings · JSON: <a href="/health">/health</a> <a href="/startup">/startup</a>` +
      ` <a href="/prune">/prune</a> <a href="/metrics">/metrics</a></footer>`) +
    '</body></html>\n'
  );
}
