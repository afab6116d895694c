// The Flux.2 (the AutoencoderKL decoder and runtime, its own config) family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { klRuntime } from '../autoencoder-kl/runtime.js';
import { flux2 } from './spec.js';

export const flux2Family = { spec: flux2, runtime: klRuntime } satisfies Family;
