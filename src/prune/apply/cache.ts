/**
 * SQLite's page cache for the deletions and the VACUUM after them, in KiB (the pass's write connection and its
 * temp tables get the same). The deletions touch each page a few times in conversation order and VACUUM copies
 * b-trees in order, so more buys no time, and each step down lowered the peak (the figures: BENCHMARKS.md,
 * 'Figures that code comments carried'). What misses the cache is in the kernel's page cache.
 */
export const APPLY_CACHE_KIB = 1000;
