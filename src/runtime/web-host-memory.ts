// The browser counterpart of host-memory.ts: a page's sessions live in one 32-bit WebAssembly
// memory (at most 4 GiB), and navigator.deviceMemory (rounded down, capped at 8 GiB by the
// spec) bounds it further where the browser reports it.

const WASM32_MEMORY_BYTES = 4 * 2 ** 30;

/** The memory a page's sessions can use at most, in bytes. */
export function hostMemoryBytes(): number {
  const gib = (globalThis as { navigator?: { deviceMemory?: number } }).navigator?.deviceMemory;
  return typeof gib === 'number' && gib > 0 ? Math.min(WASM32_MEMORY_BYTES, gib * 2 ** 30) : WASM32_MEMORY_BYTES;
}

/** Cores the page may use (navigator.hardwareConcurrency; 1 where the browser does not say). */
export function hostCores(): number {
  const n = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency;
  return typeof n === 'number' && n > 0 ? n : 1;
}
