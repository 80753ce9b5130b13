import type { ConversationStat } from '../seahorse.js';

/**
 * The seahorse conversations the inventory ties to sessions, packed in typed arrays block by
 * block (src/picoclaw/inventory/inventory.ts). A row as better-sqlite3 returns it is an object of seven
 * properties with two 19-character time strings: about 250 bytes of heap a conversation, most
 * of a large home's inventory after its session records. Here a conversation is a small object
 * read as a small object over one row of numbers, and its key is the session's own string where
 * they are equal.
 */

/** The fields of one conversation, at `i * STRIDE` in its block's Float64Array. */
const enum ConversationField {
  Id,
  Messages,
  Summaries,
  LastId,
  LastAt,
  CreatedAt,
  STRIDE,
}

/** Conversations per block: a block is never copied or grown. */
const BLOCK = 1024;
const SQLITE_TIME_RE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

/** SQLite's `YYYY-MM-DD HH:MM:SS` (UTC) of epoch seconds. */
function sqliteTime(secs: number): string {
  const iso = new Date(secs * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

class Block {
  readonly num = new Float64Array(BLOCK * ConversationField.STRIDE);
  readonly keys: string[] = [];
  /**
   * What a column cannot hold as written: a value that is not a number (a NULL reads as none
   * here), a time in another shape than SQLite's, or an absent lastMessageId. By `i * STRIDE + field`.
   */
  odd: Map<number, unknown> | null = null;
  size = 0;

  put(at: number, v: unknown): void {
    if (typeof v === 'number' && !Number.isNaN(v)) {
      this.num[at] = v;
      return;
    }
    this.num[at] = NaN;
    if (v !== null) (this.odd ??= new Map()).set(at, v);
  }

  /** A time as epoch seconds when it prints back as the very same text, else as written. */
  putTime(at: number, v: unknown): void {
    if (typeof v === 'string' && SQLITE_TIME_RE.test(v)) {
      const secs = Date.parse(`${v.slice(0, 10)}T${v.slice(11)}Z`) / 1000;
      if (Number.isFinite(secs) && sqliteTime(secs) === v) {
        this.num[at] = secs;
        return;
      }
    }
    this.num[at] = NaN;
    if (v !== null) (this.odd ??= new Map()).set(at, v);
  }

  get(at: number): unknown {
    const x = this.num[at]!;
    if (!Number.isNaN(x)) return x;
    return this.odd?.has(at) ? this.odd.get(at) : null;
  }

  time(at: number): unknown {
    const x = this.num[at]!;
    if (!Number.isNaN(x)) return sqliteTime(x);
    return this.odd?.has(at) ? this.odd.get(at) : null;
  }
}

/**
 * One conversation read back from its block: every field as the row had it (the same value and
 * type, null as null, an absent lastMessageId as absent).
 */
class StoredConversation implements ConversationStat {
  constructor(
    private readonly b: Block,
    private readonly i: number,
  ) {}

  private at(f: ConversationField): number {
    return this.i * ConversationField.STRIDE + f;
  }

  get conversationId(): number {
    return this.b.get(this.at(ConversationField.Id)) as number;
  }

  get key(): string {
    return this.b.keys[this.i]!;
  }

  set key(k: string) {
    this.b.keys[this.i] = k;
  }

  get messages(): number {
    return this.b.get(this.at(ConversationField.Messages)) as number;
  }

  get summaries(): number {
    return this.b.get(this.at(ConversationField.Summaries)) as number;
  }

  get lastMessageAt(): string | null {
    return this.b.time(this.at(ConversationField.LastAt)) as string | null;
  }

  get lastMessageId(): number | null | undefined {
    return this.b.get(this.at(ConversationField.LastId)) as number | null | undefined;
  }

  get createdAt(): string | null {
    return this.b.time(this.at(ConversationField.CreatedAt)) as string | null;
  }
}

/**
 * The conversations of one inventory, by row number. A session keeps the numbers of its rows and
 * reads each as a fresh object over its row: an object per row held for the whole pass would be
 * as large as the row itself.
 */
export class ConversationColumns {
  private readonly blocks: Block[] = [];

  /** Keep a row; `key` is the string to keep for its key (a session's own, when equal). Returns its number. */
  add(row: ConversationStat, key: string): number {
    let b = this.blocks[this.blocks.length - 1];
    if (b === undefined || b.size === BLOCK) this.blocks.push((b = new Block()));
    const i = b.size++;
    const o = i * ConversationField.STRIDE;
    b.keys.push(key);
    b.put(o + ConversationField.Id, row.conversationId);
    b.put(o + ConversationField.Messages, row.messages);
    b.put(o + ConversationField.Summaries, row.summaries);
    b.put(o + ConversationField.LastId, 'lastMessageId' in row ? row.lastMessageId : undefined);
    b.putTime(o + ConversationField.LastAt, row.lastMessageAt);
    b.putTime(o + ConversationField.CreatedAt, row.createdAt);
    return (this.blocks.length - 1) * BLOCK + i;
  }

  /** Row `n` as a conversation: every field as it was added. */
  get(n: number): ConversationStat {
    const b = this.blocks[Math.floor(n / BLOCK)];
    if (b === undefined || n % BLOCK >= b.size) throw new RangeError(`no conversation row ${n}`);
    return new StoredConversation(b, n % BLOCK);
  }
}
