import { formatGoTime } from '../../src/picoclaw/time.js';
import type { Rng } from './random.js';

/**
 * The messages of a sample session, written the way PicoClaw's Go code writes them: JSONL
 * lines with providers.Message's field order and Go's JSON escaping, and MarshalIndent metas
 * (docs/picoclaw.md). The builder lays these out into a home and seahorse.db.
 */
export const CJK = [
  '你好，今天的天气怎么样？',
  '请帮我总结一下这份文件。',
  '明日の会議は何時からですか？',
  '서버 상태를 확인해 주세요.',
];
const USER_TEXT = [
  'What is the temperature of the board right now?',
  'Summarise the last three emails from the landlord.',
  'Remind me to water the plants at 7pm.',
  'Run the backup script and tell me if it failed.',
  'Translate this into German: the meeting moved to Thursday.',
];
const TOOLS = ['exec', 'read_file', 'web_fetch', 'list_dir', 'message', 'web_search'];

/** Go's encoding/json escapes <, > and & (and U+2028/2029) inside strings. */
function goEscape(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** json.Marshal with Go's escaping. */
export function goJson(value: unknown): string {
  return goEscape(JSON.stringify(value));
}

/** json.MarshalIndent(meta, "", "  ") with Go's escaping. */
export function metaJson(meta: Record<string, unknown>): string {
  return goEscape(JSON.stringify(meta, null, 2));
}

export interface Msg {
  role: string;
  content: string;
  model_name?: string;
  created_at?: string;
  reasoning_content?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

function filler(rng: Rng, bytes: number): string {
  const words = [
    'ok',
    'total',
    'drwxr-xr-x',
    '/var/log',
    'temp=48.3C',
    'pid',
    'load average:',
    '0.42',
    'eth0',
    'RX packets',
    '<html>',
    '&amp;',
    'error',
    'done',
  ];
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const w = rng.next() < 0.05 ? rng.pick(CJK) : rng.pick(words);
    parts.push(w);
    n += w.length + 1;
  }
  return parts.join(' ');
}

export function buildMessages(
  rng: Rng,
  count: number,
  startMs: number,
  endMs: number,
  dated: 'go' | 'none' | 'old',
  toolBytes: number,
): { msgs: Msg[]; times: number[] } {
  const msgs: Msg[] = [];
  const times: number[] = [];
  const step = count > 1 ? (endMs - startMs) / (count - 1) : 0;
  let i = 0;
  // A fixed block of tool output per session, sliced per use: fast to build at gigabyte scale.
  const block = filler(rng, Math.max(256, toolBytes));
  while (msgs.length < count) {
    const at = Math.round(startMs + step * msgs.length);
    const stamp = () => {
      times.push(at);
      if (dated === 'none') return undefined;
      // Go trims trailing zeros of the fraction: vary the sub-ms digits so every shape appears.
      const extra = rng.pick([0, 0, 5_000, 123_400, 999_999, 37_008]);
      return formatGoTime(at, extra, rng.chance(0.5) ? 120 : 0);
    };
    const phase = i % 4;
    if (phase === 0) {
      msgs.push({ role: 'user', content: rng.chance(0.2) ? rng.pick(CJK) : rng.pick(USER_TEXT), created_at: stamp() });
    } else if (phase === 1) {
      const id = `call_${rng.hex(8)}`;
      const name = rng.pick(TOOLS);
      const m: Msg = {
        role: 'assistant',
        content: '',
        model_name: 'llama3',
        created_at: stamp(),
        tool_calls: [
          {
            id,
            type: 'function',
            function: { name, arguments: goJson({ action: 'run', command: `echo ${rng.hex(6)} && uptime` }) },
          },
        ],
      };
      if (rng.chance(0.3))
        m.reasoning_content = 'The user wants fresh data; I should call a tool first & check the output.';
      msgs.push(m);
    } else if (phase === 2) {
      const prev = msgs[msgs.length - 1]?.tool_calls?.[0]?.id ?? `call_${rng.hex(8)}`;
      const len = Math.floor(toolBytes * (0.5 + rng.next()));
      const start = rng.int(0, Math.max(0, block.length - len));
      msgs.push({ role: 'tool', content: block.slice(start, start + len), created_at: stamp(), tool_call_id: prev });
    } else {
      msgs.push({
        role: 'assistant',
        content: rng.chance(0.15) ? rng.pick(CJK) : 'Done: the command finished without errors.',
        model_name: 'llama3',
        created_at: stamp(),
      });
    }
    // created_at goes after model_name in Go's field order; rebuild objects in that order.
    const last = msgs[msgs.length - 1]!;
    if (last.created_at === undefined) delete last.created_at;
    i++;
  }
  return { msgs, times };
}

/**
 * Field order of providers.Message: role, content, model_name, created_at, ..., reasoning_content, ..., tool_calls,
 * tool_call_id.
 */
export function lineOf(m: Msg): string {
  const o: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.model_name) o.model_name = m.model_name;
  if (m.created_at) o.created_at = m.created_at;
  if (m.reasoning_content) o.reasoning_content = m.reasoning_content;
  if (m.tool_calls) o.tool_calls = m.tool_calls;
  if (m.tool_call_id) o.tool_call_id = m.tool_call_id;
  return goJson(o) + '\n';
}

/** The longest prefix of s that fits in `cap` UTF-8 bytes, cut on a code point boundary. */
export function capUtf8(s: string, cap: number | undefined): string {
  if (cap === undefined || s.length * 3 <= cap) return s;
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= cap) return s;
  let end = Math.max(0, cap);
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.toString('utf8', 0, end);
}
