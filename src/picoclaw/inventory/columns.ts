/**
 * The inventory's columns: every record's numbers and written times packed in typed arrays,
 * block by block (src/picoclaw/inventory/inventory.ts keeps the records that read them).
 */

/** The numbers of one record, at `i * STRIDE` in the inventory's one Float64Array (NaN: null). */
export const enum SessionField {
  JsonlBytes,
  MetaBytes,
  Messages,
  LastActivity,
  JsonlMtime,
  JsonlIno,
  MetaMtime,
  MetaIno,
  /** The three written times (meta updated_at, created_at, the last line's created_at): see packTime. */
  Time0,
  STRIDE = Time0 + 3,
}
/** Per written time: its fraction as an integer, its digits (NO_TIME: null), its zone (Z_ZONE: `Z`). */
const NO_TIME = 255;
const STRING_TIME = 254;
const Z_ZONE = -32768;
const TIME_RE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;

/** Records per block of columns: a block is never copied or grown, so at most one is part-empty. */
export const BLOCK = 1024;

/**
 * The numbers and written times of up to BLOCK records, in typed arrays: a number kept as a
 * field of a record is a boxed double of its own (16 bytes and a pointer), and a written time
 * is a 56-byte string, where here the three times of a session take 45 bytes together. A time is
 * kept as numbers only when they give back the very string (checked as it is stored); any other
 * shape keeps its string. Blocks of a fixed size, not one array grown by doubling: doubling leaves
 * up to half of the last array empty and copies every record on each growth.
 */
export class Columns {
  readonly num = new Float64Array(BLOCK * SessionField.STRIDE);
  readonly frac = new Uint32Array(BLOCK * 3);
  readonly digits = new Uint8Array(BLOCK * 3);
  readonly zone = new Int16Array(BLOCK * 3);
  /** Times kept as written, by `i * 3 + k`. */
  readonly strings = new Map<number, string>();
  size = 0;

  /** The next record's index in this block, or -1 when the block is full. */
  add(): number {
    return this.size === BLOCK ? -1 : this.size++;
  }

  setTime(i: number, k: number, text: string | null): void {
    const at = i * 3 + k;
    this.digits[at] = NO_TIME;
    if (text === null) return;
    const m = TIME_RE.exec(text);
    // Only a time `time()` writes back exactly: a real calendar date and clock time (Date.parse would
    // roll 02-30 over to March), and a zone that is Z or +/-HH:MM with MM under 60, never -00:00.
    const z = m ? m[3]! : '';
    if (m && realWallTime(m[1]!) && (z === 'Z' || (z.charCodeAt(4) < 0x36 && z !== '-00:00'))) {
      this.num[i * SessionField.STRIDE + SessionField.Time0 + k] = Date.parse(`${m[1]}Z`) / 1000;
      this.frac[at] = m[2] ? Number(m[2]) : 0;
      this.digits[at] = m[2] ? m[2].length : 0;
      const minutes = Number(z.slice(1, 3)) * 60 + Number(z.slice(4, 6));
      this.zone[at] = z === 'Z' ? Z_ZONE : (z[0] === '-' ? -1 : 1) * minutes;
      return;
    }
    this.digits[at] = STRING_TIME;
    this.strings.set(at, text);
  }

  time(i: number, k: number): string | null {
    const at = i * 3 + k;
    const d = this.digits[at]!;
    if (d === NO_TIME) return null;
    if (d === STRING_TIME) return this.strings.get(at)!;
    const wall = new Date(this.num[i * SessionField.STRIDE + SessionField.Time0 + k]! * 1000)
      .toISOString()
      .slice(0, 19);
    const zone = this.zone[at]!;
    const abs = Math.abs(zone);
    const two = (x: number) => String(x).padStart(2, '0');
    const zoneText = zone === Z_ZONE ? 'Z' : `${zone < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
    return `${wall}${d > 0 ? `.${String(this.frac[at]).padStart(d, '0')}` : ''}${zoneText}`;
  }
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether `YYYY-MM-DDTHH:MM:SS` names a moment that exists (what toISOString gives back unchanged). */
function realWallTime(w: string): boolean {
  const y = Number(w.slice(0, 4));
  const mo = Number(w.slice(5, 7));
  const d = Number(w.slice(8, 10));
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (mo < 1 || mo > 12 || d < 1 || d > DAYS[mo - 1]! + (mo === 2 && leap ? 1 : 0)) return false;
  return Number(w.slice(11, 13)) < 24 && Number(w.slice(14, 16)) < 60 && Number(w.slice(17, 19)) < 60;
}
