import type { PageInput } from './status-input.js';
import { ago, bar, bytes, dayClock, seconds, when } from './status-format.js';
import { chart, esc, type Point } from './svg.js';
import { instantMs } from '../picoclaw/time.js';

/** The status page's PicoClaw sections: sessions, prune, restarts. */

const muted = (s: string) => `<p class="muted">${esc(s)}</p>`;

export function sessionsSection(p: PageInput): string {
  const pc = p.health?.picoclaw;
  const head = '<section id="sessions"><h2>Sessions</h2>';
  if (!pc) return head + muted('Not counted yet.') + '</section>';
  if (!pc.available) return head + muted(pc.reason) + '</section>';
  const undatedOf = (agents: string[]) =>
    p.undated ? String(agents.reduce((n, a) => n + (p.undated!.per_agent[a] ?? 0), 0)) : '—';
  const rows = pc.sessions.stores.map(
    (s) =>
      `<tr><td class="any">${esc(s.agents.join(', '))}${s.error ? ` <span class="t-warn">${esc(s.error)}</span>` : ''}` +
      `</td><td class="n">${s.sessions}</td><td class="n">${s.cron_sessions}</td><td class="n">` +
      `${undatedOf(s.agents)}</td><td class="n">${bytes(s.jsonl_bytes)}</td></tr>`,
  );
  const cron = pc.sessions.stores.reduce((n, s) => n + s.cron_sessions, 0);
  rows.push(
    `<tr><th scope="row">all</th><td class="n">${pc.sessions.count}</td><td class="n">` +
      `${cron}</td><td class="n">${p.undated ? Object.values(p.undated.per_agent).reduce((a, b) => a + b, 0) : '—'}` +
      `</td><td class="n">${bytes(pc.sessions.jsonl_bytes)}</td></tr>`,
  );
  const table =
    `<table><thead><tr><th scope="col">Agent</th><th scope="col" class="n">` +
    `sessions</th><th scope="col" class="n">cron runs</th><th scope="col" class="n">` +
    `undated</th><th scope="col" class="n">JSONL</th></tr></thead><tbody>${rows.join('')}` +
    `</tbody></table>`;
  const note = p.undated
    ? `Of the sessions, cron runs are the ones cron jobs started (one each run). ` +
      `Undated: sessions with no usable time, which age rules never delete; as ` +
      `the prune pass of ${when(p.undated.at_ms)} found them.`
    : 'Of the sessions, cron runs are the ones cron jobs started (one each run). ' +
      'Undated: known after the first prune pass this guard runs (counting them ' +
      'reads every session).';
  const sh = pc.seahorse;
  let db: string;
  if (!sh.present) db = muted(`No seahorse.db at ${sh.path}.`);
  else if (p.maxDbBytes)
    db = bar(
      'seahorse.db size against max_db_size_mb',
      sh.total_bytes,
      p.maxDbBytes,
      `seahorse.db ${bytes(sh.total_bytes)} (WAL ${bytes(sh.wal_bytes)}) of max_db_size_mb ` +
        `${bytes(p.maxDbBytes)} (${Math.round((sh.total_bytes / p.maxDbBytes) * 100)}` +
        `%)`,
    );
  else
    db =
      `<p class="small">seahorse.db ${bytes(sh.total_bytes)} (WAL ${bytes(sh.wal_bytes)}` +
      `); max_db_size_mb is 0: no size limit.</p>`;
  return `${head}${table}<p class="small muted">${esc(note)}</p>${db}</section>`;
}

const SOURCE_TEXT: Record<string, string> = {
  flag: 'flag',
  env: 'environment',
  'guard-config': 'guard config',
  'picoclaw-config': 'PicoClaw config.json',
  default: 'default',
};

function value(v: unknown): string {
  if (v === null) return 'none';
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  if (typeof v === 'string' || typeof v === 'number') return String(v);
  // Policy values are numbers, booleans, strings or null; anything else is shown as JSON, never "[object Object]".
  return JSON.stringify(v) ?? 'undefined';
}

