/**
 * SQLite's page cache for the deletions and the VACUUM after them, in KiB (the pass's write connection and its
 * temp tables get the same). The deletions touch each page a few times in conversation order and VACUUM copies
 * b-trees in order, so more buys no time: on a 20,000-session home the pass took the same CPU time with 2 MB as
 * with 8 MB (38.0 s against 38.8 s), and the same wall time with 1 MB as with 2 MB (21.2 s), as did a VACUUM of
 * the whole 411 MB file; each step down lowered the peak (8 MiB from 8 MB to 2, 5 MiB from 2 to 1). What misses
 * the cache is in the kernel's page cache.
 */
export const APPLY_CACHE_KIB = 1000;
