/**
 * A number for each of many integer ids (seahorse conversation ids), read-only once made: the ids
 * and their numbers in two sorted typed arrays, 16 bytes an entry. A Map of 20,000 conversations
 * holds about 0.9 MB of table for the whole pass; this holds 0.3 MB.
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
  ) {}

  /** The table of `map`'s entries; `map` can be let go afterwards. */
  static from(map: ReadonlyMap<number, number>): IdNumbers {
    const order = [...map.keys()].sort((a, b) => a - b);
    const ids = Float64Array.from(order);
    const nums = Float64Array.from(order, (id) => map.get(id)!);
    return new IdNumbers(ids, nums);
  }

  get size(): number {
    return this.ids.length;
  }

  get(id: number): number | undefined {
    const at = lowerBound(this.ids, id);
    return at < this.ids.length && this.ids[at] === id ? this.nums[at] : undefined;
  }

  values(): IterableIterator<number> {
    return this.nums.values();
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
