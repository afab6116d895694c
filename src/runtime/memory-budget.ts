// Memory budgets as people write them (`1.5GiB`, `800MiB`, plain bytes) and the default budget:
// 80 % of the memory this process tree may use — its cgroup's limit (v2 `memory.max`, v1
// `memory.limit_in_bytes`) less what the cgroup already uses, else the kernel's MemAvailable.

import { readFileSync } from 'node:fs';
import { invalidArgument } from '../errors.js';

/** Share of the available memory the default budget takes. */
export const DEFAULT_BUDGET_SHARE = 0.8;

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Parses `1.5GiB`, `800MiB`, `2GB`, `123456` (bytes); refuses anything else, naming the forms. */
export function parseMemorySize(text: string, field = 'max-memory'): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) return invalidArgument(field, text, 'a size such as 1.5GiB, 800MiB, 2GB or a number of bytes');
  const bytes = Math.floor(Number(m[1]) * unit);
  if (!(bytes > 0) || !Number.isSafeInteger(bytes)) return invalidArgument(field, text, 'a size > 0 bytes and below 2^53');
  return bytes;
}

/** `1.50 GiB`, `812 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  if (bytes >= 2 ** 20) return `${Math.round(bytes / 2 ** 20)} MiB`;
  return `${Math.round(bytes / 2 ** 10)} KiB`;
}

function readNumber(path: string): number | null {
  try {
    const text = readFileSync(path, 'utf8').trim();
    if (text === 'max') return null;
    const n = Number(text);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

/** The cgroup (v2, else v1) of this process: its limit and current use, when it has a limit. */
function cgroupRoom(): number | null {
  let path = '';
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    path = line ? line.slice(3) : '';
  } catch {
    return null;
  }
  const v2 = `/sys/fs/cgroup${path === '/' ? '' : path}`;
  const limit = readNumber(`${v2}/memory.max`);
  if (limit !== null) return limit - (readNumber(`${v2}/memory.current`) ?? 0);
  const v1 = readNumber('/sys/fs/cgroup/memory/memory.limit_in_bytes');
  // v1 reports "no limit" as a huge number.
  if (v1 !== null && v1 < 2 ** 60) return v1 - (readNumber('/sys/fs/cgroup/memory/memory.usage_in_bytes') ?? 0);
  return null;
}

function memAvailable(): number | null {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Memory this process tree may still use: the cgroup's room, else MemAvailable (the smaller when both). */
export function availableMemory(): number {
  const room = cgroupRoom();
  const available = memAvailable();
  const candidates = [room, available].filter((n): n is number => n !== null && n > 0);
  if (candidates.length === 0) return 8 * 2 ** 30;
  return Math.min(...candidates);
}

/** The default budget: 80 % of `availableMemory()`. */
export function defaultMemoryBudget(): number {
  return Math.floor(DEFAULT_BUDGET_SHARE * availableMemory());
}

/** This process's peak resident set (VmHWM), or null where /proc is not there. */
export function peakRssBytes(): number | null {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
