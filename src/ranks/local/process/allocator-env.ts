// The allocator configuration of the processes distvae starts (rank processes, the queue
// workers its tests and benchmarks start, and the long-running CLI commands the bin starts again:
// relaunch.ts): glibc malloc settings in their environment, so a rank's peak memory repeats from
// run to run and the memory model's prediction can be a bound, and a worker's does not grow.
//
// Why: onnxruntime-node runs each session call on one of libuv's pool threads, and glibc gives
// each thread that allocates its own arena (up to 8 per core), so which arena serves a run — and
// how much of what it freed that arena keeps — changed from run to run; glibc's dynamic mmap
// threshold (raised to each freed mmapped block, up to 32 MiB) moved tensors between mmap and the
// heap depending on the order of frees. Row-sharded SD ranks spread by 15–21 % over five
// identical decodes. One arena and a fixed mmap threshold make the allocation sequence, and so
// the peak, the same each run (bench/results/rank-allocator.md has what was tried and measured).
// glibc reads these variables once, at start, so they must be in the environment a process is
// started with; other allocators (musl, jemalloc preloaded) ignore them.

/** The glibc malloc settings a spawned process gets, unless its parent's environment sets them. */
export const RANK_ALLOCATOR_DEFAULTS: Readonly<Record<string, string>> = {
  // One arena for every thread: the pool thread a session call lands on no longer decides where its tensors go.
  MALLOC_ARENA_MAX: '1',
  // A fixed threshold (setting it turns glibc's dynamic adjustment off): blocks of 256 KiB and more
  // are mmapped and returned when freed, whatever was freed before.
  MALLOC_MMAP_THRESHOLD_: String(256 * 1024),
  // The heap's free top is returned past 64 MiB only: small chunks are reused without new page faults.
  MALLOC_TRIM_THRESHOLD_: String(64 * 2 ** 20),
};

/**
 * The environment variable that turns the defaults off: `inherit` starts processes with the
 * parent's environment as it is (glibc's own defaults, for comparison or another allocator).
 */
export const RANK_ALLOCATOR_ENV = 'DISTVAE_RANK_ALLOCATOR';

/**
 * `parent` with the allocator defaults added where it sets none of them (a variable the user set
 * is kept as set, and the others are still added); unchanged when `DISTVAE_RANK_ALLOCATOR=inherit`.
 */
export function withAllocatorDefaults(parent: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (parent[RANK_ALLOCATOR_ENV] === 'inherit') return { ...parent };
  const env: NodeJS.ProcessEnv = { ...parent };
  for (const [name, value] of Object.entries(RANK_ALLOCATOR_DEFAULTS)) if (env[name] === undefined) env[name] = value;
  return env;
}
