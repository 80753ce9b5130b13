/**
 * A list whose items are made one at a time while they are read: JSON written as it is produced
 * (src/commands/json-stream.ts) writes it as an array without ever holding its items together.
 */
export class LazyList<T> {
  constructor(readonly items: Iterable<T>) {}
}