export function pruneSection(p: PageInput): string {
  const pol = Object.entries(p.policy)
    .map(
      ([k, v]) =>
        `<tr><th scope="row">${esc(k)}</th><td class="n">${esc(value(v.value))}` +
        `</td><td class="small any">${esc(SOURCE_TEXT[v.source] ?? v.source)}${v.from ? ` <span class="muted">${esc(v.from)}</span>` : ''}` +
        `</td></tr>`,
    )
    .join('');
  const sched = p.schedule;
  let next: string;
  if (!sched.enabled) next = 'Scheduled passes are off.';
  else if (sched.running) next = 'A pass is running now.';
  else if (sched.next_run_at_ms !== null && p.cron)
    next =
      `Next pass ${when(sched.next_run_at_ms)} (${ago(sched.next_run_at_ms, p.nowMs)}), on the schedule ${p.cron.text}` +
      (p.cron.next_runs_ms.length > 1
        ? `; then ${p.cron.next_runs_ms
            .slice(1)
            .map((ms) => when(ms))
            .join(', ')}`
        : '') +
      '.';
  else if (sched.next_run_at_ms !== null)
    next =
      `Next pass ${when(sched.next_run_at_ms)} (${ago(sched.next_run_at_ms, p.nowMs)}` +
      `), every ${p.intervalSeconds >= 60 ? `${Math.round(p.intervalSeconds / 60)} min` : `${p.intervalSeconds} s`}` +
      `${p.intervalSource === 'env' ? ' (PICOGUARD_INTERVAL_SECONDS)' : ''}.`;
  else next = 'No pass scheduled.';
  const passes = p.passes.slice(0, 8);
  const rows = passes
    .map(
      (x) =>
        `<tr><td>${esc(when(x.at_ms))}</td><td class="${x.outcome === 'ok' ? '' : x.outcome === 'failed' ? 't-crit' : 't-warn'}` +
        `">${esc(x.outcome)}</td><td class="n">${x.deleted_sessions}</td><td class="n">` +
        `${bytes(x.freed_bytes)}</td></tr>`,
    )
    .join('');
  const table = passes.length
    ? `<table id="prune-passes"><thead><tr><th scope="col">Finished</th><th scope="col">` +
      `Outcome</th><th scope="col" class="n">deleted</th><th scope="col" class="n">` +
      `freed</th></tr></thead><tbody>${rows}</tbody></table>`
    : muted('No pass recorded yet.');
  return (
    `<section id="prune"><h2>Prune</h2><p>${esc(next)}</p><h3 class="small">Last passes</h3>` +
    `${table}<h3 class="small">Policy in force</h3><table id="policy"><tbody>` +
    `${pol}</tbody></table></section>`
  );
}

