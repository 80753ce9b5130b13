/**
 * A number for each of many integer ids (seahorse conversation ids), read-only once made: the ids
 * and their numbers in two sorted typed arrays, 16 bytes an entry, less than a Map's table for
 * the same ids held through the whole pass (the figures: BENCHMARKS.md, 'Figures that code comments carried').
 */

/** What the readers of such a table need: a Map is one too. */
export interface NumbersById {
  get(id: number): number | undefined;
  values(): Iterable<number>;
}

export class IdNumbers implements NumbersById {
  private constructor(
    private readonly ids: Float64Array,
    private readonly nums: Float64Array,
    /** The sum of what was kept under ids that are not numbers: in values(), never found by get(). */
    private readonly unkeyed: number,
  ) {}

  /** The table of `map`'s entries; `map` can be let go afterwards. */
  static from(map: ReadonlyMap<unknown, number>): IdNumbers {
    const b = new IdNumbersBuilder();
    for (const id of [...map.keys()].sort(byId)) b.push(id, map.get(id)!);
    return b.done();
  }

  /** For IdNumbersBuilder. */
  static of(ids: Float64Array, nums: Float64Array, unkeyed: number): IdNumbers {
    return new IdNumbers(ids, nums, unkeyed);
  }

  get size(): number {
    return this.ids.length;
  }

  get(id: number): number | undefined {
    const at = lowerBound(this.ids, id);
    return at < this.ids.length && this.ids[at] === id ? this.nums[at] : undefined;
  }

  *values(): IterableIterator<number> {
    yield* this.nums;
    if (this.unkeyed !== 0) yield this.unkeyed;
  }
}

/** Numbers first, ascending; then anything else (a NULL or text id), which is never looked up by number. */
function byId(a: unknown, b: unknown): number {
  const na = typeof a === 'number' && !Number.isNaN(a);
  const nb = typeof b === 'number' && !Number.isNaN(b);
  return na && nb ? a - b : Number(nb) - Number(na);
}

/**
 * An IdNumbers made entry by entry in ascending id order (as SQL's `ORDER BY id` gives them),
 * without a Map of every entry first: the arrays grow by doubling and are cut to size once.
 * An id that is not a number (SQLite lets a NULL or a text into an INTEGER column) is summed
 * apart: no lookup by number can find it, and the total still counts it.
 */
export class IdNumbersBuilder {
  private ids = new Float64Array(1024);
  private nums = new Float64Array(1024);
  private n = 0;
  private unkeyed = 0;

  /** Add `num` under `id`, above every id added so far; its index (-1: not a number). */
  push(id: unknown, num: number): number {
    if (typeof id !== 'number' || Number.isNaN(id)) {
      this.unkeyed += num;
      return -1;
    }
    if (this.n > 0 && !(id > this.ids[this.n - 1]!))
      throw new Error(`IdNumbersBuilder: id ${id} is not above ${this.ids[this.n - 1]}`);
    if (this.n === this.ids.length) {
      const ids = new Float64Array(this.n * 2);
      const nums = new Float64Array(this.n * 2);
      ids.set(this.ids);
      nums.set(this.nums);
      this.ids = ids;
      this.nums = nums;
    }
    this.ids[this.n] = id;
    this.nums[this.n] = num;
    return this.n++;
  }

  /** The index of `id`, or -1. */
  indexOf(id: unknown): number {
    if (typeof id !== 'number') return -1;
    const at = lowerBound(this.ids.subarray(0, this.n), id);
    return at < this.n && this.ids[at] === id ? at : -1;
  }

  /** Add to the number at index `i` (from push or indexOf). */
  addAt(i: number, num: number): void {
    this.nums[i] = this.nums[i]! + num;
  }

  done(): IdNumbers {
    return IdNumbers.of(this.ids.slice(0, this.n), this.nums.slice(0, this.n), this.unkeyed);
  }
}

/** The first index of a sorted array whose value is not below x (its length when none is). */
export function lowerBound(sorted: Float64Array, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
