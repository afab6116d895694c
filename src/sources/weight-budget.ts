// How many bytes a decoder's weights take, and whether this machine can hold them: a config
// asking for absurd widths or depths (block_out_channels of 4096, layers_per_block of 60000) is
// refused from its parameter shapes, naming the predicted bytes and the memory there is, before
// any weight is read, generated or built into a graph.

import { reason, refuse } from '../errors.js';
import { defaultMemoryBudget, formatBytes } from '../runtime/memory-budget.js';
import { weightBytes, type ParamSpec } from '../weights/synthetic.js';

/**
 * Copies of the weights resident while a process decodes: its JS tensors, the serialised model
 * handed to onnxruntime, and the session's initialisers.
 */
export const DECODING_WEIGHT_COPIES = 3;

/** Refuses (CONFIG_INVALID) decoder weights whose resident copies exceed the default memory budget; `what` names the VAE. */
export function checkWeightBytes(specs: readonly ParamSpec[], what: string, budget = defaultMemoryBudget()): void {
  const bytes = weightBytes(specs);
  const resident = DECODING_WEIGHT_COPIES * bytes;
  if (resident <= budget) return;
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