export function restartsSection(p: PageInput): string {
  const head = '<section id="restarts"><h2>Restarts</h2>';
  const st = p.startup;
  if (!st)
    return (
      head +
      muted(p.startupMissing ? `${p.startupMissing.path}: ${p.startupMissing.error}` : 'gateway.log not read yet.') +
      '</section>'
    );
  const r = st.report;
  const dated = r.restarts
    .filter((x) => x.started_at !== null)
    .map((x) => ({ x, ms: instantMs(x.started_at!) }))
    .filter((d) => Number.isFinite(d.ms));
  const gap: Point[] = [];
  const lower: Point[] = [];
  const sessions: Point[] = [];
  const sessionText = new Map<number, string>();
  for (const { x, ms } of dated) {
    if (x.bootstrap_gap) (x.bootstrap_gap.lower_bound ? lower : gap).push({ x: ms, y: x.bootstrap_gap.seconds });
    const seen = p.sessionsAt(ms);
    const n = seen !== null ? { count: seen, approx: false } : sessionsFromPasses(p, ms);
    if (n !== null) {
      sessions.push({ x: ms, y: n.count });
      sessionText.set(x.n, n.approx ? `~${n.count}` : String(n.count));
    }
  }
  // The passes that deleted something, from the page's own list: the startup report marks only those before its last
  // read of the log.
  const marks = p.passes
    .filter((x) => x.deleted_sessions > 0 && (x.outcome === 'ok' || x.outcome === 'partial'))
    .map((x) => ({
      x: x.at_ms,
      label: `prune ${when(x.at_ms)}: ${x.deleted_sessions} sessions deleted, ${bytes(x.freed_bytes)} freed`,
    }));
  const pred = p.prediction;
  const xs = [...dated.map((d) => d.ms), ...marks.map((m) => m.x), ...(pred ? [p.nowMs] : [])];
  let chartHtml = '';
  if (gap.length + lower.length > 0) {
    const series = [
      { name: 'gap', label: 'gap s', kind: 'dots' as const, axis: 'left' as const, points: gap },
      ...(lower.length
        ? [
            {
              name: 'gap_lb',
              label: 'unfinished (at least)',
              kind: 'dots' as const,
              axis: 'left' as const,
              points: lower,
            },
          ]
        : []),
      ...(pred
        ? [
            {
              name: 'predicted',
              label: 'next (predicted)',
              kind: 'dots' as const,
              axis: 'left' as const,
              points: [{ x: p.nowMs, y: pred.next_gap_seconds }],
            },
          ]
        : []),
      ...(sessions.length
        ? [{ name: 'sessions', label: 'sessions', kind: 'dots' as const, axis: 'right' as const, points: sessions }]
        : []),
    ];
    chartHtml =
      '<figure>' +
      chart({
        id: 'chart-restarts',
        title: 'Bootstrap gap of each gateway restart, with the session count and the prune passes',
        xMin: Math.min(...xs),
        xMax: Math.max(...xs),
        xFormat: dayClock,
        left: { unit: 's', include: [0] },
        right: sessions.length ? { unit: 'sessions', include: [0] } : undefined,
        series,
        marks,
      }) +
      (`<figcaption>Bootstrap gap (the silent seahorse bootstrap at start) of ` +
        `${gap.length + lower.length} restarts; dashed lines: ${marks.length} prune passes that deleted sessions.</figcaption></figure>`);
  } else chartHtml = muted('No restart with a measured bootstrap gap in gateway.log.');
  const s = r.summary;
  const lines: string[] = [];
  lines.push(
    `${s.restarts} restarts in gateway.log (${s.stopped} stopped, ${s.crashed}` +
      ` crashed, ${s.failed} failed, ${s.running} running).`,
  );
  if (s.latest_gap)
    lines.push(
      `Latest gap ${seconds(s.latest_gap.seconds)}${s.latest_gap.lower_bound ? ' (at least; not finished)' : ''}.`,
    );
  if (s.trend)
    lines.push(
      `Trend: ${s.trend.direction}, ${seconds(s.trend.first.seconds)} → ${seconds(s.trend.latest.seconds)}` +
        `${s.trend.per_day_seconds !== null ? ` (${s.trend.per_day_seconds >= 0 ? '+' : ''}${s.trend.per_day_seconds.toFixed(2)}` + ` s a day)` : ''}` +
        `.`,
    );
  const predText = pred
    ? `<p id="prediction">Next gap predicted: <b>${esc(seconds(pred.next_gap_seconds))}` +
      `</b>${pred.low_seconds != null && pred.high_seconds != null ? ` (${esc(seconds(pred.low_seconds))}–${esc(seconds(pred.high_seconds))}` + `)` : ''}` +
      `${pred.basis ? ` <span class="small muted">${esc(pred.basis)}</span>` : ''}` +
      `</p>`
    : '';
  const recent = r.restarts.slice(-8).reverse();
  const rows = recent
    .map(
      (x) =>
        `<tr><td>${esc(x.started_at_text)}</td><td>${esc(x.end)}</td><td class="n">` +
        `${x.bootstrap_gap ? `${x.bootstrap_gap.lower_bound ? '≥' : ''}${esc(seconds(x.bootstrap_gap.seconds))}` : '—'}` +
        `</td><td class="n">${sessionText.get(x.n) ?? '—'}</td><td class="small">` +
        `${x.after_prune ? `after prune −${x.after_prune.deleted_sessions}` : ''}` +
        `</td></tr>`,
    )
    .join('');
  const table =
    `<table id="restart-list"><thead><tr><th scope="col">Started</th><th scope="col">` +
    `Ended</th><th scope="col" class="n">gap</th><th scope="col" class="n">` +
    `sessions</th><th scope="col"></th></tr></thead><tbody>${rows}</tbody></table>`;
  const approx = [...sessionText.values()].some((t) => t.startsWith('~'))
    ? '<p class="small muted">~: the count the prune pass before that restart ' +
      'left (the guard keeps 24 h of its own readings).</p>'
    : '';
  return `${head}<p class="small">${esc(lines.join(' '))}</p>${predText}${chartHtml}${table}${approx}</section>`;
}

/** Sessions at a time before the history: what the latest pass before it left (sessions only grow between passes). */
function sessionsFromPasses(p: PageInput, ms: number): { count: number; approx: boolean } | null {
  let best: { at_ms: number; n: number } | null = null;
  for (const x of p.passes)
    if (x.sessions_after !== null && x.at_ms <= ms && (!best || x.at_ms > best.at_ms))
      best = { at_ms: x.at_ms, n: x.sessions_after };
  return best ? { count: best.n, approx: true } : null;
}
