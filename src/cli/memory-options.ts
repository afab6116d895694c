// --max-memory / --max-tensor / --max-device-memory: the memory budget of a command (plan, decode, worker, bench), read
// into a MemoryBudget, with whether it was given (a hard cap) or is the default (80 % of what this
// process tree may use: a warning only, for exact requests).

import { providerLimits, tensorLimitBytes } from '../entries/memory.js';
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
    description:
      "largest single tensor a plan may allocate (onnxruntime's 2 GiB tensors); on webgpu it replaces the buffer limits plans fit (a real GPU's larger ones)",
    defaultText: "none on cpu; on webgpu WebGPU's default limits, 128 MiB per tensor (onnxruntime-node cannot read the adapter's)",
  },
  {
    name: 'max-device-memory',
    kind: 'string',
    value: 'SIZE',
    description:
      "device memory each GPU rank may use (predicted from the graphs' live buffers): the best plan within it; an exact request over it is refused. GPU providers only",
  },
];

export interface BudgetOption {
  budget: MemoryBudget;
  /** True when --max-memory was given: the budget is a hard cap. */
  explicit: boolean;
  /** The per-buffer limits plans must fit (--provider webgpu, or --max-tensor); null: none. */
  limits: ReturnType<typeof providerLimits>;
}

/** --max-memory / --max-tensor in bytes, where given (the decode session's maxMemory / maxTensor). */
export function readMemoryLimits(args: Args): { maxMemory?: number; maxTensor?: number; maxDeviceMemory?: number } {
  const text = args.string('max-memory');
  const tensor = args.string('max-tensor');
  const device = args.string('max-device-memory');
  args.done();
  return {
    ...(device !== undefined ? { maxDeviceMemory: parseMemorySize(device, '--max-device-memory') } : {}),
    ...(text !== undefined ? { maxMemory: parseMemorySize(text, '--max-memory') } : {}),
    ...(tensor !== undefined ? { maxTensor: parseMemorySize(tensor, '--max-tensor') } : {}),
  };
}

/** The budget of a command; `provider` (a decode's --provider) adds its buffer limits as the per-tensor cap. */
export function readBudgetOptions(args: Args, provider = 'cpu'): BudgetOption {
  const { maxMemory, maxTensor, maxDeviceMemory } = readMemoryLimits(args);
  const limits = providerLimits(provider, maxTensor);
  return {
    budget: {
      bytes: maxMemory ?? defaultMemoryBudget(),
      ...(limits ? { maxTensorBytes: tensorLimitBytes(limits) } : {}),
      ...(maxDeviceMemory !== undefined ? { deviceBytes: maxDeviceMemory } : {}),
    },
    explicit: maxMemory !== undefined || maxTensor !== undefined,
    limits,
  };
}
