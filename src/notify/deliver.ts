import { spawn } from 'node:child_process';
import { errnoCode, errorMessage } from '../errors.js';
import type { NotifyTarget } from './config.js';
import { jsonBody, ntfyRequest, type NotifyMessage } from './message.js';
import { scrub } from './redact.js';

/**
 * One delivery attempt to one target, ended by `timeoutMs` or by `signal` (the daemon stopping).
 * Nothing here retries, waits or logs: the notifier decides (src/notify/notifier.ts). The answer
 * is words fit to print: the HTTP status, or the command's exit code and the first line of its
 * standard error, with every secret of the target cut out (src/notify/redact.ts).
 */
export interface Answer {
  ok: boolean;
  /** Worth trying again: a timeout, a network error, HTTP 429 or 5xx, a command that failed. */
  retry: boolean;
  answer: string;
  /** HTTP status, or the command's exit code. */
  status: number | null;
  duration_seconds: number;
}

const USER_AGENT = 'picoclaw-guard';

export async function deliver(
  t: NotifyTarget,
  m: NotifyMessage,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Answer> {
  const t0 = performance.now();
  const done = (a: Omit<Answer, 'duration_seconds' | 'answer'> & { answer: string }): Answer => ({
    ...a,
    answer: scrub(a.answer, t),
    duration_seconds: Math.round(performance.now() - t0) / 1000,
  });
  try {
    if (t.type === 'command') return done(await runCommand(t.command!, jsonBody(m), timeoutMs, signal));
    return done(await post(t, m, timeoutMs, signal));
  } catch (err) {
    return done({ ok: false, retry: true, status: null, answer: `error: ${errnoCode(err) ?? errorMessage(err)}` });
  }
}

/**
 * One POST through node:http (node:https loaded only for an https URL). Not fetch: the first fetch loads
 * undici, which stays resident in the idle daemon from then on (BENCHMARKS.md section 30a);
 * node:http is loaded already by the daemon's own server. No agent (one connection per attempt, closed
 * after it): nothing stays open between messages that come hours apart. Redirects are not followed.
 */
async function post(
  t: NotifyTarget,
  m: NotifyMessage,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Omit<Answer, 'duration_seconds'>> {
  const req =
    t.type === 'ntfy'
      ? ntfyRequest(m)
      : { body: jsonBody(m), headers: { 'content-type': 'application/json' } as Record<string, string> };
  const body = Buffer.from(req.body, 'utf8');
  const headers: Record<string, string> = {
    ...req.headers,
    'user-agent': USER_AGENT,
    'content-length': String(body.length),
  };
  if (t.token) headers.authorization = `Bearer ${t.token}`;
  const url = new URL(t.url!);
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Omit<Answer, 'duration_seconds'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(tm);
      signal?.removeEventListener('abort', onAbort);
      resolve(a);
    };
    const r = request(url, { method: 'POST', headers, agent: false }, (res) => {
      // The body is not read: it may echo the topic.
      res.resume();
      const status = res.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      finish({
        ok,
        retry: !ok && (status === 429 || status >= 500),
        status,
        answer: `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`,
      });
      res.on('end', () => r.destroy());
    });
    const tm = setTimeout(() => {
      finish({ ok: false, retry: true, status: null, answer: `no answer within ${timeoutMs / 1000} s` });
      r.destroy();
    }, timeoutMs);
    const onAbort = () => {
      finish({ ok: false, retry: true, status: null, answer: 'stopped' });
      r.destroy();
    };
    signal?.addEventListener('abort', onAbort);
    r.on('error', (err) =>
      finish({ ok: false, retry: true, status: null, answer: `error: ${errnoCode(err) ?? errorMessage(err)}` }),
    );
    r.end(body);
  });
}

/** Run argv (no shell) with `input` on standard input; SIGKILL at the timeout. */
export function runCommand(
  argv: string[],
  input: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Omit<Answer, 'duration_seconds'>> {
  return new Promise((resolve) => {
    let settled = false;
    let stderr = '';
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'pipe'], shell: false });
    const finish = (a: Omit<Answer, 'duration_seconds'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(tm);
      signal?.removeEventListener('abort', onAbort);
      resolve(a);
    };
    const kill = (why: string) => {
      child.kill('SIGKILL');
      finish({ ok: false, retry: true, status: null, answer: why });
    };
    const tm = setTimeout(() => kill(`no exit within ${timeoutMs / 1000} s (killed)`), timeoutMs);
    const onAbort = () => kill('stopped');
    signal?.addEventListener('abort', onAbort);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d;
    });
    child.on('error', (err) => {
      const code = errnoCode(err) ?? 'error';
      finish({ ok: false, retry: code !== 'ENOENT' && code !== 'EACCES', status: null, answer: `cannot run: ${code}` });
    });
    child.on('close', (code, sig) => {
      const first = stderr
        .split('\n')
        .find((l) => l.trim() !== '')
        ?.slice(0, 120);
      if (code === 0) finish({ ok: true, retry: false, status: 0, answer: 'exit 0' });
      else
        finish({
          ok: false,
          retry: true,
          status: code,
          answer: `${code === null ? `killed by ${sig}` : `exit ${code}`}${first ? `: ${first}` : ''}`,
        });
    });
    // A command that does not read its input closes the pipe: not an error of the delivery.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
