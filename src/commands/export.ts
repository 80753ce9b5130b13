import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { ExitCode, GuardError, errnoCode } from '../errors.js';
import { readSmallText } from '../io/smallfile.js';
import { buildInventory } from '../picoclaw/inventory/inventory.js';
import { jsonlLines } from '../picoclaw/jsonl-lines.js';
import { resolveSessionKey, sessionCandidates } from '../picoclaw/session-key.js';
import { homeFromOpts } from './common.js';

/**
 * `picoclaw-guard export KEY`: the conversation of one session, from its .jsonl (PicoClaw's
 * providers.Message per line: role, content, model_name, created_at, media, attachments,
 * reasoning_content, system_parts, tool_calls, tool_call_id; docs/sessions.md). The only command
 * that prints what was said. Streamed: one line of the file held at a time, written as it is read.
 * The first meta.skip non-empty lines are logically truncated (PicoClaw's readers skip them): left
 * out, and counted.
 */

interface ToolCall {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

interface Message {
  role?: unknown;
  content?: unknown;
  model_name?: unknown;
  created_at?: unknown;
  media?: unknown;
  attachments?: unknown;
  reasoning_content?: unknown;
  system_parts?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

/**
 * Control characters other than newline and tab, written as \uXXXX: a message may hold terminal escape
 * sequences, which must not reach a terminal as such (JSON escapes them anyway).
 */
function noControls(text: string): string {
  let out = '';
  for (const c of text) {
    const n = c.charCodeAt(0);
    const control = (n < 0x20 && c !== '\n' && c !== '\t') || (n >= 0x7f && n <= 0x9f);
    out += control ? `\\u${n.toString(16).padStart(4, '0')}` : c;
  }
  return out;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** A Markdown code fence longer than any run of backticks in the text, so the text cannot close it. */
function fenced(text: string, lang = ''): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const f = '`'.repeat(Math.max(3, longest + 1));
  return `${f}${lang}\n${text}${text.endsWith('\n') ? '' : '\n'}${f}\n`;
}

function toolCalls(m: Message): { id: string | null; name: string | null; arguments: string | null }[] {
  if (!Array.isArray(m.tool_calls)) return [];
  return (m.tool_calls as ToolCall[]).map((c) => ({
    id: str(c?.id),
    name: str(c?.function?.name),
    arguments: typeof c?.function?.arguments === 'string' ? c.function.arguments : null,
  }));
}

/** Pretty JSON when the arguments are JSON (they are a JSON string in PicoClaw's format), else as they are. */
function prettyArgs(a: string): { text: string; lang: string } {
  try {
    return { text: JSON.stringify(JSON.parse(a), null, 2), lang: 'json' };
  } catch {
    return { text: a, lang: '' };
  }
}

function markdown(n: number, m: Message): string {
  const role = str(m.role) ?? '(no role)';
  const head = [role === 'tool' && str(m.tool_call_id) ? `tool result for ${str(m.tool_call_id)}` : role];
  if (str(m.model_name)) head.push(`(${str(m.model_name)})`);
  let out = `## ${n}. ${head.join(' ')}${str(m.created_at) ? ` · ${str(m.created_at)}` : ''}\n\n`;
  if (Array.isArray(m.system_parts))
    for (const p of m.system_parts as { text?: unknown }[]) if (str(p?.text)) out += fenced(str(p.text)!) + '\n';
  if (str(m.reasoning_content))
    out +=
      str(m.reasoning_content)!
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\n') + '\n\n';
  const content = typeof m.content === 'string' ? m.content : '';
  if (content !== '') out += (role === 'tool' ? fenced(content) : content + '\n') + '\n';
  for (const c of toolCalls(m)) {
    out += `**tool call** \`${c.name ?? '?'}\`${c.id ? ` (${c.id})` : ''}\n\n`;
    if (c.arguments !== null) {
      const a = prettyArgs(c.arguments);
      out += fenced(a.text, a.lang) + '\n';
    }
  }
  for (const key of ['media', 'attachments'] as const) {
    const v = m[key];
    if (Array.isArray(v) && v.length > 0) out += `*${key}:* ${JSON.stringify(v)}\n\n`;
  }
  return out;
}

function jsonMessage(n: number, m: Message): Record<string, unknown> {
  return {
    line: n,
    role: str(m.role),
    created_at: str(m.created_at),
    model_name: str(m.model_name),
    content: typeof m.content === 'string' ? m.content : null,
    reasoning_content: str(m.reasoning_content),
    tool_calls: toolCalls(m),
    tool_call_id: str(m.tool_call_id),
    media: Array.isArray(m.media) ? m.media : [],
    attachments: Array.isArray(m.attachments) ? m.attachments : [],
  };
}

/** Where the export goes: stdout, or a new file (mode 0600: it holds the conversation), never an existing one. */
function sink(path: string | undefined): { write: (s: string) => void; close: () => void } {
  if (path === undefined)
    return {
      write: (s) => {
        process.stdout.write(s);
      },
      close: () => {},
    };
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    throw new GuardError(
      `cannot create ${path}: ${errnoCode(err) === 'EEXIST' ? 'it exists (never overwritten)' : (errnoCode(err) ?? String(err))}`,
      { exitCode: ExitCode.USAGE, path, hint: 'give a new file name' },
    );
  }
  return {
    write: (s) => {
      const b = Buffer.from(s);
      let off = 0;
      while (off < b.length) off += writeSync(fd, b, off, b.length - off);
    },
    close: () => closeSync(fd),
  };
}

export async function run(opts: Record<string, unknown>, args: unknown[]): Promise<number> {
  const home = homeFromOpts(opts);
  const inv = buildInventory(home, { skipSeahorse: true, withoutAliases: true });
  const s = resolveSessionKey(typeof args[0] === 'string' ? args[0] : '', sessionCandidates(inv.sessions), {
    agent: typeof opts.agent === 'string' ? opts.agent : undefined,
    where: home.home,
    listHint: 'picoclaw-guard sessions lists the keys',
  }).session;
  const jsonl = s.files.jsonl;
  if (!jsonl)
    throw new GuardError(`${s.agent} ${s.key}: no .jsonl (the meta file alone holds no conversation)`, {
      exitCode: ExitCode.DATA,
      path: s.files.meta?.path,
    });
  // meta.skip: PicoClaw's readers skip that many non-empty lines first.
  let skip = 0;
  if (s.files.meta) {
    try {
      const meta = JSON.parse(readSmallText(s.files.meta.path, 'meta', { noFollow: true })) as { skip?: unknown };
      if (typeof meta.skip === 'number' && Number.isInteger(meta.skip) && meta.skip > 0) skip = meta.skip;
    } catch {
      // An unreadable meta: every line is shown.
    }
  }
  const md = opts.format !== 'json';
  const out = sink(typeof opts.output === 'string' ? opts.output : undefined);
  try {
    if (md)
      out.write(
        noControls(
          `# Session ${s.key}\n\nagent: ${s.agent} · file: ${jsonl.path}` +
            (skip > 0 ? ` · the first ${skip} line(s) are truncated by PicoClaw (meta.skip) and left out` : '') +
            '\n\n',
        ),
      );
    else
      out.write(
        `{"agent":${JSON.stringify(s.agent)},"key":${JSON.stringify(s.key)},"file":${JSON.stringify(jsonl.path)},` +
          `"skipped_by_meta":${skip},"messages":[`,
      );
    let seen = 0;
    let first = true;
    const emit = (text: string) => {
      out.write(md ? noControls(text) : `${first ? '\n' : ',\n'}${text}`);
      first = false;
    };
    for (const line of jsonlLines(jsonl.path)) {
      if ('text' in line && line.text.trim() === '') continue;
      if (seen++ < skip) continue;
      if ('tooLong' in line) {
        emit(
          md
            ? `## line ${line.n}: ${line.tooLong} bytes, over PicoClaw's line limit: left out\n\n`
            : JSON.stringify({ line: line.n, error: `${line.tooLong} bytes, over the line limit: left out` }),
        );
        continue;
      }
      let m: Message;
      try {
        const v: unknown = JSON.parse(line.text);
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
        m = v;
      } catch {
        // PicoClaw skips such a line too (memory: skipping corrupt line).
        emit(
          md
            ? `## line ${line.n}: not a message (corrupt JSON): PicoClaw skips it too\n\n`
            : JSON.stringify({ line: line.n, error: 'corrupt JSON: PicoClaw skips it too' }),
        );
        continue;
      }
      emit(md ? markdown(line.n, m) : JSON.stringify(jsonMessage(line.n, m)));
    }
    if (!md) out.write(`${first ? '' : '\n'}]}\n`);
  } finally {
    out.close();
  }
  return ExitCode.OK;
}
