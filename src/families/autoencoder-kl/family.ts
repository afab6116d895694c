// The AutoencoderKL family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { klRuntime } from './runtime.js';
import { autoencoderKl } from './spec.js';

export const autoencoderKlFamily = { spec: autoencoderKl, runtime: klRuntime } satisfies Family;
