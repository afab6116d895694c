// --max-memory / --max-tensor: the memory budget of a command (plan, decode, worker, bench), read
// into a MemoryBudget, with whether it was given (a hard cap) or is the default (80 % of what this
// process tree may use: a warning only, for exact requests).

import { defaultMemoryBudget, parseMemorySize, type MemoryBudget } from '../index.js';
import type { Args, OptionSpec } from './args.js';

export const MEMORY_OPTIONS: OptionSpec[] = [
  {
    name: 'max-memory',
    kind: 'string',
    value: 'SIZE',
    description:
      'memory budget of the coordinator and all its local ranks together (1.5GiB, 800MiB, bytes): the best plan that fits; an exact request over it is refused',
    defaultText: '80% of the memory this process tree may use (cgroup limit, else MemAvailable); over it, exact requests only warn',
  },
  {
    name: 'max-tensor',
    kind: 'string',
    value: 'SIZE',
    description: "largest single tensor a plan may allocate (WebGPU buffer limits, onnxruntime's 2 GiB tensors)",
  },
];

export interface BudgetOption {
  budget: MemoryBudget;
  /** True when --max-memory was given: the budget is a hard cap. */
  explicit: boolean;
}

/** --max-memory / --max-tensor in bytes, where given (the decode session's maxMemory / maxTensor). */
export function readMemoryLimits(args: Args): { maxMemory?: number; maxTensor?: number } {
  const text = args.string('max-memory');
  const tensor = args.string('max-tensor');
  args.done();
  return {
    ...(text !== undefined ? { maxMemory: parseMemorySize(text, '--max-memory') } : {}),
    ...(tensor !== undefined ? { maxTensor: parseMemorySize(tensor, '--max-tensor') } : {}),
  };
}

export function readBudgetOptions(args: Args): BudgetOption {
  const { maxMemory, maxTensor } = readMemoryLimits(args);
  return {
    budget: { bytes: maxMemory ?? defaultMemoryBudget(), ...(maxTensor !== undefined ? { maxTensorBytes: maxTensor } : {}) },
    explicit: maxMemory !== undefined || maxTensor !== undefined,
  };
}
