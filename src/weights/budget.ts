// How many bytes a decoder's weights take, and whether this machine can hold them: a config
// asking for absurd widths or depths (block_out_channels of 4096, layers_per_block of 60000) is
// refused from its parameter shapes, naming the predicted bytes and the memory there is, before
// any weight is read, generated or built into a graph.

import { existsSync, readFileSync } from 'node:fs';
import { reason, refuse } from '../errors.js';
import type { ParamSpec } from './synthetic.js';

/** Bytes of float32 weights the parameters declare. */
export function weightBytes(specs: readonly ParamSpec[]): number {
  let total = 0;
  for (const s of specs) {
    let n = 4;
    for (const d of s.dims) n *= d;
    total += n;
  }
  return total;
}

function readNumber(path: string): number | null {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

/** The memory this process tree may use: its cgroup limit (v2, else v1), else MemAvailable, else null. */
export function machineMemoryBytes(): number | null {
  const cgroup = readNumber('/sys/fs/cgroup/memory.max') ?? readNumber('/sys/fs/cgroup/memory/memory.limit_in_bytes');
  // cgroup v1 reports "no limit" as a huge number.
  const limit = cgroup !== null && cgroup < 2 ** 60 ? cgroup : null;
  let available: number | null = null;
  if (existsSync('/proc/meminfo')) {
    const m = /MemAvailable:\s+(\d+)\s+kB/.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) available = Number(m[1]) * 1024;
  }
  if (limit !== null && available !== null) return Math.min(limit, available);
  return limit ?? available;
}

/** The default budget: 80 % of the memory this process tree may use (null where it cannot be read). */
export function defaultMemoryBudgetBytes(): number | null {
  const memory = machineMemoryBytes();
  return memory === null ? null : Math.floor(memory * 0.8);
}

/** Bytes in words with a binary unit, e.g. `1.5 GiB`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(bytes >= 2 ** 40 ? 0 : 1)} GiB`;
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/**
 * Copies of the weights resident while a process decodes: its JS tensors, the serialised model
 * handed to onnxruntime, and the session's initialisers.
 */
export const DECODING_WEIGHT_COPIES = 3;

/** Refuses (CONFIG_INVALID) decoder weights whose resident copies exceed the default memory budget; `what` names the VAE. */
export function checkWeightBytes(specs: readonly ParamSpec[], what: string, budget = defaultMemoryBudgetBytes()): void {
  const bytes = weightBytes(specs);
  const resident = DECODING_WEIGHT_COPIES * bytes;
  if (budget === null || resident <= budget) return;
  refuse(
    'CONFIG_INVALID',
    reason(
    'WEIGHTS_TOO_LARGE',
    'config',
    `${formatBytes(bytes)} of weights`,
    `at most ${formatBytes(budget / DECODING_WEIGHT_COPIES)} of weights (${DECODING_WEIGHT_COPIES} copies within 80 % of this machine's memory)`,
    `${what} declares ${formatBytes(bytes)} of float32 weights (${specs.length} parameters); decoding holds ${DECODING_WEIGHT_COPIES} copies, ${formatBytes(resident)}, more than the memory budget of ${formatBytes(budget)} (80 % of the memory this process may use): check the config's widths and depths`,
    ),
  );
}
